"""Embeddings: a sentence-transformers model behind a persistent content-hash cache.

``Embedder().encode(texts)`` returns unit-length float32 vectors, one row a text. Each distinct
text is embedded once per model, ever: identical texts within a call are embedded once, and
every vector goes to an SQLite cache keyed by ``sha256(model id + "\\0" + text)``. A fully warm
cache answers without loading the model (nor importing torch or sentence-transformers).

Speed (``python bench/embed.py``: 2-core CPU, 500 Python-docs chunks of ~240 tokens): the
plain ``model.encode(texts, batch_size=64)`` makes 26.6 chunks/s, ``Embedder`` 32.1 (1.2x, 83% of
what the float32 matrix-multiply rate allows), a warm cache over 100,000. The gain is the batch
size: 16 texts a forward pass keeps each layer's activations and attention scores cache-sized
(8 is as fast, 32 and 64 are slower). Misses are sorted by token count (longest first) before
batching, so a batch holds texts of nearly the same length; sentence-transformers sorts by
characters inside each ``encode`` call, but only sees one batch here since every batch is
committed to the cache on its own. Torch's default thread count (one per core) is kept: one
thread is about 0.6x. ``precision="bfloat16"`` (autocast) is 2.2 to 2.8 times faster again on
CPUs with native bfloat16 (AVX512-BF16, AMX; possibly slower without), vectors within cosine 0.9999 of
float32; float32 stays the default so vectors match the course's. The cache key does not
include the precision: a vector cached in one precision is reused in the other.

Queries go through the same cache (MiniLM embeds queries and passages alike), so re-running an
evaluation never reloads the model; a query longer than the model's token limit is truncated by
the model, and ``encode_query`` warns about it.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Iterable

import numpy as np

from raglab.chunking import load_tokenizer, token_lengths
from raglab.config import work_dir
from raglab.packaged_models import MINILM, MINILM_MAX_TOKENS, minilm_path, quiet_loading

PRECISIONS = ("float32", "bfloat16")
_SELECT_CHUNK = 500          # keys per SELECT ... IN (...), under SQLite's variable limit


class EmbeddingCacheError(RuntimeError):
    """The cache file cannot be read or written as an embedding cache."""


class TruncationWarning(UserWarning):
    """A text is longer than the model's token limit; the model reads only its beginning."""


def cache_key(model_id: str, text: str) -> bytes:
    """The cache key of one text for one model: ``sha256(model_id + "\\0" + text)``.

    >>> cache_key("m", "a").hex()[:12] == cache_key("m", "a").hex()[:12] != cache_key("n", "a").hex()[:12]
    True
    """
    return hashlib.sha256(f"{model_id}\0{text}".encode("utf-8")).digest()


def default_cache_path() -> Path:
    """``<work dir>/cache/embeddings.sqlite`` (see ``raglab.config.work_dir``)."""

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


def _packaged_dims() -> tuple[int, int]:
    """``(dim, max_tokens)`` of the packaged MiniLM, read from its config files (no model load)."""
    path = minilm_path()
    dim = json.loads((path / "1_Pooling" / "config.json").read_text())["word_embedding_dimension"]
    max_tokens = json.loads((path / "sentence_bert_config.json").read_text()).get("max_seq_length", MINILM_MAX_TOKENS)
    return int(dim), int(max_tokens)


class Embedder:
    """A sentence-transformers model (the packaged all-MiniLM-L6-v2 by default) with a cache.

    ``cache=True`` uses the default cache file, ``False``/``None`` none, or pass an ``EmbeddingCache``.
    The model is loaded on the first text that is not in the cache.
    """

    def __init__(self, model: str | None = None, cache: EmbeddingCache | None | bool = True,
                 batch_size: int = 16, device: str = "cpu", precision: str = "float32"):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
        if model is not None and "\0" in str(model):
            raise ValueError("a model id cannot contain NUL: it separates the model id from the text in cache keys")
        self.packaged = model is None
        self.model_id = MINILM if model is None else str(model)
        self.batch_size, self.device, self.precision = batch_size, device, precision
        self.cache = EmbeddingCache() if cache is True else None if cache is None or cache is False else cache
        self._model = None
        self._tokenizer = None
        self._dim, self._max_tokens = _packaged_dims() if self.packaged else (None, None)
        self.last_stats: dict = {}

    def __repr__(self) -> str:
        return f"Embedder({self.model_id!r}, cache={self.cache!r}, batch_size={self.batch_size})"

    # ------------------------------------------------------------ the model, loaded on demand

    @property
    def model(self):
        """The ``SentenceTransformer`` (loaded, offline for the packaged model, on first use)."""
        if self._model is None:
            self._model = self._load()
            get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
            self._dim = int(get_dim())
            self._max_tokens = int(self._model.max_seq_length)
        return self._model

    def _load(self):
        """Import sentence-transformers and load the model on ``self.device``."""

        quiet_loading()
        from sentence_transformers import SentenceTransformer  # lazy: imports torch

        name = str(minilm_path()) if self.packaged else self.model_id
        return SentenceTransformer(name, device=self.device)

    @property
    def dim(self) -> int:
        """The vector dimension (384 for MiniLM, known without loading it)."""
        if self._dim is None:
            self.model  # noqa: B018 -- loading sets it
        return self._dim

    @property
    def max_tokens(self) -> int:
        """The model's token limit (longer texts are truncated by the model)."""
        if self._max_tokens is None:
            self.model  # noqa: B018 -- loading sets it
        return self._max_tokens

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens per text with the model's own tokenizer, [CLS] and [SEP] included, before truncation."""
        if self.packaged:
            pass

            self._tokenizer = self._tokenizer or load_tokenizer()
            return token_lengths(texts, self._tokenizer)
        tokenizer = getattr(self.model, "tokenizer", None)
        if tokenizer is None:
            return [len(t) for t in texts]
        return [len(ids) for ids in tokenizer(list(texts), truncation=False)["input_ids"]]

    def _embed(self, texts: list[str]) -> np.ndarray:
        """One forward pass over ``texts``: unit-length float32 rows."""
        import torch  # lazy: torch takes seconds to import

        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bfloat16" else contextlib.nullcontext()
        with ctx:
            vectors = self.model.encode(texts, batch_size=len(texts), normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False)
        vectors = np.asarray(vectors, dtype=np.float32)
        if self.precision != "float32":   # renormalize after rounding
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-12)
        return vectors

    # ------------------------------------------------------------ public calls

    def encode(self, texts: Iterable[str], progress: bool | None = None) -> np.ndarray:
        """Unit-length float32 vectors, shape ``(len(texts), dim)``: cached ones looked up, the rest embedded.

        Misses are embedded in batches of ``batch_size`` texts of similar token length, and each
        batch is committed to the cache as soon as it is computed (an interrupted run keeps them).
        ``progress=None`` shows a progress bar when more than 200 texts must be embedded.
        """
        start = time.perf_counter()
        texts = list(texts)
        position: dict[str, int] = {}
        inverse = np.array([position.setdefault(t, len(position)) for t in texts], dtype=np.int64)
        unique = list(position)
        hits = self.cache.get_many(self.model_id, unique) if self.cache is not None and unique else {}
        misses = [j for j in range(len(unique)) if j not in hits]
        dim = self._dim if self._dim is not None else (len(next(iter(hits.values()))) if hits else self.dim)
        out = np.empty((len(unique), dim), dtype=np.float32)
        for j, vector in hits.items():
            if vector.shape[0] != dim:
                raise EmbeddingCacheError(f"embedding cache {self.cache.path} holds a {vector.shape[0]}-dimension "
                                          f"vector for model {self.model_id!r}, which makes {dim}")
            out[j] = vector
        if misses:
            self._embed_misses(unique, misses, out, progress)
        self.last_stats = {"texts": len(texts), "unique": len(unique), "hits": len(hits),
                           "misses": len(misses), "seconds": round(time.perf_counter() - start, 3)}
        return out[inverse]

    def _embed_misses(self, unique: list[str], misses: list[int], out: np.ndarray, progress: bool | None) -> None:
        """Embed ``unique[j]`` for each ``j`` in ``misses`` into ``out``, longest texts first, batch by batch."""
        lengths = self.token_counts([unique[j] for j in misses])
        order = [misses[k] for k in np.argsort([-n for n in lengths], kind="stable")]
        show = len(misses) > 200 if progress is None else progress
        bar = None
        if show:
            from tqdm import tqdm

            bar = tqdm(total=len(order), desc=f"embedding ({self.model_id})", unit="text")
        try:
            for i in range(0, len(order), self.batch_size):
                batch = order[i:i + self.batch_size]
                batch_texts = [unique[j] for j in batch]
                vectors = self._embed(batch_texts)
                if vectors.shape != (len(batch), out.shape[1]):
                    raise RuntimeError(f"{self.model_id} returned vectors of shape {vectors.shape}, "
                                       f"expected {(len(batch), out.shape[1])}")
                if self.cache is not None:
                    self.cache.put_many(self.model_id, batch_texts, vectors)
                out[batch] = vectors
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()

    def encode_query(self, text: str) -> np.ndarray:
        """The vector of one query, shape ``(dim,)``; warns when the model will truncate it.

        Queries are cached like any text (a repeated evaluation does not reload the model).
        """
        n = self.token_counts([text])[0]
        if n > self.max_tokens:
            warnings.warn(f"the query is {n} tokens long but {self.model_id} reads at most {self.max_tokens}: "
                          f"everything after token {self.max_tokens} is ignored (truncated)",
                          TruncationWarning, stacklevel=2)
        return self.encode([text], progress=False)[0]
