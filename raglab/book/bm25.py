"""BM25: keyword retrieval over chunks, in two versions that give the same scores.

``TextbookBM25`` is the version a course writes on the board: plain Python loops over the
documents, one ``Counter`` per document. ``BM25`` is the library version: every per-(term,
document) weight is computed once at build time and stored in a ``scipy.sparse`` CSC matrix
(documents x terms), so a query costs a sum of a few columns, proportional to the lengths
of the query terms' posting lists, not to the corpus. Taught in notebook 02.

Both score exactly the Lucene variant of Okapi BM25 (Robertson & Zaragoza, "The Probabilistic
Relevance Framework: BM25 and Beyond", 2009; the idf is the one of Lucene's
``BM25Similarity``, which adds 1 inside the log so it is never negative)::

    idf(t)      = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))
    score(q, d) = sum over t in q of idf(t) * f(t,d) * (k1 + 1) / (f(t,d) + k1 * (1 - b + b * |d| / avgdl))

with ``k1 = 1.5``, ``b = 0.75``, ``N`` documents, ``n(t)`` documents containing ``t``,
``f(t,d)`` occurrences of ``t`` in ``d`` and ``|d|`` the document's length in tokens after
``tokenize``. A query term repeated in the query counts once per occurrence (as in bm25s and
rank_bm25): ``"path path"`` weighs ``path`` twice. Terms outside the vocabulary add 0, and a
query with no token at all scores 0 everywhere.

Tokens. ``tokenize`` lowercases and keeps identifier characters (letters, digits, ``_``), so
``__init__``, ``dict_keys`` and ``KeyError`` (as ``keyerror``) stay whole; quotes, brackets and
other punctuation around words are dropped (the docs write code as ``"dict.keys()"``). A dotted
name gives its parts **and** the whole name: ``os.path.join`` -> ``os``, ``path``, ``join``,
``os.path.join``. The whole name is a rare token with a high idf, so a chunk that spells out the
exact dotted name outranks chunks that only mention its parts; the parts keep matching prose
such as "the path module" (measured: ``evals/results/bm25-tokens.md``). Version numbers follow
the same rule (``3.11`` -> ``3``, ``11``, ``3.11``).

References. bm25s (``method="lucene"``) ranks identically, but like Lucene 8 and later it leaves
out the constant factor ``k1 + 1``, so its scores are ours divided by 2.5; rank_bm25's
``BM25Okapi`` gives the same scores once its idf is replaced by Lucene's. ``tests/book/test_bm25.py``
checks both, and ``bench/bm25.py`` times this module against bm25s. An index is written to a file and read
back by ``raglab.infra.stores.bm25_file``.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from itertools import chain
from typing import Callable, Iterable

import numpy as np
import scipy.sparse as sp

K1, B = 1.5, 0.75
_TOKEN = re.compile(r"\w+(?:\.\w+)*")


def tokenize(text: str) -> list[str]:
    """Lowercase word and identifier tokens; a dotted name gives its parts, then itself.

    >>> tokenize('Call "os.path.join()" in __init__, or get a KeyError!')
    ['call', 'os', 'path', 'join', 'os.path.join', 'in', '__init__', 'or', 'get', 'a', 'keyerror']
    """
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if "." in tok:
            out.extend(tok.split("."))
        out.append(tok)
    return out


def lucene_idf(n, n_docs: int):
    """Lucene's BM25 idf of a term found in ``n`` of ``n_docs`` documents (``n`` a number, or an array
    of document frequencies: the sparse version computes every term's idf at once).

    >>> round(lucene_idf(1, 3), 6), lucene_idf(np.array([1, 3]), 3).round(6).tolist()
    (0.980829, [0.980829, 0.133531])
    """
    ratio = 1 + (n_docs - n + 0.5) / (n + 0.5)
    return np.log(ratio) if isinstance(ratio, np.ndarray) else math.log(ratio)


# ---------------------------------------------------------------- the textbook version

class TextbookBM25:
    """BM25 as a course writes it: a ``Counter`` per document and a loop over the query."""

    def __init__(self, texts: Iterable[str], k1: float = K1, b: float = B,
                 tokenizer: Callable[[str], list[str]] = tokenize):
        self.k1, self.b, self.tokenizer = k1, b, tokenizer
        self.docs = [tokenizer(text) for text in texts]
        self.n_docs = len(self.docs)
        self.avgdl = sum(len(doc) for doc in self.docs) / self.n_docs if self.n_docs else 1.0
        self.tf: list[Counter] = []   # term -> occurrences, one per document
        self.df: Counter = Counter()  # term -> number of documents containing it
        for doc in self.docs:
            counts = Counter(doc)
            self.tf.append(counts)
            self.df.update(counts.keys())

    def score(self, query: str, i: int) -> float:
        """BM25 score of document ``i`` for ``query``."""
        k1, b = self.k1, self.b
        dl = len(self.docs[i])
        total = 0.0
        for term in self.tokenizer(query):
            f = self.tf[i][term]
            if f == 0:
                continue
            idf = lucene_idf(self.df[term], self.n_docs)
            total += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / self.avgdl))
        return total

    def search(self, query: str, k: int = 10) -> list[tuple[int, float]]:
        """The ``k`` best ``(document, score)`` pairs with a positive score, best first."""
        scored = [(i, self.score(query, i)) for i in range(self.n_docs)]
        scored = [(i, s) for i, s in scored if s > 0]
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:k]


# ---------------------------------------------------------------- the sparse version

class BM25:
    """BM25 over a sparse matrix of precomputed weights: a query sums a few columns."""

    def __init__(self, texts: Iterable[str], k1: float = K1, b: float = B,
                 tokenizer: Callable[[str], list[str]] = tokenize):
        self.k1, self.b, self.tokenizer = k1, b, tokenizer
        docs = [tokenizer(text) for text in texts]
        n_docs = len(docs)
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=n_docs)
        vocab = {tok: i for i, tok in enumerate(dict.fromkeys(chain.from_iterable(docs)))}
        ids = np.fromiter(map(vocab.__getitem__, chain.from_iterable(docs)), dtype=np.int32,
                          count=int(lengths.sum()))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        counts = sp.csr_matrix((np.ones(len(ids)), ids, indptr), shape=(n_docs, len(vocab)))
        counts.sum_duplicates()  # one entry per (document, term), data = f(t, d)
        avgdl = float(lengths.sum()) / n_docs if lengths.sum() else 1.0
        self._init_arrays(vocab, lengths, avgdl, counts)

    def _init_arrays(self, vocab: dict, lengths: np.ndarray, avgdl: float, counts: sp.csr_matrix) -> None:
        """Turn term counts into BM25 weights, stored by column (one posting list per term)."""
        k1, b = self.k1, self.b
        n_docs = len(lengths)
        df = np.bincount(counts.indices, minlength=len(vocab))
        idf = lucene_idf(df, n_docs)
        f = counts.data
        dl = np.repeat(lengths, np.diff(counts.indptr)).astype(np.float64)
        weights = idf[counts.indices] * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl))
        csc = sp.csr_matrix((weights, counts.indices, counts.indptr), shape=counts.shape).tocsc()
        csc.sort_indices()
        self.vocab, self.lengths, self.avgdl = vocab, lengths, avgdl
        self._data, self._indices, self._indptr = csc.data, csc.indices, csc.indptr

    @property
    def weights(self) -> sp.csc_matrix:
        """The (documents x terms) matrix of BM25 weights (shares memory with the index)."""
        return sp.csc_matrix((self._data, self._indices, self._indptr), shape=(self.n_docs, self.vocab_size))

    @property
    def n_docs(self) -> int:
        """Number of indexed documents."""
        return len(self.lengths)

    @property
    def vocab_size(self) -> int:
        """Number of distinct tokens in the index."""
        return len(self.vocab)

    def term_ids(self, query: str) -> list[int]:
        """Column ids of the query's tokens, repeats kept, unknown tokens dropped."""
        get = self.vocab.get
        return [i for i in map(get, self.tokenizer(query)) if i is not None]

    def _mask(self, allowed) -> np.ndarray:
        """Check that ``allowed`` is a boolean mask with one entry per document."""
        mask = np.asarray(allowed)
        if mask.dtype != np.bool_ or mask.shape != (self.n_docs,):
            raise ValueError(f"allowed must be a boolean array of shape ({self.n_docs},), "
                             f"got {mask.dtype} {mask.shape}")
        return mask

    def scores(self, query: str, allowed: np.ndarray | None = None) -> np.ndarray:
        """BM25 score of every document (float64); ``-inf`` where ``allowed`` is False.

        Disallowed documents are never scored: only the weights of allowed postings are read.
        """
        data, indices, indptr = self._data, self._indices, self._indptr
        if allowed is None:
            out = np.zeros(self.n_docs)
            for t in self.term_ids(query):
                start, end = indptr[t], indptr[t + 1]
                out[indices[start:end]] += data[start:end]  # a column has each document once
            return out
        mask = self._mask(allowed)
        out = np.full(self.n_docs, -np.inf)
        out[mask] = 0.0
        for t in self.term_ids(query):
            start, end = indptr[t], indptr[t + 1]
            docs = indices[start:end]
            keep = np.flatnonzero(mask[docs])
            out[docs[keep]] += data[keep + start]
        return out

    def search(self, query: str, k: int = 10, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best ``(row, score)`` pairs with a positive score; ties go to the lower row."""
        return top_k(self.scores(query, allowed), k)


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(row, score)`` pairs with a positive score; ties go to the lower row.

    >>> top_k(np.array([0.5, 2.0, 0.0, 2.0, -np.inf]), 2)
    [(1, 2.0), (3, 2.0)]
    """
    rows = np.flatnonzero(scores > 0)
    if k <= 0 or len(rows) == 0:
        return []
    vals = scores[rows]
    if len(rows) > k:
        kth = vals[np.argpartition(vals, len(vals) - k)[len(vals) - k]]
        rows, vals = rows[vals >= kth], vals[vals >= kth]  # keeps every row tied with the k-th
    order = np.argsort(-vals, kind="stable")[:k]          # rows are increasing: ties stay in row order
    return [(int(r), float(s)) for r, s in zip(rows[order], vals[order])]
