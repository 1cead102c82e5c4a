"""The course's own design, committed as code and never tuned: the baseline every headline is compared with.

As the course text writes it (milestones 1 to 3):

- ``chunk_text(doc_id, text, max_words=150, overlap=30)``: word windows (raglab's ``words`` 150/30
  chunks hold exactly these texts);
- ``SentenceTransformer(all-MiniLM-L6-v2).encode(..., normalize_embeddings=True)`` in float32, exact
  inner product in FAISS, ``dense_search(query, k=20)``;
- its plain BM25: tokens ``[a-z0-9_]+`` of the lowercased text (a dotted name is its parts),
  k1 = 1.5, b = 0.75, idf ``log(1 + (N - n + 0.5) / (n + 0.5))``, ``bm25.search(query, k=20)``;
- ``rrf([dense, bm25], k=60)``; no reranker, no refusal rule.

Nothing here reads a golden set: there is nothing to tune.
"""
from __future__ import annotations

import re

from raglab.book.bm25 import BM25
from raglab.book.chunking import ChunkSettings
from raglab.infra.embedder import Embedder
from raglab.book.fusion import RRF_K, rrf
from raglab.base.records import Hit, Ranked
from raglab.infra.assemble import get_index

COURSE_TOKEN = re.compile(r"[a-z0-9_]+")
DEPTH = 20            # the course's dense_search and bm25.search return 20 each
CHUNKING = ChunkSettings("words", 150, 30)


def course_tokenize(text: str) -> list[str]:
    """The course's tokenizer: runs of ``[a-z0-9_]`` in the lowercased text.

    >>> course_tokenize("Call os.path.join() in __init__")
    ['call', 'os', 'path', 'join', 'in', '__init__']
    """
    return COURSE_TOKEN.findall(text.lower())


class CourseBaseline:
    """The course's hybrid retrieval over one corpus, with the ``search`` interface of ``Retriever``
    (so ``raglab.evaluation.scoreboard.evaluate`` scores it like any other)."""

    name = "course baseline (words 150/30, float32 MiniLM, plain BM25, RRF k=60 over 20 + 20, no reranker)"

    def __init__(self, corpus: str = "python-docs", profile: str | None = None, build: bool = True):
        self.embedder = Embedder(precision="float32")
        self.index = get_index(corpus, profile, CHUNKING, self.embedder, build=build)
        self.bm25 = BM25([c.text for c in self.index.chunks], tokenizer=course_tokenize)
        self.timings_ms: dict[str, float] = {}

    def dense(self, query: str, k: int = DEPTH) -> list[int]:
        """Rows of the ``k`` chunks nearest the query (cosine of unit float32 vectors)."""
        return [row for row, _ in self.index.dense.search(self.embedder.encode_query(query), k)]

    def keyword(self, query: str, k: int = DEPTH) -> list[int]:
        """Rows of the ``k`` best BM25 chunks with a positive score."""
        return [row for row, _ in self.bm25.search(query, k)]

    def search(self, query: str, mode: str = "hybrid", k: int = 10, user=None) -> Ranked:
        """``hybrid`` (the course's), ``dense`` or ``bm25``; the course has no access groups (``user`` must be None)."""
        if user:
            raise ValueError("the course baseline has no access control: it searches public corpora only")
        if mode == "dense":
            rows = self.dense(query, k)
        elif mode == "bm25":
            rows = self.keyword(query, k)
        elif mode == "hybrid":
            rows = [r for r, _ in rrf({"dense": self.dense(query), "bm25": self.keyword(query)}, RRF_K)][:k]
        else:
            raise ValueError(f"the course baseline has no {mode!r} mode: dense, bm25 or hybrid")
        chunks = self.index.chunks
        return Ranked(Hit(chunks[r].id, chunks[r].doc, 0.0, n, {mode: n}) for n, r in enumerate(rows, 1))
