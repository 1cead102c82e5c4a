"""Records shared by the stages: ``Hit``, one retrieved chunk, so that fusion, reranking, generation
and evaluation can pass results around without importing an index."""
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
