"""A BM25 index in one ``.npz`` file: its parameters, document lengths, vocabulary and the sparse weights,
written atomically and read back without recomputing a weight."""
from __future__ import annotations

import os
from typing import Callable

import numpy as np

from raglab.base.files import atomic_open
from raglab.book.bm25 import BM25, tokenize

FORMAT = 1


def save_bm25(bm25: BM25, path: str | os.PathLike) -> None:
    """Write ``bm25`` to one ``.npz`` file, atomically (``raglab.base.files.atomic_open``)."""
    arrays = {
        "format": np.array(FORMAT), "params": np.array([bm25.k1, bm25.b, bm25.avgdl]),
        "lengths": bm25.lengths, "data": bm25._data, "indices": bm25._indices, "indptr": bm25._indptr,
        "vocab": np.frombuffer("\n".join(bm25.vocab).encode(), dtype=np.uint8),
    }
    with atomic_open(path, "wb") as fh:
        np.savez(fh, **arrays)


def load_bm25(path: str | os.PathLike, tokenizer: Callable[[str], list[str]] = tokenize) -> BM25:
    """An index written by ``save_bm25``; queries are tokenized with ``tokenizer``."""
    with np.load(path, allow_pickle=False) as z:
        if int(z["format"]) != FORMAT:
            raise ValueError(f"{path}: BM25 index format {int(z['format'])}, expected {FORMAT}")
        bm25 = BM25.__new__(BM25)
        k1, b, avgdl = (float(x) for x in z["params"])
        bm25.k1, bm25.b, bm25.tokenizer, bm25.avgdl = k1, b, tokenizer, avgdl
        text = z["vocab"].tobytes().decode()
        bm25.vocab = {tok: i for i, tok in enumerate(text.split("\n"))} if text else {}
        bm25.lengths = z["lengths"]
        bm25._data, bm25._indices, bm25._indptr = z["data"], z["indices"], z["indptr"]
    return bm25
