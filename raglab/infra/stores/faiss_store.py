"""FAISS: ``IndexFlatIP`` (exact; inner product = cosine on unit vectors) or HNSW.

Rows are chunk positions 0..N-1. A filter is a boolean mask over rows, turned into an
``IDSelectorBitmap`` and passed to FAISS in the search parameters, so rows a user may not
see are never scored, not dropped afterwards.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

KINDS = ("flat", "hnsw")


class FaissStore:
    """Dense vectors in a FAISS index, searched with an optional access mask."""

    def __init__(self, dim: int, kind: str = "flat", hnsw_m: int = 32, ef_search: int = 128):
        import faiss  # lazy: FAISS loads its native library

        if kind not in KINDS:
            raise ValueError(f"unknown index kind {kind!r}: choose one of {', '.join(KINDS)}")
        self.dim, self.kind, self.ef_search = dim, kind, ef_search
        if kind == "flat":
            self.index = faiss.IndexFlatIP(dim)
        else:
            self.index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = 200

    def add(self, vectors: np.ndarray) -> None:
        """Append unit vectors (float32, shape (n, dim)) as the next rows."""
        self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best ``(row, score)`` pairs for one query vector, among ``allowed`` rows only."""
        import faiss  # lazy: FAISS loads its native library

        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        k = min(k, len(self))
        if allowed is None:
            params = faiss.SearchParametersHNSW(efSearch=max(self.ef_search, k)) if self.kind == "hnsw" else None
        else:
            if not allowed.any():
                return []
            bitmap = np.packbits(allowed.astype(bool), bitorder="little")
            sel = faiss.IDSelectorBitmap(bitmap)
            params = (faiss.SearchParametersHNSW(sel=sel, efSearch=max(self.ef_search, 4 * k))
                      if self.kind == "hnsw" else faiss.SearchParameters(sel=sel))
        scores, rows = self.index.search(q, k, params=params) if params else self.index.search(q, k)
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]

    def save(self, path: Path) -> None:
        """Write the index to ``path`` (the caller renames the folder into place)."""
        import faiss  # lazy: FAISS loads its native library

        faiss.write_index(self.index, str(path))

    @classmethod
    def load(cls, path: Path, kind: str, ef_search: int = 128) -> "FaissStore":
        """Read an index written by ``save``."""
        import faiss  # lazy: FAISS loads its native library

        store = cls.__new__(cls)
        store.index = faiss.read_index(str(path))
        store.dim, store.kind, store.ef_search = store.index.d, kind, ef_search
        return store
