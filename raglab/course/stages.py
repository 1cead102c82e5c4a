"""The course wraps the book: a learner's function plugged into raglab's pipeline in place of one step.

The book's ``Retriever`` and ``Assistant`` are the textbook stages and know nothing of learners. A notebook
takes the function ``raglab.course.exercises.stage`` chose (the learner's, or raglab's stand-in until the
learner's works) and builds one of these instead; each hands the book one step and leaves it the rest:

- ``LearnerRetriever(index, embedder, bm25_scores=...)``: BM25 scoring (notebook 02);
- ``LearnerRetriever(index, embedder, reranker, fuse=...)``: the fusion of the dense and BM25 lists (notebook 03);
- ``LearnerAssistant(retriever, generator, threshold, citation_check=...)``: which cited numbers are forged (notebook 04).

Handed raglab's own function, each gives the book's ranks and answers (tests/course/test_stages.py); handed a
buggy one, the bug shows in the results, and output that cannot be laid back onto the index is a clear error.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from raglab.book.assistant import Assistant
from raglab.book.bm25 import tokenize, top_k
from raglab.book.citations import CitationCheck, check_citations
from raglab.book.prompt import Source
from raglab.book.retrieve import Levers, Retriever, rrf_fuse


class LearnerRetriever(Retriever):
    """A ``Retriever`` handed the learner's BM25 scoring, fusion, or both, as its ``keyword`` and ``fuse`` steps.

    ``bm25_scores(query_tokens, docs_tokens)`` receives the query's tokens and every chunk's tokens
    (``raglab.book.bm25.tokenize`` of its indexed text, in index order) and returns one score per chunk, in
    that order; chunks the user may not read are never ranked, whatever they score (``LearnerBM25``).

    ``fuse(lists)`` receives the ranked chunk ids by retriever name, best first (``{"dense": [...],
    "bm25": [...]}``), and returns ``(id, score)`` pairs, best first, of ids from those lists (``learner_fusion``).

    Neither runs with the title lever (``Levers()`` only) or a rescoring step, nor does a learner's fusion take weights.

    >>> fuse = lambda lists: [("b", 2), ("a", 1)]
    >>> LearnerRetriever(None, None, fuse=fuse).fuse({"dense": ["a", "b"], "bm25": ["b"]})
    [('b', 2.0), ('a', 1.0)]
    >>> LearnerRetriever(None, None, levers=Levers(title_weight=1.0), fuse=fuse)
    Traceback (most recent call last):
    ValueError: a learner's BM25 or fusion runs without the levers: pass levers=Levers()
    """

    def __init__(self, index, embedder, reranker=None, levers: Levers = Levers(), *,
                 bm25_scores: Callable[[list[str], list[list[str]]], list] | None = None,
                 fuse: Callable[[dict[str, list[str]]], list] | None = None):
        if (bm25_scores or fuse) and levers.title_weight:
            raise ValueError("a learner's BM25 or fusion runs without the levers: pass levers=Levers()")
        super().__init__(index, embedder, reranker, levers,
                         keyword=LearnerBM25(index, bm25_scores) if bm25_scores else None,
                         fuse=learner_fusion(fuse) if fuse else rrf_fuse)


class LearnerBM25:
    """The keyword search of a learner's BM25 scoring: ``(query, k, user)`` -> the top ``k`` ``(row, score)``
    pairs among the rows the user may read."""

    def __init__(self, index, bm25_scores: Callable[[list[str], list[list[str]]], list]):
        self.index, self.bm25_scores = index, bm25_scores
        self.__wrapped__ = bm25_scores           # the learner's function, which the answer cache's key hashes
        self._tokens: list[list[str]] | None = None

    def __call__(self, query: str, k: int, user) -> list[tuple[int, float]]:
        if self._tokens is None:
            self._tokens = [tokenize(c.indexed_text) for c in self.index.chunks]
        scores = np.asarray(self.bm25_scores(tokenize(query), self._tokens), dtype=float)
        if scores.shape != (len(self._tokens),):
            raise ValueError(f"the BM25 function returned {scores.shape[0] if scores.ndim else 'no'} scores "
                             f"for {len(self._tokens)} chunks (one score per chunk, in order)")
        return top_k(np.where(self.index.allowed(user), scores, -np.inf), k)


def learner_fusion(fuse: Callable[[dict[str, list[str]]], list]) -> Callable:
    """A retriever's ``fuse`` step from a learner's fusion: no weights, and only ids the lists hold."""
    @functools.wraps(fuse)
    def fused(lists: dict[str, list[str]], weights: dict | None = None) -> list[tuple[str, float]]:
        if weights:
            raise ValueError("a learner's fusion takes no weights")
        pairs = [(i, float(s)) for i, s in fuse(lists)]
        held = {i for ids in lists.values() for i in ids}
        stray = [i for i, _ in pairs if i not in held]
        if stray:
            raise ValueError(f"the fusion returned {stray[0]!r}, which neither ranked list holds")
        return pairs
    return fused


def learner_citations(text: str, sources: list[Source], citation_check: Callable[[str, int], list]) -> CitationCheck:
    """The verdict on an answer's citations with the learner's check deciding the numbered ones.

    ``citation_check(text, n_sources)`` returns the numbers it finds forged: those are invalid. A number it
    lets through that names no source is dropped from the valid ones but stays in the text, as a check with
    that bug would leave it. Citations by chunk id follow the book's rule (``raglab.book.citations``).

    >>> from raglab.book.chunking import Chunk
    >>> sources = [Source(n, Chunk(f"d#{n}", "d", (), 0, 1, "t", "t", ("public",), "words")) for n in (1, 2)]
    >>> check = learner_citations("Yes [1]. No [3]. Never [9].", sources, lambda text, n: [9])
    >>> [s.n for s in check.valid], check.invalid, check.reason
    ([1], ['9'], 'invalid-citation')
    """
    forged = {str(n) for n in citation_check(text, len(sources))}
    return check_citations(text, sources, lambda token, source: token in forged if token.isdigit() else source is None)


class LearnerAssistant(Assistant):
    """An ``Assistant`` whose citation check is the learner's; every other argument is the book's.

    ``citation_check(answer, n_sources)`` receives the answer's text and how many sources the model was
    given (numbered 1 to ``n_sources``) and returns the cited numbers it finds forged (ints or strings):
    a cited number it returns is an invalid citation, and the answer is refused (``learner_citations``).
    """

    def __init__(self, *args, citation_check: Callable[[str, int], list], **kwargs):
        @functools.wraps(citation_check)
        def check(text: str, sources: list[Source]) -> CitationCheck:
            return learner_citations(text, sources, citation_check)
        super().__init__(*args, check=check, **kwargs)
