"""Rerankers: reorder the fused candidates and keep the best few; the top score is the evidence strength.

- ``CrossEncoderReranker``: a cross-encoder by model name (e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2``)
  for users with a network; it reads query and passage together.
- ``SentenceMaxReranker``: the offline default. It is **not** a cross-encoder: it embeds each
  candidate's sentences with the packaged MiniLM bi-encoder, takes the best-matching sentence's
  cosine to the query, and blends it with the candidate's fused (RRF) score. A chunk whose one
  sentence answers the question then beats a chunk that is loosely about the topic throughout.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import numpy as np

from raglab.records import Hit
from raglab.text import clean, sentences


class Reranker(Protocol):
    """Reorders candidates; returns new ``Hit`` records with the reranker's score and rank."""

    name: str

    def rerank(self, query: str, hits: list[Hit], texts: list[str]) -> list[Hit]: ...


def _reorder(hits: list[Hit], scores) -> list[Hit]:
    """Hits sorted by ``scores`` (ties keep the fused order), re-ranked from 1, previous rank kept."""
    order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
    return [replace(hits[i], score=float(scores[i]), rank=n, ranks={**hits[i].ranks, "fused": hits[i].rank})
            for n, i in enumerate(order, 1)]


class SentenceMaxReranker:
    """Best-sentence cosine (MiniLM bi-encoder) blended with the normalized fused score."""

    name = "minilm-sentence-max (bi-encoder, not a cross-encoder)"

    def __init__(self, embedder, alpha: float = 0.7):
        self.embedder, self.alpha = embedder, alpha

    def rerank(self, query: str, hits: list[Hit], texts: list[str]) -> list[Hit]:
        if not hits:
            return []
        q = self.embedder.encode_query(query)
        per_chunk = [sentences(t) or [clean(t)] for t in texts]
        flat = [s for group in per_chunk for s in group]
        vectors = self.embedder.encode(flat, progress=False)
        best, pos = [], 0
        for group in per_chunk:
            best.append(float((vectors[pos:pos + len(group)] @ q).max()))
            pos += len(group)
        fused = np.array([h.score for h in hits])
        fused = fused / fused.max() if fused.max() > 0 else fused
        return _reorder(hits, self.alpha * np.array(best) + (1 - self.alpha) * fused)


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` loaded by name or path."""

    def __init__(self, model: str, max_length: int = 512):
        from sentence_transformers import CrossEncoder  # lazy: imports torch

        self.name = f"cross-encoder {model}"
        self.model = CrossEncoder(model, max_length=max_length, device="cpu")

    def rerank(self, query: str, hits: list[Hit], texts: list[str]) -> list[Hit]:
        if not hits:
            return []
        scores = self.model.predict([(query, t) for t in texts], show_progress_bar=False)
        return _reorder(hits, np.asarray(scores, dtype=float).reshape(len(hits), -1)[:, -1])


def evidence_strength(hits: list[Hit]) -> float:
    """The top reranked score: how strongly the best candidate supports an answer (0 with no hits)."""
    return hits[0].score if hits else 0.0


def make_reranker(name: str | None, embedder) -> Reranker:
    """``None``/``sentence`` -> the offline default; anything else is a cross-encoder model name or path."""
    if name in (None, "", "sentence", "minilm-sentence-max"):
        return SentenceMaxReranker(embedder)
    return CrossEncoderReranker(name)
