"""Hashed character and word n-grams of the normalized sentences: the features of the learned injection
detector's second regression, hashed with ``mmh3`` exactly as scikit-learn's ``HashingVectorizer`` does.
"""
from __future__ import annotations

import re

import numpy as np

from raglab.guards.injection import rule_text

HASH_BITS = 18                                  # each n-gram family hashed into 2**18 columns
NGRAMS = (("char_wb", (2, 5)), ("word", (1, 2)))


_RUNS_OF_SPACE = re.compile(r"\s\s+")
_WORD_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def char_wb_ngrams(text: str, lo: int, hi: int) -> list[str]:
    """Character n-grams of ``lo`` to ``hi`` within each word padded by a space, as scikit-learn's ``char_wb``.

    >>> char_wb_ngrams("ab  c", 2, 3)
    [' a', 'ab', 'b ', ' ab', 'ab ', ' c', 'c ', ' c ']
    """
    out = []
    for word in _RUNS_OF_SPACE.sub(" ", text).split():
        w = f" {word} "
        for n in range(lo, hi + 1):
            out += [w[i:i + n] for i in range(max(1, len(w) - n + 1))]
            if len(w) <= n:       # a short word counts once
                break
    return out


def word_ngrams(text: str, lo: int, hi: int) -> list[str]:
    """Word n-grams (words of two or more word characters) of ``lo`` to ``hi``, as scikit-learn's ``word``.

    >>> word_ngrams("Do it, now a b", 1, 2)
    ['Do', 'it', 'now', 'Do it', 'it now']
    """
    tokens = _WORD_TOKEN.findall(text)
    return [" ".join(tokens[i:i + n]) for n in range(lo, hi + 1) for i in range(len(tokens) - n + 1)]


def ngram_features(sentences: list[str]):
    """Hashed character (2 to 5, within words) and word (1 to 2) n-grams of the normalized sentences,
    each family L2-normalized: a sparse matrix with ``2 * 2**HASH_BITS`` columns (no vocabulary to keep).

    Exactly scikit-learn's ``HashingVectorizer(analyzer=..., ngram_range=..., n_features=2**HASH_BITS,
    alternate_sign=False, preprocessor=rule_text)`` per family (tested against it): an n-gram's column is
    its signed 32-bit MurmurHash3 (seed 0) in absolute value modulo the columns, counted, each row divided
    by its length. Written here with ``mmh3`` so that a cold start does not import scikit-learn."""
    import mmh3
    from scipy.sparse import csr_matrix, hstack

    columns = 2 ** HASH_BITS
    blocks = []
    for analyzer, (lo, hi) in NGRAMS:
        grams = char_wb_ngrams if analyzer == "char_wb" else word_ngrams
        rows, cols = [], []
        for r, sentence in enumerate(sentences):
            hashed = [abs(mmh3.hash(g.encode("utf-8"), 0)) % columns for g in grams(rule_text(sentence), lo, hi)]
            cols += hashed
            rows += [r] * len(hashed)
        m = csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(sentences), columns))
        m.sum_duplicates()
        norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        m.data /= np.repeat(norms, np.diff(m.indptr))
        blocks.append(m)
    return hstack(blocks).tocsr()
