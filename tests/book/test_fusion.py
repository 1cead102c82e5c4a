"""Reciprocal rank fusion (raglab/book/fusion.py) against ranx's ``ranx.fusion.rrf`` (Cormack, Clarke and
Büttcher, SIGIR 2009; ranks from 1, k = 60), and the course's worked example with its arithmetic written out."""
import random

import pytest

from raglab.book.fusion import RRF_K, rrf


def test_the_worked_example():
    # dense A, B, C and BM25 C, A, D: A is 1st and 2nd, C 3rd and 1st, B 2nd in one list, D 3rd in one
    fused = rrf({"dense": ["A", "B", "C"], "bm25": ["C", "A", "D"]})
    expected = [("A", 1 / 61 + 1 / 62), ("C", 1 / 63 + 1 / 61), ("B", 1 / 62), ("D", 1 / 63)]
    assert [d for d, _ in fused] == [d for d, _ in expected]
    assert [s for _, s in fused] == pytest.approx([s for _, s in expected], rel=1e-15)


def random_lists(seed: int) -> dict[str, list[str]]:
    """Two to four ranked lists of 1 to 30 distinct ids drawn from a pool of 40 (so they overlap)."""
    rnd = random.Random(seed)
    pool = [f"d{i}" for i in range(40)]
    return {f"r{n}": rnd.sample(pool, rnd.randint(1, 30)) for n in range(rnd.randint(2, 4))}


@pytest.mark.parametrize("k", [RRF_K, 1, 10])
def test_scores_equal_ranx_on_random_lists(k):
    from ranx import Run
    from ranx.fusion import rrf as ranx_rrf

    for seed in range(50):
        lists = random_lists(seed)
        # ranx reads a run's ranks from its scores: the best of n ids scores n, the last 1
        runs = [Run({"q": {d: float(len(ids) - i) for i, d in enumerate(ids)}}) for ids in lists.values()]
        theirs = ranx_rrf(runs, k=k).to_dict()["q"]
        ours = dict(rrf(lists, k=k))
        assert ours.keys() == theirs.keys()
        assert all(ours[d] == pytest.approx(theirs[d], rel=1e-12) for d in ours), seed


def test_best_first_and_ties_in_the_order_first_seen():
    for seed in range(50):
        lists = random_lists(seed)
        fused = rrf(lists)
        seen = list(dict.fromkeys(d for ids in lists.values() for d in ids))
        assert [d for d, _ in fused] == sorted(seen, key=lambda d: (-dict(fused)[d], seen.index(d)))


def test_weights_scale_each_list_and_a_missing_weight_drops_it():
    lists = {"dense": ["A", "B"], "bm25": ["B", "C"]}
    fused = dict(rrf(lists, weights={"dense": 2.0}))
    assert fused == pytest.approx({"A": 2 / 61, "B": 2 / 62 + 0 / 61, "C": 0 / 62})
