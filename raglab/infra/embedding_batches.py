"""Embedding many texts: the cache, the padding rule and length batches, around a model's forward pass.

``unit_vectors(texts, forward, ...)`` returns one unit vector a text, as float32:

1. each distinct text is looked up in the cache it is handed, if any: a fully warm cache answers
   without calling the model;
2. the padding rule: every missed text is padded to its own length rounded up to a multiple of
   ``PAD_MULTIPLE`` tokens (``padded_length``), and a batch holds texts of one padded length only,
   longest first (``length_batches``); with the shape fixed by the text, a text's vector is the same
   bytes whatever else is in its batch (``tests/stages/test_batch_invariance.py``);
3. one forward pass a batch, normalised (``raglab.book.embed.to_unit_length``) in the pass's own precision and only
   then rounded to float32; each batch goes to the cache as soon as it is computed.

The cache id names the model, the precision and the padding rule (``all-MiniLM-L6-v2@bfloat16+pad16``,
``cache_id``): vectors made another way are never served.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable

import numpy as np

from raglab.book.embed import to_unit_length

PAD_MULTIPLE = 16        # every text is padded to a multiple of 16 tokens: its vector depends on the text alone
PADDING_RULE = f"pad{PAD_MULTIPLE}"   # part of the cache id and of the index manifest


def cache_id(model_id: str, precision: str) -> str:
    """The id a model's vectors are cached under: ``model@precision+padding rule``.

    (Vectors cached before the padding rule, under ``model`` or ``model@bfloat16``, are never read.)

    >>> cache_id("all-MiniLM-L6-v2", "float64"), cache_id("all-MiniLM-L6-v2", "bfloat16")
    ('all-MiniLM-L6-v2@float64+pad16', 'all-MiniLM-L6-v2@bfloat16+pad16')
    """
    return f"{model_id}@{precision}+{PADDING_RULE}"


def padded_length(n_tokens: int, max_tokens: int, multiple: int = PAD_MULTIPLE) -> int:
    """The length a text of ``n_tokens`` tokens is padded (or truncated) to: the next multiple of
    ``multiple``, at most the model's ``max_tokens``. It depends on the text alone.

    >>> [padded_length(n, 256) for n in (3, 16, 17, 250, 256, 900)]
    [16, 16, 32, 256, 256, 256]
    """
    return min(max_tokens, -(-n_tokens // multiple) * multiple)


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


def _value(x):
    """An int given, or one found by calling a function of no argument (which may load the model)."""
    return x() if callable(x) else x


def unit_vectors(texts: Iterable[str], forward: Callable, token_counts: Callable, max_tokens, dim, batch_size: int,
                 cache=None, cache_id: str = "", bar: Callable | None = None, progress: bool | None = None,
                 name: str = "the model") -> tuple[np.ndarray, dict]:
    """Unit-length float32 vectors, shape ``(len(texts), dim)``, and the call's counts (``texts``, ``unique``,
    ``hits``, ``misses``, ``seconds``): cached ones looked up, the rest embedded.

    ``forward(texts, length)`` is one forward pass (each text padded or truncated to ``length`` tokens, its
    pooled vector out), ``token_counts(texts)`` the model's token counts; ``max_tokens`` and ``dim`` are ints,
    or functions of no argument that find them (loading the model) only when needed: ``max_tokens`` for a
    miss, ``dim`` when no cached vector tells it. ``cache`` (``get_many``/``put_many`` by ``cache_id``) is
    optional; misses are embedded in batches of at most ``batch_size`` texts of one padded length, each
    committed to the cache as soon as it is computed (an interrupted run keeps them). ``bar(n)`` makes a
    progress bar (``update``, ``close``), shown when asked or, with ``progress=None``, past 200 misses.
    """
    start = time.perf_counter()
    texts = list(texts)
    position: dict[str, int] = {}
    inverse = np.array([position.setdefault(t, len(position)) for t in texts], dtype=np.int64)
    unique = list(position)
    hits = cache.get_many(cache_id, unique) if cache is not None and unique else {}
    misses = [j for j in range(len(unique)) if j not in hits]
    if callable(dim):
        dim = len(next(iter(hits.values()))) if hits else dim()
    out = np.empty((len(unique), dim), dtype=np.float32)
    for j, vector in hits.items():
        if vector.shape[0] != dim:
            raise RuntimeError(f"embedding cache {getattr(cache, 'path', cache)} holds a {vector.shape[0]}-dimension "
                               f"vector for model {cache_id!r}, which makes {dim}")
        out[j] = vector
    if misses:
        padded = [padded_length(n, _value(max_tokens)) for n in token_counts([unique[j] for j in misses])]
        show = len(misses) > 200 if progress is None else progress
        shown = bar(len(misses)) if show and bar is not None else None
        try:
            for length, rows in length_batches(padded, batch_size):
                batch = [misses[k] for k in rows]
                batch_texts = [unique[j] for j in batch]
                vectors = to_unit_length(forward(batch_texts, length)).astype(np.float32)   # from float64, rounded once
                if vectors.shape != (len(batch), dim):
                    raise RuntimeError(f"{name} returned vectors of shape {vectors.shape}, expected {(len(batch), dim)}")
                if cache is not None:
                    cache.put_many(cache_id, batch_texts, vectors)
                out[batch] = vectors
                if shown is not None:
                    shown.update(len(batch))
        finally:
            if shown is not None:
                shown.close()
    stats = {"texts": len(texts), "unique": len(unique), "hits": len(hits), "misses": len(misses),
             "seconds": round(time.perf_counter() - start, 3)}
    return out[inverse], stats
