"""Search modes over one ``Index``: dense, BM25, hybrid (RRF of both) and hybrid + rerank.

Every mode returns the same record, ``Hit``: chunk id, document, score, 1-based rank, and the
rank each component retriever gave it. The user's access groups are applied inside FAISS and
inside BM25 scoring, never afterwards. Taught in notebooks 02 (dense, BM25), 03 (hybrid, rerank) and 05 (access).

One optional lever (``Levers``; each corpus's default, chosen on a dev split, is in ``raglab.infra.corpora``):
BM25 can add the BM25 score of the chunk's page title ("most fields"). A ``rescore`` step can reorder hybrid's
fused list before it is cut (the Python docs demote their release notes: ``raglab.infra.release_notes``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from raglab.book.bm25 import BM25, top_k
from raglab.base.records import Hit, Ranked
from raglab.book.fusion import RRF_K, rrf

MODES = ("dense", "bm25", "hybrid", "rerank")
CANDIDATES = 20      # hybrid fuses the top 20 of each retriever (more when more hits are asked for)
K = 10               # hits a search returns unless told otherwise, in every mode


@dataclass(frozen=True)
class Levers:
    """What a retriever does beyond plain BM25 and RRF (the default, ``Levers()``, does nothing).

    - ``title_weight``: BM25 = BM25(chunk text) + ``title_weight`` x BM25(the chunk's page title).
    """

    title_weight: float = 0.0


def candidate_depth(k: int, depth: int | None) -> int:
    """How deep hybrid reads each list: ``depth`` when given, else ``CANDIDATES`` or ``k`` if that is more.

    >>> candidate_depth(5, None), candidate_depth(60, None), candidate_depth(10, 6)
    (20, 60, 6)
    """
    return max(CANDIDATES, k) if depth is None else depth


def rrf_fuse(lists: dict[str, list[str]], weights: dict | None = None) -> list[tuple[str, float]]:
    """The book's fusion: the ranked id lists (by retriever name) fused by RRF, k=60, into ``(id, score)`` pairs."""
    return rrf(lists, RRF_K, weights)


class Retriever:
    """Dense, BM25, hybrid and reranked search over one index (any ``raglab.book.memory_index.SearchIndex``), for
    one embedder. Each search returns ``Ranked`` hits, which carry the best dense cosine the search saw (the
    evidence of an assistant without a reranker) and each stage's time (``Ranked.timings_ms``).

    The steps are arguments: ``reranker`` (hybrid's top candidates reordered), ``keyword`` (the keyword search,
    ``(query, k, user) -> (row, score)`` pairs; default the index's BM25) and ``fuse`` (the ranked id lists by
    retriever name, and weights, to ``(id, score)`` pairs; default ``rrf_fuse``) and ``rescore`` (the query, the
    fused pairs and a chunk id's page to the pairs reordered; default none). The course passes a learner's.
    """

    def __init__(self, index, embedder, reranker=None, levers: Levers = Levers(), *,
                 keyword: Callable | None = None, fuse: Callable = rrf_fuse, rescore: Callable | None = None):
        self.index, self.embedder, self.reranker, self.levers = index, embedder, reranker, levers
        self.keyword, self.fuse, self.rescore = keyword, fuse, rescore
        self._titles: BM25 | None = None

    def warm(self) -> None:
        """Build now what the first search would otherwise build: the page-title BM25 (when the lever
        is on) and the public access mask (the embedding model is warmed by ``Embedder.warm``)."""
        if self.levers.title_weight:
            self.titles  # noqa: B018 -- the property builds it
        self.index.allowed(None)

    @property
    def titles(self) -> BM25:
        """BM25 over each chunk's page title (the first entry of its heading path), built on first use."""
        if self._titles is None:
            self._titles = BM25([c.heading[0] if c.heading else "" for c in self.index.chunks])
        return self._titles

    def _hits(self, pairs: list[tuple[int, float]], name: str) -> list[Hit]:
        chunks = self.index.chunks
        return [Hit(chunks[r].id, chunks[r].doc, s, n, {name: n}) for n, (r, s) in enumerate(pairs, 1)]

    def dense(self, query: str, k: int = K, user: tuple[str, ...] | None = None) -> Ranked:
        """Cosine similarity of MiniLM vectors (exact inner product on unit vectors)."""
        ms: dict[str, float] = {}
        q = _timed(ms, "embed_query", self.embedder.encode_query, query)
        pairs = _timed(ms, "dense", self.index.dense_search, q, k, user)
        return Ranked(self._hits(pairs, "dense"), float(pairs[0][1]) if pairs else 0.0, ms)

    def bm25(self, query: str, k: int = K, user: tuple[str, ...] | None = None) -> Ranked:
        """BM25 (k1=1.5, b=0.75, Lucene idf) over the same chunks, plus the page-title field when
        ``levers.title_weight`` is set; or the ``keyword`` search the retriever was handed."""
        search = self.keyword or (self._fields_search if self.levers.title_weight else self.index.bm25_search)
        ms: dict[str, float] = {}
        return Ranked(self._hits(_timed(ms, "bm25", search, query, k, user), "bm25"), timings_ms=ms)

    def _fields_search(self, query: str, k: int, user) -> list[tuple[int, float]]:
        allowed = self.index.allowed(user)
        # both fields score -inf where the user may not read: the sum stays -inf there
        return top_k(self.index.bm25.scores(query, allowed) + self.levers.title_weight * self.titles.scores(query, allowed), k)

    def hybrid(self, query: str, k: int = K, user: tuple[str, ...] | None = None,
               depth: int | None = None, weights: dict | None = None) -> Ranked:
        """Dense top-``depth`` and BM25 top-``depth`` fused by RRF (k=60), reordered by ``rescore`` when
        given, cut to ``k``. ``depth`` is ``CANDIDATES`` (20), or ``k`` when more hits are asked for, so
        ``k`` hits come back when the user may read as many chunks; a ``depth`` given below ``k`` caps them."""
        depth = candidate_depth(k, depth)
        dense, keyword = self.dense(query, depth, user), self.bm25(query, depth, user)
        ranks: dict[str, dict] = {}
        for h in dense + keyword:
            ranks.setdefault(h.id, {}).update(h.ranks)
        lists = {"dense": [h.id for h in dense], "bm25": [h.id for h in keyword]}
        fused = self.fuse(lists, weights)
        row = self.index.row_of
        if self.rescore is not None:
            fused = self.rescore(query, fused, lambda i: self.index.chunks[row[i]].doc)
        fused = fused[:k]
        return Ranked([Hit(i, self.index.chunks[row[i]].doc, s, n, ranks[i]) for n, (i, s) in enumerate(fused, 1)],
                      dense.top_dense, dense.timings_ms | keyword.timings_ms)

    def rerank(self, query: str, k: int = K, user: tuple[str, ...] | None = None,
               depth: int | None = None) -> Ranked:
        """Hybrid top-``depth`` reordered by the reranker, cut to ``k``; ``depth`` as in ``hybrid`` (a ``depth``
        given below ``k``, such as the fused top 6 reranked, caps what comes back)."""
        if self.reranker is None:
            raise ValueError("no reranker configured: pass reranker= to Retriever (see raglab.book.rerank)")
        depth = candidate_depth(k, depth)
        candidates = self.hybrid(query, depth, user, depth)
        field = getattr(self.reranker, "reads", "text")     # a reranker may read the chunk with its heading prefix
        texts = [getattr(self.index.chunk(h.id), field) for h in candidates]
        ms = dict(candidates.timings_ms)
        return Ranked(_timed(ms, "rerank", self.reranker.rerank, query, candidates, texts)[:k], candidates.top_dense, ms)

    def search(self, query: str, mode: str = "hybrid", k: int = K, user: tuple[str, ...] | None = None) -> Ranked:
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
        run = {"dense": self.dense, "bm25": self.bm25, "hybrid": self.hybrid, "rerank": self.rerank}[mode]
        if self.index.parents:        # small chunks are searched, their parents handed on; hybrid fuses the
            fused_from = {"depth": CANDIDATES} if mode in ("hybrid", "rerank") else {}    # usual top 20 of each
            found = run(query, k=k * PARENT_REACH, user=user, **fused_from)
            return Ranked(to_parents(found, self.index, k), found.top_dense, found.timings_ms)
        return run(query, k=k, user=user)

    def text(self, hit: Hit) -> str:
        """The chunk text behind a hit."""
        return self.index.chunk(hit.id).text


def _timed(ms: dict[str, float], stage: str, fn, *args):
    """``fn(*args)``, its time in milliseconds written to ``ms[stage]``."""
    t = time.perf_counter()
    out = fn(*args)
    ms[stage] = round((time.perf_counter() - t) * 1000, 2)
    return out


def pages(hits: list[Hit]) -> list[Hit]:
    """Which pages were found: each page once, at its best chunk's rank and score, renumbered from 1.

    >>> hits = [Hit("a.md#2", "a.md", 0.9, 1), Hit("b.md#1", "b.md", 0.8, 2), Hit("a.md#5", "a.md", 0.7, 3)]
    >>> [(h.doc, h.rank, h.score) for h in pages(hits)]
    [('a.md', 1, 0.9), ('b.md', 2, 0.8)]
    """
    best: dict[str, Hit] = {}
    for h in sorted(hits, key=lambda h: h.rank):
        if h.doc not in best:
            best[h.doc] = Hit(h.id, h.doc, h.score, len(best) + 1, {**h.ranks, "chunk": h.rank})
    return list(best.values())


# small chunks searched per parent handed on: k parents are the distinct parents of the top k x 4 small chunks
PARENT_REACH = 4


def to_parents(hits: list[Hit], index, k: int) -> list[Hit]:
    """Small-to-big: each hit replaced by its parent chunk, a parent kept at its best child's rank and
    score (later children of the same parent dropped), cut to ``k``.

    >>> from raglab.book.chunking import Chunk
    >>> kids = [Chunk(f"d#a/{i}", "d", (), 0, 1, "x", "x", ("public",), "parent", "d#a") for i in (1, 2)]
    >>> kids.append(Chunk("d#b/1", "d", (), 2, 3, "y", "y", ("public",), "parent", "d#b"))
    >>> class Ix: chunks, row_of = kids, {c.id: i for i, c in enumerate(kids)}
    >>> [(h.id, h.rank) for h in to_parents([Hit("d#a/2", "d", .9, 1), Hit("d#b/1", "d", .8, 2), Hit("d#a/1", "d", .7, 3)], Ix, 5)]
    [('d#a', 1), ('d#b', 2)]
    """
    seen: dict[str, Hit] = {}
    for h in hits:
        parent = index.chunks[index.row_of[h.id]].parent
        if parent not in seen:
            seen[parent] = Hit(parent, h.doc, h.score, len(seen) + 1, {**h.ranks, "child": h.id})
    return list(seen.values())[:k]
