"""The on-disk embedding cache: vectors by content hash in one SQLite file.

Every vector is stored under ``sha256(cache id + "\\0" + text)``, the cache id naming the model, the
precision and the padding rule (``all-MiniLM-L6-v2@bfloat16+pad16``, ``raglab.infra.embedding_batches.cache_id``), so
each distinct text is embedded once per model and precision, ever, and a fully warm cache answers without
loading the model. The file lives at ``<work dir>/cache/embeddings.sqlite`` unless a path is given.
"""
from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
from pathlib import Path

import numpy as np

from raglab.base.config import work_dir

_SELECT_CHUNK = 500          # keys per SELECT ... IN (...), under SQLite's variable limit


class EmbeddingCacheError(RuntimeError):
    """The cache file cannot be read or written as an embedding cache."""


def cache_key(model_id: str, text: str) -> bytes:
    """The cache key of one text for one model: ``sha256(model_id + "\\0" + text)``.

    >>> cache_key("m", "a").hex()[:12] == cache_key("m", "a").hex()[:12] != cache_key("n", "a").hex()[:12]
    True
    """
    return hashlib.sha256(f"{model_id}\0{text}".encode("utf-8")).digest()


def default_cache_path() -> Path:
    """``<work dir>/cache/embeddings.sqlite`` (see ``raglab.base.config.work_dir``)."""

    return work_dir() / "cache" / "embeddings.sqlite"


class EmbeddingCache:
    """Vectors by content hash in one SQLite file (WAL mode); each ``put_many`` is one transaction."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            # one connection, usable from any thread (a web server's worker), serialized by a lock
            self._conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        with self._guard():
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            with self._conn:
                self._conn.execute("CREATE TABLE IF NOT EXISTS embeddings "
                                   "(key BLOB PRIMARY KEY, dim INTEGER NOT NULL, vector BLOB NOT NULL) WITHOUT ROWID")
            self._conn.execute("SELECT key, dim, vector FROM embeddings LIMIT 1").fetchall()

    def _error(self, exc: object) -> EmbeddingCacheError:
        """A clear error naming the cache file."""
        return EmbeddingCacheError(f"embedding cache {self.path} cannot be used: {exc} "
                                   "(if the file is corrupt, delete it: it is rebuilt on the next run)")

    @contextlib.contextmanager
    def _guard(self):
        """Hold the connection's lock; turn SQLite errors into ``EmbeddingCacheError`` naming the file
        (a busy database stays as is)."""
        try:
            with self._lock:
                yield
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise
            raise self._error(exc) from exc
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from exc

    def get_many(self, model_id: str, texts: list[str]) -> dict[int, np.ndarray]:
        """``{index: vector}`` for the texts already cached for ``model_id`` (misses are absent)."""
        keys = [cache_key(model_id, t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        with self._guard():
            for i in range(0, len(unique), _SELECT_CHUNK):
                part = unique[i:i + _SELECT_CHUNK]
                rows = self._conn.execute(f"SELECT key, dim, vector FROM embeddings WHERE key IN "
                                          f"({','.join('?' * len(part))})", part).fetchall()
                for key, dim, blob in rows:
                    if len(blob) != 4 * dim:
                        raise self._error(f"a vector of {len(blob)} bytes for dimension {dim}")
                    found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        return {i: found[k] for i, k in enumerate(keys) if k in found}

    def put_many(self, model_id: str, texts: list[str], vectors) -> None:
        """Store one vector per text, all in one transaction (all are stored, or none)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise ValueError(f"expected {len(texts)} vectors in a 2-D array, got shape {vectors.shape}")
        rows = [(cache_key(model_id, t), int(v.shape[0]), np.ascontiguousarray(v).tobytes())
                for t, v in zip(texts, vectors)]
        with self._guard(), self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO embeddings (key, dim, vector) VALUES (?, ?, ?)", rows)

    def __len__(self) -> int:
        """The number of vectors stored (all models)."""
        with self._guard():
            return int(self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path)!r})"
