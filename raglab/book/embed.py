"""Embeddings: a sentence-transformers model behind a persistent content-hash cache.

``Embedder().encode(texts)`` returns unit-length float32 vectors, one row a text. Each distinct
text is embedded once per model and precision, ever: identical texts within a call are embedded
once, and every vector goes to an SQLite cache keyed by ``sha256(cache id + "\\0" + text)``, the
cache id being the model id, the precision and the padding rule (``all-MiniLM-L6-v2@bfloat16+pad16``).
A fully warm cache answers without loading the model (nor importing torch or sentence-transformers).

One text, one vector: a text's vector is a function of the text alone, bit for bit, whatever else
was in its batch, whatever the cache held, cached or not. Matrix-multiply kernels pick their blocking
by shape, so a text padded to the longest text of its batch (what ``model.encode`` does) gets other
roundings beside other texts (up to 7e-4 in a component in bfloat16, 7e-8 in float32). Here every
text is padded to its own length rounded up to a multiple of ``PAD_MULTIPLE`` tokens
(``padded_length``), and a batch holds texts of one padded length only; the padding is masked out,
and with the shape fixed by the text, a row's result no longer depends on the other rows, their
number or its position (measured: identical bytes for batches of 1 to 64, in either precision, on
1 or 2 threads; ``tests/stages/test_batch_invariance.py``).

Precision: ``bfloat16`` (torch autocast: matrix multiplies in bfloat16, vectors returned as
float32) by default on a CPU with native bfloat16 arithmetic (the ``avx512_bf16`` or ``amx_bf16``
flag in ``/proc/cpuinfo``), ``float32`` elsewhere (without native support bfloat16 is emulated and
can be slower); ``RAGLAB_EMBED_PRECISION`` (auto, float32, bfloat16) or ``precision=`` overrides it.
The index manifest records the precision, and an index embedded in another one is refused.

Speed (``python bench/embed.py``: 2-core CPU, 500 Python-docs chunks of ~240 tokens): the
plain ``model.encode(texts, batch_size=64)`` makes 26.6 chunks/s, ``Embedder`` in float32 32.1 (1.2x,
83% of what the float32 matrix-multiply rate allows), in bfloat16 2.2 to 2.8 times more, vectors
within 1 - cos 1e-4 of float32; a warm cache over 100,000. The float32 gain is the batch size: 16
texts a forward pass keeps each layer's activations and attention scores cache-sized (8 is as
fast, 32 and 64 are slower). Misses are sorted by padded length (longest first) before batching,
so a batch holds texts of the same padded length: the padding costs at most 15 tokens a text, and
short texts (the reranker's sentences) are no longer padded to a long neighbour. Torch's default thread count (one per core) is kept: one thread is about 0.6x.

Queries go through the same cache (MiniLM embeds queries and passages alike), so re-running an
evaluation never reloads the model; a query longer than the model's token limit is truncated by
the model, and ``encode_query`` warns about it.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Iterable

import numpy as np

from raglab.base import config
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.base.config import work_dir
from raglab.infra.minilm import MiniLM
from raglab.infra.packaged_models import MINILM, MINILM_MAX_TOKENS, minilm_path, model_location, quiet_loading
from raglab.base.progress import progress_bar

PRECISIONS = ("float32", "bfloat16")
PAD_MULTIPLE = 16        # every text is padded to a multiple of 16 tokens: its vector depends on the text alone
PADDING_RULE = f"pad{PAD_MULTIPLE}"   # part of the cache id and of the index manifest
BATCH_SIZES = {"float32": 16, "bfloat16": 32}   # texts a forward pass, measured by bench/embed.py (see above)
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")   # x86 flags of bfloat16 arithmetic (Cooper Lake, Zen 4, Sapphire Rapids)
_SELECT_CHUNK = 500          # keys per SELECT ... IN (...), under SQLite's variable limit


def length_batches(lengths: list[int], batch_size: int) -> list[tuple[int, list[int]]]:
    """``(length, positions)`` batches: positions of equal ``lengths``, longest first, at most ``batch_size`` each.

    >>> length_batches([16, 32, 16, 16, 32], 2)
    [(32, [1, 4]), (16, [0, 2]), (16, [3])]
    """
    by_length: dict[int, list[int]] = {}
    for position, length in enumerate(lengths):
        by_length.setdefault(length, []).append(position)
    return [(length, rows[i:i + batch_size]) for length, rows in sorted(by_length.items(), reverse=True)
            for i in range(0, len(rows), batch_size)]


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


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags the kernel reports in ``/proc/cpuinfo`` (none where it does not exist)."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


@functools.lru_cache(maxsize=1)
def _native_bf16_here() -> bool:
    return native_bf16(cpu_flags())


def native_bf16(flags: Iterable[str] | None = None) -> bool:
    """Whether a CPU with these flags (default: this one's) has native bfloat16 arithmetic.

    Read from ``/proc/cpuinfo`` rather than torch so that choosing a precision (part of the cache
    key) never imports torch; elsewhere (no ``/proc/cpuinfo``) the answer is False.

    >>> native_bf16({"avx512f", "avx512_bf16"}), native_bf16({"amx_bf16"}), native_bf16({"avx512f", "avx2"})
    (True, True, False)
    """
    if flags is None:
        return _native_bf16_here()
    return any(flag in set(flags) for flag in NATIVE_BF16_FLAGS)


def resolve_precision(precision: str | None = None, device: str = "cpu") -> str:
    """The precision to embed with: ``precision`` if given, else ``RAGLAB_EMBED_PRECISION`` (default
    ``auto``); ``auto`` is ``bfloat16`` on a CPU with native bfloat16, else ``float32``.

    >>> resolve_precision("float32"), resolve_precision("bfloat16"), resolve_precision("auto", device="cuda")
    ('float32', 'bfloat16', 'float32')
    """
    chosen = (precision or config.get("RAGLAB_EMBED_PRECISION")).strip().lower()
    if chosen == "auto":
        return "bfloat16" if device == "cpu" and native_bf16() else "float32"
    if chosen not in PRECISIONS:
        source = "precision" if precision else "RAGLAB_EMBED_PRECISION"
        raise ValueError(f"unknown precision {chosen!r} ({source}): choose auto, {', '.join(PRECISIONS)}")
    return chosen


def cache_id(model_id: str, precision: str) -> str:
    """The id a model's vectors are cached under: ``model@precision+padding rule``.

    (Vectors cached before the padding rule, under ``model`` or ``model@bfloat16``, are never read.)

    >>> cache_id("all-MiniLM-L6-v2", "float32"), cache_id("all-MiniLM-L6-v2", "bfloat16")
    ('all-MiniLM-L6-v2@float32+pad16', 'all-MiniLM-L6-v2@bfloat16+pad16')
    """
    return f"{model_id}@{precision}+{PADDING_RULE}"


def padded_length(n_tokens: int, max_tokens: int, multiple: int = PAD_MULTIPLE) -> int:
    """The length a text of ``n_tokens`` tokens is padded (or truncated) to: the next multiple of
    ``multiple``, at most the model's ``max_tokens``. It depends on the text alone.

    >>> [padded_length(n, 256) for n in (3, 16, 17, 250, 256, 900)]
    [16, 16, 32, 256, 256, 256]
    """
    return min(max_tokens, -(-n_tokens // multiple) * multiple)


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


def _packaged_dims() -> tuple[int, int]:
    """``(dim, max_tokens)`` of the packaged MiniLM, read from its config files (no model load)."""
    path = minilm_path()
    dim = json.loads((path / "1_Pooling" / "config.json").read_text())["word_embedding_dimension"]
    max_tokens = json.loads((path / "sentence_bert_config.json").read_text()).get("max_seq_length", MINILM_MAX_TOKENS)
    return int(dim), int(max_tokens)


class Embedder:
    """A sentence-transformers model (the packaged all-MiniLM-L6-v2 by default) with a cache.

    ``cache=True`` uses the default cache file, ``False``/``None`` none, or pass an ``EmbeddingCache``.
    ``precision=None`` (or ``"auto"``) is ``resolve_precision``'s choice: bfloat16 on a CPU with
    native bfloat16, else float32; ``batch_size=None`` is that precision's ``BATCH_SIZES`` entry.
    The model is loaded on the first text that is not in the cache.
    """

    def __init__(self, model: str | None = None, cache: EmbeddingCache | None | bool = True,
                 batch_size: int | None = None, device: str = "cpu", precision: str | None = None):
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if model is not None and "\0" in str(model):
            raise ValueError("a model id cannot contain NUL: it separates the model id from the text in cache keys")
        if model is not None and "@" in str(model):
            raise ValueError(f"a model id cannot contain '@' ({model!r}): it marks the precision in cache keys")
        self.packaged = model is None
        self.model_id = MINILM if model is None else str(model)
        self.device, self.precision = device, resolve_precision(precision, device)
        self.batch_size = batch_size or BATCH_SIZES[self.precision]
        self.cache_id = cache_id(self.model_id, self.precision)
        self.cache = EmbeddingCache() if cache is True else None if cache is None or cache is False else cache
        self._model = None
        self._light = None          # raglab.infra.minilm.MiniLM: the packaged model's forward pass in plain torch
        self._tokenizer = None
        self._dim, self._max_tokens = _packaged_dims() if self.packaged else (None, None)
        self.last_stats: dict = {}

    def __repr__(self) -> str:
        return (f"Embedder({self.model_id!r}, cache={self.cache!r}, batch_size={self.batch_size}, "
                f"precision={self.precision!r})")

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

        name = str(minilm_path()) if self.packaged else model_location(self.model_id)
        return SentenceTransformer(name, device=self.device)

    def _load_light(self):
        """The packaged model's forward pass in plain torch (``raglab.infra.minilm``), for the CPU."""
        return MiniLM()

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
            self._tokenizer = self._tokenizer or load_tokenizer()
            return token_lengths(texts, self._tokenizer)
        tokenizer = getattr(self.model, "tokenizer", None)
        if tokenizer is None:
            return [len(t) for t in texts]
        return [len(ids) for ids in tokenizer(list(texts), truncation=False)["input_ids"]]

    def _embed(self, texts: list[str], length: int) -> np.ndarray:
        """One forward pass over ``texts``, each padded (or truncated) to ``length`` tokens: unit-length
        float32 rows. The padding is masked, and the shape depends only on ``length``, so each row is
        the same whatever the other rows are."""
        import torch  # lazy: torch takes seconds to import

        device_type = str(self.device).split(":")[0]
        ctx = (torch.autocast(device_type, dtype=torch.bfloat16) if self.precision == "bfloat16"
               else contextlib.nullcontext())
        if self.packaged and device_type == "cpu" and self._model is None:
            # the same vectors without importing sentence-transformers (raglab.infra.minilm: seconds at a cold start)
            self._light = self._light or self._load_light()
            with torch.inference_mode(), ctx:
                out = self._light.forward(texts, length)
        else:
            features = self.model.tokenizer(texts, padding="max_length", truncation=True, max_length=length,
                                            return_tensors="pt")
            with torch.inference_mode(), ctx:
                out = self.model({k: v.to(self.device) for k, v in features.items()})["sentence_embedding"]
        vectors = out.float().cpu().numpy()
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-12)

    # ------------------------------------------------------------ public calls

    def warm(self) -> None:
        """Load the model and run it once on a short text, past the cache: the first real text is then
        as fast as the later ones (the first forward pass pays for kernel set-up, the first count for
        loading the tokenizer)."""
        self.token_counts(["warm up"])
        self._embed(["warm up"], PAD_MULTIPLE)

    def encode(self, texts: Iterable[str], progress: bool | None = None) -> np.ndarray:
        """Unit-length float32 vectors, shape ``(len(texts), dim)``: cached ones looked up, the rest embedded.

        Misses are embedded in batches of at most ``batch_size`` texts of one padded length
        (``padded_length``), and each batch is committed to the cache as soon as it is computed (an interrupted run keeps them).
        ``progress=None`` shows a progress bar when more than 200 texts must be embedded.
        """
        start = time.perf_counter()
        texts = list(texts)
        position: dict[str, int] = {}
        inverse = np.array([position.setdefault(t, len(position)) for t in texts], dtype=np.int64)
        unique = list(position)
        hits = self.cache.get_many(self.cache_id, unique) if self.cache is not None and unique else {}
        misses = [j for j in range(len(unique)) if j not in hits]
        dim = self._dim if self._dim is not None else (len(next(iter(hits.values()))) if hits else self.dim)
        out = np.empty((len(unique), dim), dtype=np.float32)
        for j, vector in hits.items():
            if vector.shape[0] != dim:
                raise EmbeddingCacheError(f"embedding cache {self.cache.path} holds a {vector.shape[0]}-dimension "
                                          f"vector for model {self.cache_id!r}, which makes {dim}")
            out[j] = vector
        if misses:
            self._embed_misses(unique, misses, out, progress)
        self.last_stats = {"texts": len(texts), "unique": len(unique), "hits": len(hits),
                           "misses": len(misses), "seconds": round(time.perf_counter() - start, 3)}
        return out[inverse]

    def _embed_misses(self, unique: list[str], misses: list[int], out: np.ndarray, progress: bool | None) -> None:
        """Embed ``unique[j]`` for each ``j`` in ``misses`` into ``out``, longest first, one padded length a batch."""
        padded = [padded_length(n, self.max_tokens) for n in self.token_counts([unique[j] for j in misses])]
        show = len(misses) > 200 if progress is None else progress
        bar = progress_bar(len(misses), f"embedding ({self.cache_id})", "text") if show else None
        try:
            for length, rows in length_batches(padded, self.batch_size):
                batch = [misses[k] for k in rows]
                batch_texts = [unique[j] for j in batch]
                vectors = self._embed(batch_texts, length)
                if vectors.shape != (len(batch), out.shape[1]):
                    raise RuntimeError(f"{self.model_id} returned vectors of shape {vectors.shape}, "
                                       f"expected {(len(batch), out.shape[1])}")
                if self.cache is not None:
                    self.cache.put_many(self.cache_id, batch_texts, vectors)
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
