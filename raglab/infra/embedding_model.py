"""Loading the embedding model: the packaged MiniLM's sizes from its config files, and a sentence-transformers
model from disk (offline). The packaged model's forward pass in plain torch is ``raglab.infra.minilm``."""
from __future__ import annotations

import json

from raglab.infra.packaged_models import MINILM_MAX_TOKENS, minilm_path, model_location, quiet_loading


def packaged_dims() -> tuple[int, int]:
    """``(dim, max_tokens)`` of the packaged MiniLM, read from its config files (no model load)."""
    path = minilm_path()
    dim = json.loads((path / "1_Pooling" / "config.json").read_text())["word_embedding_dimension"]
    max_tokens = json.loads((path / "sentence_bert_config.json").read_text()).get("max_seq_length", MINILM_MAX_TOKENS)
    return int(dim), int(max_tokens)


def load_sentence_transformer(model_id: str | None, device: str):
    """Import sentence-transformers and load ``model_id`` (``None``: the packaged MiniLM) on ``device``."""

    quiet_loading()
    from sentence_transformers import SentenceTransformer  # lazy: imports torch

    name = str(minilm_path()) if model_id is None else model_location(model_id)
    return SentenceTransformer(name, device=device)
