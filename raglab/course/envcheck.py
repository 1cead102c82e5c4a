"""The set-up checks of notebook 00: each returns a row (check, ok, detail) with no volatile text."""
from __future__ import annotations

import sys

from raglab.base import config
from raglab.base.config import profile
from raglab.infra.corpus import load_corpus
from raglab.infra.packaged_models import minilm_path, quiet_loading


def check_python() -> dict:
    """Python 3.10 or newer."""
    ok = sys.version_info >= (3, 10)
    return {"check": "Python 3.10+", "ok": ok, "detail": f"Python {sys.version_info.major}.{sys.version_info.minor}"}


def check_packages() -> dict:
    """The pinned libraries import, and torch is the CPU build pinned in requirements.txt."""
    import faiss  # lazy: FAISS loads its native library  # noqa: F401
    import sentence_transformers  # lazy: imports torch  # noqa: F401
    import torch  # lazy: torch takes seconds to import

    ok = torch.__version__.startswith("2.13.0")
    return {"check": "torch CPU build, sentence-transformers, faiss", "ok": ok,
            "detail": f"torch {torch.__version__.split('+')[0]}, CUDA available: {torch.cuda.is_available()}"}


def check_model() -> dict:
    """The packaged MiniLM loads with the network switched off and embeds a sentence."""

    quiet_loading()
    from sentence_transformers import SentenceTransformer  # lazy: imports torch

    model = SentenceTransformer(str(minilm_path()), device="cpu")
    vec = model.encode(["How do I open a file?"], normalize_embeddings=True)
    return {"check": "packaged all-MiniLM-L6-v2 loads offline", "ok": vec.shape == (1, 384),
            "detail": f"{vec.shape[1]} dimensions, max {model.max_seq_length} tokens"}


def check_corpus() -> dict:
    """The bundled Python docs are present, verified and extracted."""

    docs = load_corpus("python-docs")
    return {"check": "Python docs corpus (sha256 verified)", "ok": len(docs) > 0,
            "detail": f"{len(docs)} pages on the {profile()} profile"}


def check_llm(timeout: float = 3.0) -> dict:
    """An OpenAI-compatible endpoint, if ``LLM_BASE_URL`` is set (optional: offline, answers are extractive)."""
    base = config.get("LLM_BASE_URL")
    if not base:
        return {"check": "LLM endpoint (optional)", "ok": True,
                "detail": "not configured (LLM_BASE_URL unset): the offline extractive generator will answer"}
    import urllib.request

    try:
        with urllib.request.urlopen(base.rstrip("/") + "/models", timeout=timeout) as resp:
            return {"check": "LLM endpoint (optional)", "ok": resp.status == 200, "detail": f"{base} answered"}
    except OSError as exc:
        return {"check": "LLM endpoint (optional)", "ok": False, "detail": f"{base} unreachable: {exc}"}


def run_checks():
    """Every check as a DataFrame; a check that raises is a failed row with the error."""
    import pandas as pd  # lazy: only for tables

    rows = []
    for check in (check_python, check_packages, check_model, check_corpus, check_llm):
        try:
            rows.append(check())
        except Exception as exc:  # a broken set-up is reported, not raised
            rows.append({"check": check.__doc__.splitlines()[0], "ok": False, "detail": f"{type(exc).__name__}: {exc}"})
    return pd.DataFrame(rows).set_index("check")
