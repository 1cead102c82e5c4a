"""An index in memory: the chunks, a matrix of their unit vectors, BM25 over the same chunks, and who may read
each chunk. It is the whole of what the retriever searches, built from a folder of pages in a few lines.

    index = build_memory_index(load_folder("my-pages"), ChunkSettings("headings"), embed)

``embed`` is any function of a list of texts returning one vector a text (the notebooks pass MiniLM's). Dense
search is ``raglab.book.embed.exact_search`` over the rows the user may read, BM25 scores only those rows,
so the access rule is applied inside each query, never to the results. The indexes that persist (FAISS in
``raglab.infra.index``, PostgreSQL + pgvector in ``raglab.infra.pg_index``) answer the same calls
(``SearchIndex``); the retriever and the assistant work on any of them. Taught in notebooks 02 and 05.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from raglab.book.bm25 import BM25
from raglab.book.chunking import Chunk, ChunkSettings, chunk_corpus
from raglab.book.documents import PUBLIC, Document
from raglab.book.embed import exact_search, to_unit_length


class SearchIndex(Protocol):
    """What the retriever and the assistant read of an index: row ``i`` of every part is ``chunks[i]``."""

    chunks: list[Chunk]
    bm25: BM25
    parents: list[Chunk]
    row_of: dict[str, int]

    def chunk(self, chunk_id: str) -> Chunk: ...
    def passages(self) -> list[Chunk]: ...
    def allowed(self, user: tuple[str, ...] | None) -> np.ndarray: ...
    def dense_search(self, query_vec: np.ndarray, k: int, user: tuple[str, ...] | None) -> list[tuple[int, float]]: ...
    def bm25_search(self, query: str, k: int, user: tuple[str, ...] | None) -> list[tuple[int, float]]: ...


def access_mask(chunks: list[Chunk], user: tuple[str, ...] | None, memo: dict | None = None) -> np.ndarray:
    """A boolean row mask: True where a chunk shares a group with the user (public always included).

    >>> from types import SimpleNamespace as Row
    >>> access_mask([Row(access=("public",)), Row(access=("premium",)), Row(access=("staff",))], ("premium",))
    array([ True,  True, False])
    """
    groups = frozenset(user or ()) | {PUBLIC}
    if memo is not None and groups in memo:
        return memo[groups]
    mask = np.array([bool(groups.intersection(c.access)) for c in chunks], dtype=bool)
    if memo is not None:
        memo[groups] = mask
    return mask


def rule_mask(chunks: list[Chunk], user: tuple[str, ...] | None, rule: Callable, memo: dict | None = None) -> np.ndarray:
    """The row mask of the rows ``rule([each chunk's groups], the user's groups)`` returns (a learner's rule in
    place of ``access_mask``); a row that is not a row number is a clear error."""
    groups = frozenset(user or ())
    if memo is not None and groups in memo:
        return memo[groups]
    rows = list(rule([c.access for c in chunks], set(groups)))
    bad = [r for r in rows if isinstance(r, (bool, np.bool_))         # a mask of True/False is not row numbers
           or not (isinstance(r, (int, np.integer)) and 0 <= r < len(chunks))]
    if bad:
        raise ValueError(f"the access rule returned {bad[0]!r}, not a row number from 0 to {len(chunks) - 1}")
    mask = np.zeros(len(chunks), dtype=bool)
    mask[rows] = True
    if memo is not None:
        memo[groups] = mask
    return mask


@dataclass
class MemoryIndex:
    """Chunks, their unit vectors (one row a chunk) and BM25 over the same chunks, searched in memory."""

    chunks: list[Chunk]
    vectors: np.ndarray
    bm25: BM25
    parents: list[Chunk] = field(default_factory=list)     # not built here: the parent strategy is infra's
    manifest: dict = field(default_factory=dict)

    def __post_init__(self):
        if len(self.vectors) != len(self.chunks) or self.bm25.n_docs != len(self.chunks):
            raise ValueError(f"{len(self.chunks)} chunks, {len(self.vectors)} vectors and {self.bm25.n_docs} BM25 "
                             "rows: row i of each must be chunk i")
        self.row_of = {c.id: i for i, c in enumerate(self.chunks)}
        self._masks: dict[frozenset, np.ndarray] = {}

    @property
    def version(self) -> str:
        """A short id of the chunks this index holds (their ids and texts)."""
        digest = hashlib.sha256("\0".join(f"{c.id}\0{c.indexed_text}" for c in self.chunks).encode())
        return self.manifest.get("version_id") or digest.hexdigest()[:12]

    def chunk(self, chunk_id: str) -> Chunk:
        """The chunk with this id (``KeyError`` names an unknown one)."""
        if chunk_id not in self.row_of:
            raise KeyError(f"no chunk {chunk_id!r} in this index")
        return self.chunks[self.row_of[chunk_id]]

    def passages(self) -> list[Chunk]:
        """What a hit hands the generator: the chunks themselves."""
        return self.chunks

    def allowed(self, user: tuple[str, ...] | None) -> np.ndarray:
        """Rows the user's groups may read (``public`` is always included)."""
        return access_mask(self.chunks, user, self._masks)

    def dense_search(self, query_vec: np.ndarray, k: int, user: tuple[str, ...] | None) -> list[tuple[int, float]]:
        """``(row, cosine)`` pairs, best first, among the rows the user may read: exact search on those rows."""
        rows = np.flatnonzero(self.allowed(user))
        return [(int(rows[i]), cos) for i, cos in exact_search(np.asarray(query_vec).reshape(-1), self.vectors[rows], k)]

    def bm25_search(self, query: str, k: int, user: tuple[str, ...] | None) -> list[tuple[int, float]]:
        """``(row, score)`` pairs; BM25 scores only the rows the user may read."""
        return self.bm25.search(query, k, self.allowed(user))


def build_memory_index(docs: list[Document], settings: ChunkSettings, embed: Callable[[list[str]], np.ndarray],
                       tokenizer=None) -> MemoryIndex:
    """Chunk ``docs``, embed every chunk's indexed text (its heading prefix included when the settings add one)
    with ``embed``, and index the same texts for BM25. ``tokenizer``: for the strategies sized in tokens."""
    chunks = chunk_corpus(docs, settings, embed=embed, tokenizer=tokenizer)
    texts = [c.indexed_text for c in chunks]
    return MemoryIndex(chunks, to_unit_length(np.asarray(embed(texts), dtype=np.float32)), BM25(texts))
