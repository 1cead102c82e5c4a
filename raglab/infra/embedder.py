"""The embedder ready to use: the packaged all-MiniLM-L6-v2 (or a sentence-transformers model by name), its
embedding cache and its precision (``raglab.infra.precision``), around the book's stage (``raglab.infra.embedding_batches.unit_vectors``).

``Embedder().encode(texts)`` returns unit-length float32 vectors, one row a text:

1. each distinct text is looked up in the cache (``raglab.infra.embedding_cache``; ``cache=True`` is the
   default file): a fully warm cache answers without loading the model;
2. the misses are padded by the book's padding rule and embedded in length batches (``raglab.infra.embedding_batches``);
3. one forward pass a batch (``_embed``), in the chosen precision (``raglab.infra.precision``):
   the packaged model on the CPU runs in plain torch (``raglab.infra.minilm``), any other through
   sentence-transformers; each batch goes to the cache as soon as it is computed.

``encode_query`` embeds one query the same way and warns when the model will truncate it.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Iterable

import numpy as np

from raglab.base.progress import progress_bar
from raglab.infra.embedding_batches import PAD_MULTIPLE, cache_id, unit_vectors
from raglab.infra.embedding_cache import EmbeddingCache
from raglab.infra.embedding_model import load_sentence_transformer, packaged_dims
from raglab.infra.minilm import MiniLM
from raglab.infra.packaged_models import MINILM
from raglab.infra.precision import resolve_precision
from raglab.infra.tokenizer import load_tokenizer, token_lengths

BATCH_SIZES = {"float64": 16, "float32": 16, "bfloat16": 32}   # texts a forward pass, measured: evals/results/embedding-notes.md


class TruncationWarning(UserWarning):
    """A text is longer than the model's token limit; the model reads only its beginning."""


class Embedder:
    """A sentence-transformers model (the packaged all-MiniLM-L6-v2 by default) with a cache.

    ``cache=True`` uses the default cache file, ``False``/``None`` none, or pass an ``EmbeddingCache``.
    ``precision=None`` is ``RAGLAB_EMBED_PRECISION`` (``raglab.infra.precision``: float32 by default, bfloat16
    faster where the CPU has it, float64 the same vectors on every CPU); ``batch_size=None`` is that
    precision's ``BATCH_SIZES`` entry.
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
        """The ``SentenceTransformer`` on ``self.device`` (``raglab.infra.embedding_model``), its weights in float64
        when that is the precision."""
        model = load_sentence_transformer(None if self.packaged else self.model_id, self.device)
        return model.double() if self.precision == "float64" else model

    def _load_light(self):
        """The packaged model's forward pass in plain torch (``raglab.infra.minilm``), for the CPU."""
        import torch  # lazy: torch takes seconds to import

        return MiniLM(dtype=torch.float64 if self.precision == "float64" else torch.float32)

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
        """One forward pass over ``texts``, each padded (or truncated) to ``length`` tokens: the pooled
        rows, float64 in that precision and float32 otherwise (the book's stage normalises them and rounds them
        to float32). The padding is masked, and the shape depends only on ``length``, so each row is the same
        whatever the other rows are."""
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
        return (out.double() if self.precision == "float64" else out.float()).cpu().numpy()

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
        (``raglab.infra.embedding_batches.padded_length``), and each batch is committed to the cache as soon as it is
        computed (an interrupted run keeps them). ``progress=None`` shows a progress bar when more than 200
        texts must be embedded.
        """
        vectors, self.last_stats = unit_vectors(
            texts, lambda batch, length: self._embed(batch, length), self.token_counts, lambda: self.max_tokens,
            self._dim if self._dim is not None else (lambda: self.dim), self.batch_size, self.cache, self.cache_id,
            lambda n: progress_bar(n, f"embedding ({self.cache_id})", "text"), progress, self.model_id)
        return vectors

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
