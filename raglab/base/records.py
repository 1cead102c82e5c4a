"""Records shared by the stages: ``Hit``, one retrieved chunk, and ``Ranked``, the hits of one search with the
evidence it saw, so that fusion, reranking, generation and evaluation can pass results around without importing
an index."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk. ``ranks`` holds each component's 1-based rank (absent: not retrieved by it)."""

    id: str
    doc: str
    score: float
    rank: int
    ranks: dict = field(default_factory=dict, compare=False)

    def to_dict(self, text: str | None = None) -> dict:
        """The JSON shape of ``raglab search --json``."""
        d = {"id": self.id, "doc": self.doc, "score": round(self.score, 6), "rank": self.rank, "ranks": self.ranks}
        if text is not None:
            d["text"] = text
        return d


class Ranked(list):
    """The hits of one search, best first (a list of ``Hit``), carrying what the search saw on the way:
    ``top_dense``, the best dense cosine among the rows the user may read (None when no dense search ran), which
    an assistant without a reranker refuses on; and ``timings_ms``, each stage's time in milliseconds.

    >>> hits = Ranked([Hit("a#1", "a", 0.03, 1)], top_dense=0.71, timings_ms={"dense": 1.5})
    >>> [h.id for h in hits], hits.top_dense, hits.timings_ms
    (['a#1'], 0.71, {'dense': 1.5})
    """

    def __init__(self, hits=(), top_dense: float | None = None, timings_ms: dict[str, float] | None = None):
        super().__init__(hits)
        self.top_dense = top_dense
        self.timings_ms = dict(timings_ms or {})
