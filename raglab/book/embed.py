"""The embedding stage: text -> one unit-length vector, and the search that compares them.

A sentence-transformers model (the packaged all-MiniLM-L6-v2 by default) reads a text as tokens
(``[CLS] text [SEP]``) and, through its transformer layers, gives every token a vector that depends on
the tokens around it. The text's vector is the mean of its token vectors (mean pooling, padding left
out: ``mean_pool``), divided by its length (normalising: ``to_unit_length``). On unit vectors the cosine
similarity of two texts is the dot product of their vectors,

    cos(q, d) = q . d / (|q| |d|) = q . d      when |q| = |d| = 1,

so exact dense search is one matrix product and a sort (``exact_search``): what FAISS's ``IndexFlatIP``
computes, faster. Mean pooling over a siamese BERT, trained so that the cosine of two texts' vectors tracks
their meaning, is Sentence-BERT: Reimers and Gurevych, "Sentence-BERT: Sentence Embeddings using Siamese
BERT-Networks" (EMNLP 2019, arXiv:1908.10084); all-MiniLM-L6-v2 is one of its models. The model's forward pass in plain torch is ``raglab.infra.minilm``; embedding many
texts with a cache and length batches is ``raglab.infra.embedding_batches``; the ready-to-use ``Embedder``
(the packaged MiniLM, its cache file, its precision) is ``raglab.infra.embedder``'s.
Measurements and history: ``evals/results/embedding-notes.md``. Taught in notebook 02.
"""
from __future__ import annotations

import numpy as np


def mean_pool(token_vectors: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean of each text's token vectors, its padding left out: ``(texts, tokens, dim)`` vectors and a
    ``(texts, tokens)`` mask (1: a real token, 0: padding) -> ``(texts, dim)``. The model's forward pass
    does the same in torch (``raglab.infra.minilm``).

    >>> mean_pool(np.array([[[1.0, 0.0], [3.0, 2.0], [9.0, 9.0]]]), np.array([[1, 1, 0]]))
    array([[2., 1.]])
    """
    m = mask[..., None].astype(token_vectors.dtype)
    return (token_vectors * m).sum(1) / m.sum(1).clip(1e-9)


def to_unit_length(vectors: np.ndarray) -> np.ndarray:
    """Each row divided by its length: unit rows, whose dot product is their cosine.

    >>> to_unit_length(np.array([[3.0, 4.0]], dtype=np.float32))
    array([[0.6, 0.8]], dtype=float32)
    """
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-12)


def exact_search(query: np.ndarray, vectors: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` rows of ``vectors`` nearest ``query`` (all unit vectors): ``(row, cosine)`` pairs, best
    first, ties by row. Brute force: every row is scored.

    >>> [(row, round(cos, 6)) for row, cos in exact_search(np.array([0.6, 0.8]), np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]), 2)]
    [(2, 1.0), (1, 0.8)]
    """
    scores = vectors @ query
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return [(int(i), float(scores[i])) for i in order]


class FunctionEmbedder:
    """Any embedding function (a list of texts in, one vector a text out) as the retriever and the reranker call
    an embedder: ``encode`` many texts, ``encode_query`` one, each row scaled to length 1.

    >>> e = FunctionEmbedder(lambda texts: [[len(t), 0.0] for t in texts])
    >>> e.encode_query("four")
    array([1., 0.], dtype=float32)
    """

    def __init__(self, embed):
        self.embed = embed

    def encode(self, texts, progress: bool = False) -> np.ndarray:
        return to_unit_length(np.asarray(self.embed(list(texts)), dtype=np.float32))

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

