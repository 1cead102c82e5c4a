"""The rerankers (raglab/book/rerank.py). ``best_sentence`` and ``rerank_by_best_sentence`` are checked against a
numpy brute force (a loop over every sentence vector, the largest cosine kept); ``SentenceMaxReranker`` against
a hand-worked example and against its blend, alpha x best-sentence cosine + (1 - alpha) x fused score / top fused
score, computed in the test with fake embedders; ``CrossEncoderReranker`` with a fake model whose scores are
known; ``evidence_strength`` is the top score."""
import hashlib
import math

import numpy as np
import pytest

from raglab.base.records import Hit
from raglab.book.rerank import (CrossEncoderReranker, SentenceMaxReranker, best_sentence, evidence_strength,
                                rerank_by_best_sentence)


def unit_rows(rng, n, dim):
    v = rng.normal(size=(n, dim))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def brute_best(q, matrix) -> float:
    """The largest cosine between ``q`` and one row of ``matrix``, one row at a time."""
    best = -math.inf
    for row in matrix:
        best = max(best, float(np.dot(q, row) / (np.linalg.norm(q) * np.linalg.norm(row))))
    return best


def hits_of(fused: list[float], ranks: list[dict] | None = None) -> list[Hit]:
    """Fused hits c0, c1, ... in this order (ranks from 1), with the component ranks given."""
    ranks = ranks or [{} for _ in fused]
    return [Hit(f"c{i}", f"doc{i}", s, i + 1, r) for i, (s, r) in enumerate(zip(fused, ranks))]


class TableEmbedder:
    """A fake embedder in two dimensions: the query is (1, 0) and a sentence is (c, sqrt(1 - c^2)), so its cosine
    to the query is ``c``, looked up exactly (an unknown sentence is a ``KeyError``: the split must be the
    expected one)."""

    def __init__(self, cosines: dict[str, float]):
        self.cosines, self.encoded = cosines, []

    def encode(self, texts, progress=True):
        self.encoded.append((list(texts), progress))
        return np.array([[c, math.sqrt(1 - c * c)] for c in (self.cosines[t] for t in texts)])

    def encode_query(self, query):
        return np.array([1.0, 0.0])


class HashedEmbedder:
    """A fake embedder: each text is a unit vector drawn from a generator seeded by the text's sha1."""

    def vector(self, text):
        v = np.random.default_rng(int(hashlib.sha1(text.encode()).hexdigest(), 16)).normal(size=8)
        return v / np.linalg.norm(v)

    def encode(self, texts, progress=True):
        return np.array([self.vector(t) for t in texts])

    def encode_query(self, query):
        return self.vector("query: " + query)


class Untouchable:
    """An embedder or model that must not be called."""

    def __getattr__(self, name):
        raise AssertionError(f"{name} was called")


# ---------------------------------------------------------------- best sentence, against a loop

def test_best_sentence_is_the_largest_cosine_of_each_candidates_sentences():
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = unit_rows(rng, 1, 12)[0]
        candidates = [unit_rows(rng, int(rng.integers(1, 8)), 12) for _ in range(int(rng.integers(1, 10)))]
        assert best_sentence(q, candidates) == pytest.approx([brute_best(q, m) for m in candidates], abs=1e-12)


def test_rerank_by_best_sentence_takes_unit_vectors_and_sorts_best_first():
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.normal(size=6) * 3                                    # not unit length: the function scales it
        candidates = [(f"c{i}", rng.normal(size=(int(rng.integers(1, 6)), 6)) * 5) for i in range(8)]
        best = {cid: brute_best(q, vectors) for cid, vectors in candidates}
        got = rerank_by_best_sentence(q, candidates)
        assert [cid for cid, _ in got] == sorted(best, key=lambda cid: -best[cid])
        assert all(score == pytest.approx(best[cid], abs=1e-12) for cid, score in got)


def test_rerank_by_best_sentence_keeps_the_fused_order_on_a_tie():
    # both candidates hold a sentence pointing the query's way: cosine 1 each
    tied = [("z", [[2.0, 0.0]]), ("a", [[0.0, 1.0], [5.0, 0.0]])]
    assert rerank_by_best_sentence([3.0, 0.0], tied) == [("z", 1.0), ("a", 1.0)]
    assert rerank_by_best_sentence([3.0, 0.0], tied[::-1]) == [("a", 1.0), ("z", 1.0)]


# ---------------------------------------------------------------- the sentence-max reranker

WORKED = {"Alpha is red.": 0.2, "Alpha is round.": 0.3, "Beta is blue.": 0.9, "Beta is flat.": 0.1,
          "Gamma is green.": 0.6, "Delta is dull.": 0.5}
WORKED_TEXTS = ["Alpha is red. Alpha is round.", "Beta is blue. Beta is flat.", "Gamma is green.", "Delta is dull."]


def test_the_worked_example():
    """alpha 0.7, fused 0.05, 0.04, 0.025, 0.02 (top 0.05):
    c0: 0.7 x 0.3 + 0.3 x 0.05/0.05  = 0.21 + 0.30 = 0.51
    c1: 0.7 x 0.9 + 0.3 x 0.04/0.05  = 0.63 + 0.24 = 0.87
    c2: 0.7 x 0.6 + 0.3 x 0.025/0.05 = 0.42 + 0.15 = 0.57
    c3: 0.7 x 0.5 + 0.3 x 0.02/0.05  = 0.35 + 0.12 = 0.47"""
    embedder = TableEmbedder(WORKED)
    ranks = [{"dense": 1, "bm25": 3}, {"dense": 2}, {"bm25": 1}, {"dense": 4, "bm25": 2}]
    got = SentenceMaxReranker(embedder, alpha=0.7).rerank("q", hits_of([0.05, 0.04, 0.025, 0.02], ranks), WORKED_TEXTS)
    assert [h.id for h in got] == ["c1", "c2", "c0", "c3"]
    assert [h.score for h in got] == pytest.approx([0.87, 0.57, 0.51, 0.47], abs=1e-12)
    assert [h.rank for h in got] == [1, 2, 3, 4]
    assert [h.ranks for h in got] == [{"dense": 2, "fused": 2}, {"bm25": 1, "fused": 3},
                                      {"dense": 1, "bm25": 3, "fused": 1}, {"dense": 4, "bm25": 2, "fused": 4}]
    assert [h.doc for h in got] == ["doc1", "doc2", "doc0", "doc3"]
    # every sentence embedded in one call, without a progress bar
    assert embedder.encoded == [(list(WORKED), False)]


WORDS = ["parcel", "refund", "label", "courier", "invoice", "warranty", "damage", "receipt", "address", "tracking"]


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.7, 1.0])
def test_scores_are_the_blend_computed_by_hand_on_random_chunks(alpha):
    embedder, rng = HashedEmbedder(), np.random.default_rng(2)
    for _ in range(10):
        n = int(rng.integers(1, 9))
        chunk_sentences = [[" ".join(rng.choice(WORDS, 4)).capitalize() + "." for _ in range(int(rng.integers(1, 5)))]
                           for _ in range(n)]
        fused = sorted(rng.uniform(0.01, 0.04, n).round(3), reverse=True)     # rounded: some ties
        q = embedder.encode_query("where is my parcel")
        best = [max(float(q @ embedder.vector(s)) for s in group) for group in chunk_sentences]
        want = [alpha * b + (1 - alpha) * f / max(fused) for b, f in zip(best, fused)]
        order = sorted(range(n), key=lambda i: (-want[i], i))
        got = SentenceMaxReranker(embedder, alpha).rerank("where is my parcel", hits_of(fused),
                                                          [" ".join(group) for group in chunk_sentences])
        assert [h.id for h in got] == [f"c{i}" for i in order]
        assert [h.score for h in got] == pytest.approx([want[i] for i in order], abs=1e-9)
        assert [h.rank for h in got] == list(range(1, n + 1))
        assert [h.ranks["fused"] for h in got] == [i + 1 for i in order]
        if alpha == 1.0:   # the documented equivalence: alpha 1 is rerank_by_best_sentence's order
            vectors = [(f"c{i}", embedder.encode(group)) for i, group in enumerate(chunk_sentences)]
            assert [h.id for h in got] == [cid for cid, _ in rerank_by_best_sentence(q, vectors)]


def test_a_tie_keeps_the_fused_order():
    embedder = TableEmbedder({"Same words.": 0.5})
    got = SentenceMaxReranker(embedder, alpha=1.0).rerank("q", hits_of([0.03, 0.02, 0.01]), ["Same words."] * 3)
    assert [h.id for h in got] == ["c0", "c1", "c2"] and [h.score for h in got] == [0.5, 0.5, 0.5]


def test_with_no_fused_score_the_sentences_alone_count():
    """All fused scores 0: no division by the top one, the score is alpha x best cosine."""
    got = SentenceMaxReranker(TableEmbedder(WORKED), alpha=0.7).rerank("q", hits_of([0.0] * 4), WORKED_TEXTS)
    assert [h.id for h in got] == ["c1", "c2", "c3", "c0"]
    assert [h.score for h in got] == pytest.approx([0.63, 0.42, 0.35, 0.21], abs=1e-12)


# ---------------------------------------------------------------- the cross-encoder, with a fake model

class FakeCrossEncoder:
    """Returns ``scores`` for any pairs; records the pairs, the progress bar and whether autocast was on."""

    def __init__(self, scores):
        self.scores = scores

    def predict(self, pairs, show_progress_bar=True):
        import torch

        self.pairs, self.progress = pairs, show_progress_bar
        self.autocast = torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
        return self.scores


def test_the_cross_encoder_reads_each_pair_and_orders_by_its_score():
    model = FakeCrossEncoder(np.array([0.1, 2.5, -1.0, 2.5], dtype=np.float32))
    texts = ["first text", "second text", "third text", "fourth text"]
    got = CrossEncoderReranker(model).rerank("the question", hits_of([0.04, 0.03, 0.02, 0.01]), texts)
    assert model.pairs == [("the question", t) for t in texts] and model.progress is False and not model.autocast
    assert [h.id for h in got] == ["c1", "c3", "c0", "c2"]            # c1 and c3 tie at 2.5: fused order
    assert [h.score for h in got] == pytest.approx([2.5, 2.5, 0.1, -1.0])
    assert all(type(h.score) is float for h in got)
    assert [h.rank for h in got] == [1, 2, 3, 4] and [h.ranks["fused"] for h in got] == [2, 4, 1, 3]


def test_a_two_column_output_is_read_by_its_last_column():
    model = FakeCrossEncoder([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    got = CrossEncoderReranker(model).rerank("q", hits_of([0.03, 0.02, 0.01]), ["a", "b", "c"])
    assert [(h.id, h.score) for h in got] == [("c1", 0.8), ("c2", 0.5), ("c0", 0.1)]


def test_bfloat16_predicts_under_autocast():
    model = FakeCrossEncoder([1.0, 2.0])
    got = CrossEncoderReranker(model, precision="bfloat16").rerank("q", hits_of([0.02, 0.01]), ["a", "b"])
    assert model.autocast and [h.id for h in got] == ["c1", "c0"]


# ---------------------------------------------------------------- evidence strength, no candidates

def test_evidence_strength_is_the_top_score_and_zero_without_hits():
    got = CrossEncoderReranker(FakeCrossEncoder([0.2, 3.5, 1.0])).rerank("q", hits_of([0.03, 0.02, 0.01]), ["a", "b", "c"])
    assert evidence_strength(got) == 3.5
    assert evidence_strength([Hit("x#1", "x", 0.42, 1)]) == 0.42
    assert evidence_strength([]) == 0.0


def test_no_candidates_give_no_hits_and_call_no_model():
    assert SentenceMaxReranker(Untouchable()).rerank("q", [], []) == []
    assert CrossEncoderReranker(Untouchable()).rerank("q", [], []) == []
    assert rerank_by_best_sentence([1.0, 0.0], []) == []
    assert best_sentence(np.array([1.0, 0.0]), []) == []
