"""Search modes over one ``Index``: dense, BM25, hybrid (RRF of both) and hybrid + rerank.

Every mode returns the same record, ``Hit``: chunk id, document, score, 1-based rank, and the
rank each component retriever gave it. The user's access groups are applied inside FAISS and
inside BM25 scoring, never afterwards.
"""
from __future__ import annotations

import time

from raglab.chunking import ChunkSettings
from raglab.fusion import RRF_K, rrf
from raglab.index import Index, IndexNotReady, build_index, load_index
from raglab.pg_index import load_pg_index, sync_pgvector
from raglab.records import Hit

MODES = ("dense", "bm25", "hybrid", "rerank")
CANDIDATES = 20


class Retriever:
    """Dense, BM25, hybrid and reranked search over one index, for one embedder."""

    def __init__(self, index: Index, embedder, reranker=None):
        self.index, self.embedder, self.reranker = index, embedder, reranker
        self.timings_ms: dict[str, float] = {}

    def _hits(self, pairs: list[tuple[int, float]], name: str) -> list[Hit]:
        chunks = self.index.chunks
        return [Hit(chunks[r].id, chunks[r].doc, s, n, {name: n}) for n, (r, s) in enumerate(pairs, 1)]

    def _timed(self, stage: str, fn, *args):
        t = time.perf_counter()
        out = fn(*args)
        self.timings_ms[stage] = round((time.perf_counter() - t) * 1000, 2)
        return out

    def dense(self, query: str, k: int = 10, user: tuple[str, ...] | None = None) -> list[Hit]:
        """Cosine similarity of MiniLM vectors (exact inner product on unit vectors)."""
        q = self._timed("embed_query", self.embedder.encode_query, query)
        pairs = self._timed("dense", self.index.dense_search, q, k, user)
        return self._hits(pairs, "dense")

    def bm25(self, query: str, k: int = 10, user: tuple[str, ...] | None = None) -> list[Hit]:
        """BM25 (k1=1.5, b=0.75, Lucene idf) over the same chunks."""
        pairs = self._timed("bm25", self.index.bm25_search, query, k, user)
        return self._hits(pairs, "bm25")

    def hybrid(self, query: str, k: int = 10, user: tuple[str, ...] | None = None,
               depth: int = CANDIDATES, weights: dict | None = None) -> list[Hit]:
        """Dense top-``depth`` and BM25 top-``depth`` fused by RRF (k=60), cut to ``k``."""
        dense, keyword = self.dense(query, depth, user), self.bm25(query, depth, user)
        ranks: dict[str, dict] = {}
        for h in dense + keyword:
            ranks.setdefault(h.id, {}).update(h.ranks)
        fused = rrf({"dense": [h.id for h in dense], "bm25": [h.id for h in keyword]}, RRF_K, weights)[:k]
        row = self.index.row_of
        return [Hit(i, self.index.chunks[row[i]].doc, s, n, ranks[i]) for n, (i, s) in enumerate(fused, 1)]

    def rerank(self, query: str, k: int = 5, user: tuple[str, ...] | None = None,
               depth: int = CANDIDATES) -> list[Hit]:
        """Hybrid top-``depth`` reordered by the reranker, cut to ``k``."""
        if self.reranker is None:
            raise ValueError("no reranker configured: pass reranker= to Retriever (see raglab.rerank)")
        candidates = self.hybrid(query, depth, user, depth)
        texts = [self.index.chunks[self.index.row_of[h.id]].text for h in candidates]
        return self._timed("rerank", self.reranker.rerank, query, candidates, texts)[:k]

    def search(self, query: str, mode: str = "hybrid", k: int = 10, user: tuple[str, ...] | None = None) -> list[Hit]:
        """Run one mode; an empty query or an unknown mode is a clear error.

        Parameters:
            query: the question as the user typed it.
            mode: ``dense``, ``bm25``, ``hybrid`` (RRF of both) or ``rerank`` (hybrid, then the reranker).
            k: how many hits to return, best first.
            user: the caller's access groups (``public`` is always included); rows the user may not
                see are never scored.
        """
        if not query or not query.strip():
            raise ValueError("empty query: ask something")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")
        self.timings_ms = {}
        return getattr(self, mode)(query, k=k, user=user)

    def text(self, hit: Hit) -> str:
        """The chunk text behind a hit."""
        return self.index.chunks[self.index.row_of[hit.id]].text


def get_index(corpus: str = "python-docs", profile: str | None = None, settings: ChunkSettings = ChunkSettings(),
              embedder=None, kind: str = "flat", store: str = "faiss", build: bool = True):
    """The index to search, on either backend: the one function notebooks, the CLI and the app call.

    (``raglab.index.build_index`` and ``load_index`` are its FAISS building blocks: build always,
    or load and refuse anything that does not match.)

    Parameters:
        corpus: a corpus name (``python-docs``, ``helpcenter``, ``python-docs-3.X``) or a folder path.
        profile: ``small`` or ``full``; None reads ``RAGLAB_PROFILE``.
        settings: the chunking (strategy, size, overlap, contextual prefix).
        embedder: the ``Embedder`` (default: the packaged MiniLM with its cache).
        kind: ``flat`` (exact) or ``hnsw``.
        store: ``faiss`` (files in the working folder) or ``pgvector`` (PostgreSQL).
        build: when True a missing or stale index is built (FAISS) or synced (pgvector);
            when False it is an ``IndexNotReady`` error naming the command that builds it.
    """
    if store not in ("faiss", "pgvector"):
        raise ValueError(f"unknown store {store!r}: choose faiss or pgvector")
    model_id = embedder.model_id if embedder else None
    precision = getattr(embedder, "precision", "float32") if embedder else None   # as build_index records it
    if store == "faiss":
        if not build:
            return load_index(corpus, profile, settings, model_id, kind, precision=precision)
        try:
            return load_index(corpus, profile, settings, model_id, kind, precision=precision)
        except IndexNotReady:
            return build_index(corpus, profile, settings, embedder, kind)
    if build:
        return sync_pgvector(corpus, profile, settings, embedder, hnsw=kind == "hnsw")[0]
    return load_pg_index(corpus, profile, settings, model_id, hnsw=kind == "hnsw", precision=precision)
