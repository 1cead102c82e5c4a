"""Reciprocal rank fusion: combine ranked lists by rank alone, so scores on different scales never meet.

    RRF(d) = sum over lists r of  w_r / (k + rank_r(d))      (Cormack, Clarke & Buettcher, SIGIR 2009)

with 1-based ranks and k = 60. A document missing from a list gets nothing from it. Taught in notebook 03.
"""
from __future__ import annotations

from typing import Mapping, Sequence

RRF_K = 60


def rrf(rankings: Mapping[str, Sequence[str]], k: int = RRF_K,
        weights: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first) into ``(id, score)`` pairs, best first.

    Ties keep the order in which ids were first seen. The course's example:

    >>> [(d, round(s, 6)) for d, s in rrf({"dense": ["A", "B", "C"], "bm25": ["C", "A", "D"]})]
    [('A', 0.032522), ('C', 0.032266), ('B', 0.016129), ('D', 0.015873)]
    """
    scores: dict[str, float] = {}
    for name, ids in rankings.items():
        w = 1.0 if weights is None else float(weights.get(name, 0.0))
        for rank, doc_id in enumerate(ids, 1):
            scores[doc_id] = scores.get(doc_id, 0.0) + w / (k + rank)
    order = {doc_id: i for i, doc_id in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
