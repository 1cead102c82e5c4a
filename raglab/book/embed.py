"""The embedding stage: text -> one unit-length vector.

A sentence-transformers model (the packaged all-MiniLM-L6-v2 by default) reads a text as tokens
(``[CLS] text [SEP]``) and, through its transformer layers, gives every token a vector that depends on
the tokens around it. The text's vector is the mean of its token vectors (mean pooling, padding left
out), divided by its length (normalising): on unit vectors the cosine similarity of two texts is the dot
product of their vectors, which is what the indexes compute.

``Embedder().encode(texts)`` returns those vectors as float32, one row a text:

1. each distinct text is looked up in the cache it was given (``raglab.infra.embedding_cache``;
   ``cache=True`` is the default file): a fully warm cache answers without loading the model;
2. the padding rule: every missed text is padded to its own length rounded up to a multiple of
   ``PAD_MULTIPLE`` tokens (``padded_length``), and a batch holds texts of one padded length only,
   longest first (``length_batches``); with the shape fixed by the text, a text's vector is the same
   bytes whatever else is in its batch (``tests/stages/test_batch_invariance.py``);
3. one forward pass a batch (``_embed``), in the precision chosen for this CPU
   (``raglab.infra.precision``); each batch goes to the cache as soon as it is computed.

The cache id names the model, the precision and the padding rule (``all-MiniLM-L6-v2@bfloat16+pad16``):
vectors made another way are never served. ``encode_query`` embeds one query the same way and warns when
the model will truncate it. Measurements and history: ``evals/results/embedding-notes.md``.
"""
from __future__ import annotations

import contextlib
import time
import warnings
from typing import Iterable

import numpy as np

from raglab.base.progress import progress_bar
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.infra.embedding_cache import EmbeddingCache, EmbeddingCacheError
from raglab.infra.embedding_model import load_sentence_transformer, packaged_dims
from raglab.infra.minilm import MiniLM
from raglab.infra.packaged_models import MINILM
from raglab.infra.precision import resolve_precision

PAD_MULTIPLE = 16        # every text is padded to a multiple of 16 tokens: its vector depends on the text alone
PADDING_RULE = f"pad{PAD_MULTIPLE}"   # part of the cache id and of the index manifest
BATCH_SIZES = {"float32": 16, "bfloat16": 32}   # texts a forward pass, measured: evals/results/embedding-notes.md


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


class TruncationWarning(UserWarning):
    """A text is longer than the model's token limit; the model reads only its beginning."""


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
        self._dim, self._max_tokens = packaged_dims() if self.packaged else (None, None)
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
        """The ``SentenceTransformer`` on ``self.device`` (``raglab.infra.embedding_model``)."""
        return load_sentence_transformer(None if self.packaged else self.model_id, self.device)

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
