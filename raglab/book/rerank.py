"""Rerankers: reorder the fused candidates and keep the best few; the top score is the evidence strength.

- ``CrossEncoderReranker``: a cross-encoder it is handed (e.g. ``cross-encoder/ms-marco-MiniLM-L-6-v2``, for
  users with a network, loaded by ``raglab.infra.rerankers``); it reads query and passage together, as BERT
  reads them in Nogueira and Cho, "Passage Re-ranking with BERT" (2019, arXiv:1901.04085).
- ``SentenceMaxReranker``: the offline default. It is **not** a cross-encoder: it embeds each
  candidate's sentences with the packaged MiniLM bi-encoder, takes the best-matching sentence's
  cosine to the query, and blends it with the candidate's fused (RRF) score. A chunk whose one
  sentence answers the question then beats a chunk that is loosely about the topic throughout. Scoring a
  document by its best piece is the MaxP of Dai and Callan, "Deeper Text Understanding for IR with Contextual
  Neural Language Modeling" (SIGIR 2019), here with sentences and bi-encoder cosines.

Without a reranker the evidence strength is the top dense cosine (``raglab.book.assistant``). Loading a model and picking a reranker by name (``make_reranker``) are ``raglab.infra.rerankers``'s. Taught in
notebook 03.
"""
from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Protocol

import numpy as np

from raglab.base.records import Hit
from raglab.base.text import clean, sentences


class Reranker(Protocol):
    """Reorders candidates; returns new ``Hit`` records with the reranker's score and rank."""

    name: str

    def rerank(self, query: str, hits: list[Hit], texts: list[str]) -> list[Hit]: ...


def _reorder(hits: list[Hit], scores) -> list[Hit]:
    """Hits sorted by ``scores`` (ties keep the fused order), re-ranked from 1, previous rank kept."""
    order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
    return [replace(hits[i], score=float(scores[i]), rank=n, ranks={**hits[i].ranks, "fused": hits[i].rank})
            for n, i in enumerate(order, 1)]


def best_sentence(query_vector, sentence_vectors) -> list[float]:
    """Each candidate's score: the largest cosine between the query and one of its sentences (unit
    vectors; ``sentence_vectors`` holds one matrix per candidate, a row a sentence).

    >>> best_sentence(np.array([1.0, 0.0]), [np.array([[0.6, 0.8], [0.0, 1.0]]), np.array([[1.0, 0.0]])])
    [0.6, 1.0]
    """
    return [float((v @ query_vector).max()) for v in sentence_vectors]


def rerank_by_best_sentence(question_vector, candidates) -> list[tuple[str, float]]:
    """``(chunk id, its sentences' vectors)`` pairs in fused order, scored by the best sentence's cosine with the question
    (unit vectors taken here), best first, ties in fused order: ``SentenceMaxReranker``'s order with ``alpha=1``."""
    q = np.asarray(question_vector, dtype=float) / np.linalg.norm(question_vector)
    best = best_sentence(q, [v / np.linalg.norm(v, axis=1, keepdims=True)
                             for v in (np.asarray(vectors, dtype=float) for _, vectors in candidates)])
    return [(candidates[i][0], best[i]) for i in sorted(range(len(candidates)), key=lambda i: (-best[i], i))]


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
        best = best_sentence(q, np.split(vectors, np.cumsum([len(group) for group in per_chunk])[:-1]))
        fused = np.array([h.score for h in hits])
        fused = fused / fused.max() if fused.max() > 0 else fused
        return _reorder(hits, self.alpha * np.array(best) + (1 - self.alpha) * fused)


class CrossEncoderReranker:
    """A loaded cross-encoder (a sentence-transformers ``CrossEncoder``: ``model.predict(pairs)``) scores each
    ``(query, passage)`` pair; ``reads`` is the chunk field it is given (``text``, or ``indexed_text`` with the
    heading prefix, as a model trained here was); with ``precision="bfloat16"`` it predicts under autocast."""

    def __init__(self, model, name: str = "cross-encoder", reads: str = "text", precision: str = "float32"):
        self.model, self.name, self.reads, self.precision = model, name, reads, precision

    def rerank(self, query: str, hits: list[Hit], texts: list[str]) -> list[Hit]:
        if not hits:
            return []
        import torch  # lazy: loaded with the model already

        with torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bfloat16" else contextlib.nullcontext():
            scores = self.model.predict([(query, t) for t in texts], show_progress_bar=False)
        return _reorder(hits, np.asarray(scores, dtype=float).reshape(len(hits), -1)[:, -1])


def evidence_strength(hits: list[Hit]) -> float:
    """The top reranked score: how strongly the best candidate supports an answer (0 with no hits)."""
    return hits[0].score if hits else 0.0
