"""RRF against the course's worked example and a hand computation; FAISS against numpy brute force."""
import numpy as np
import pytest

from raglab.book.fusion import rrf
from raglab.infra.stores.faiss_store import FaissStore


def test_rrf_course_example():
    fused = rrf({"dense": ["A", "B", "C"], "bm25": ["C", "A", "D"]}, k=60)
    assert [d for d, _ in fused] == ["A", "C", "B", "D"]
    assert [round(s, 6) for _, s in fused] == [0.032522, 0.032266, 0.016129, 0.015873]


def test_weighted_rrf_by_hand():
    fused = dict(rrf({"dense": ["A", "B"], "bm25": ["B", "A"]}, k=1, weights={"dense": 2.0, "bm25": 1.0}))
    assert fused["A"] == pytest.approx(2 / 2 + 1 / 3)
    assert fused["B"] == pytest.approx(2 / 3 + 1 / 2)
    assert rrf({"x": []}) == []


@pytest.fixture(scope="module")
def vectors():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(500, 32)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _brute(x, q, k, allowed=None):
    scores = x @ q
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    order = np.argsort(-scores, kind="stable")[:k]
    return [int(i) for i in order if np.isfinite(scores[i])]


def test_flat_search_equals_numpy_brute_force_with_and_without_filter(vectors):
    store = FaissStore(32, "flat")
    store.add(vectors)
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = vectors[rng.integers(500)] + rng.normal(scale=0.1, size=32).astype(np.float32)
        allowed = rng.random(500) < 0.2
        assert [r for r, _ in store.search(q, 10)] == _brute(vectors, q, 10)
        got = store.search(q, 10, allowed)
        assert [r for r, _ in got] == _brute(vectors, q, 10, allowed)
        assert all(allowed[r] for r, _ in got)
        assert np.allclose([s for _, s in got], vectors[[r for r, _ in got]] @ q, atol=1e-5)


def test_filter_with_fewer_allowed_rows_than_k_and_none(vectors):
    store = FaissStore(32, "flat")
    store.add(vectors)
    allowed = np.zeros(500, bool)
    allowed[[3, 9]] = True
    assert sorted(r for r, _ in store.search(vectors[0], 10, allowed)) == [3, 9]
    assert store.search(vectors[0], 10, np.zeros(500, bool)) == []


def test_hnsw_finds_the_exact_neighbours_on_a_small_set_and_respects_filters(vectors, tmp_path):
    store = FaissStore(32, "hnsw")
    store.add(vectors)
    rng = np.random.default_rng(2)
    recall = []
    for _ in range(20):
        q = vectors[rng.integers(500)]
        allowed = rng.random(500) < 0.1
        got = [r for r, _ in store.search(q, 10, allowed)]
        assert all(allowed[r] for r in got) and len(got) == 10
        recall.append(len(set(got) & set(_brute(vectors, q, 10, allowed))) / 10)
    assert np.mean(recall) >= 0.95
    store.save(tmp_path / "h.faiss")
    again = FaissStore.load(tmp_path / "h.faiss", "hnsw")
    assert again.search(vectors[5], 3) == store.search(vectors[5], 3)
