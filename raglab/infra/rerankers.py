"""The rerankers ready to use: a cross-encoder loaded by name or path (one trained here too), and the
reranker picked by name (``make_reranker``); the rerankers themselves are the book's ``raglab.book.rerank``."""
from __future__ import annotations

from raglab.book.rerank import CrossEncoderReranker, Reranker, SentenceMaxReranker
from raglab.infra.packaged_models import TRAINED_PREFIX, model_location
from raglab.infra.precision import resolve_precision
from raglab.infra.model_store import cached_model


def cross_encoder_reranker(model: str, max_length: int = 512, reads: str = "text",
                           precision: str | None = None) -> CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` loaded by name or path (on the CPU, under bfloat16 autocast only
    when ``precision`` or ``RAGLAB_EMBED_PRECISION`` says bfloat16), as the book's ``CrossEncoderReranker``."""
    from sentence_transformers import CrossEncoder  # lazy: imports torch

    precision = resolve_precision(precision)
    loaded = CrossEncoder(model_location(model), max_length=max_length, device="cpu")
    return CrossEncoderReranker(loaded, f"cross-encoder {model}", reads, precision)


def make_reranker(name: str | None, embedder) -> Reranker:
    """``None``/``sentence`` -> the offline default; ``trained/cross-<hash>`` -> a cross-encoder trained
    here (``raglab train``); anything else is a cross-encoder model name or path."""
    if name in (None, "", "sentence", "minilm-sentence-max"):
        return SentenceMaxReranker(embedder)
    if name.startswith(TRAINED_PREFIX):     # reads what it was trained on: the prefixed chunk, at its training length
        trained = cached_model(name.removeprefix(TRAINED_PREFIX))
        length = trained.record["settings"]["cross_max_length"] if trained else 512   # a missing one: model_location says so
        return cross_encoder_reranker(name, length, reads="indexed_text")
    return cross_encoder_reranker(name)
