"""The embedding stage's arithmetic (raglab/book/embed.py): exact dense search against FAISS's exact
inner-product index (``faiss.IndexFlatIP``) on random unit vectors; unit rows from ``to_unit_length``; mean
pooling against a loop over the tokens. No model is loaded."""
import faiss
import numpy as np
import pytest

from raglab.book.embed import exact_search, mean_pool, to_unit_length


def unit_rows(rng, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("seed,n,dim,k", [(0, 500, 32, 10), (1, 2000, 384, 5), (2, 50, 8, 50), (3, 7, 16, 3)])
def test_exact_search_equals_faiss_flat_inner_product(seed, n, dim, k):
    rng = np.random.default_rng(seed)
    vectors, queries = unit_rows(rng, n, dim), unit_rows(rng, 20, dim)
    index = faiss.IndexFlatIP(dim)
    index.add(vectors)
    scores, rows = index.search(queries, k)
    for q, their_rows, their_scores in zip(queries, rows, scores):
        ours = exact_search(q, vectors, k)
        np.testing.assert_allclose([s for _, s in ours], their_scores, atol=1e-5)
        # the same rows, but for neighbours whose cosines float32 arithmetic cannot tell apart
        gaps = np.abs(np.diff(their_scores))
        clear = np.ones(k, dtype=bool)
        clear[:-1] &= gaps > 1e-5
        clear[1:] &= gaps > 1e-5
        assert [r for (r, _), c in zip(ours, clear) if c] == [int(r) for r, c in zip(their_rows, clear) if c]


def test_exact_search_breaks_ties_by_row_and_returns_at_most_k():
    vectors = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    assert exact_search(np.array([1.0, 0.0]), vectors, 3) == [(1, 1.0), (3, 1.0), (0, 0.0)]
    assert len(exact_search(np.array([1.0, 0.0]), vectors, 10)) == 4


def test_normalize_gives_unit_rows_with_the_same_direction():
    v = np.random.default_rng(4).standard_normal((100, 16))
    u = to_unit_length(v)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(u * np.linalg.norm(v, axis=1, keepdims=True), v, rtol=1e-12)


def test_mean_pool_equals_the_mean_of_the_real_tokens():
    rng = np.random.default_rng(5)
    tokens = rng.standard_normal((6, 9, 4))
    mask = (np.arange(9)[None, :] < rng.integers(1, 10, size=6)[:, None]).astype(np.int64)
    expected = np.array([tokens[t][mask[t] == 1].mean(axis=0) for t in range(6)])
    np.testing.assert_allclose(mean_pool(tokens, mask), expected, rtol=1e-12)
