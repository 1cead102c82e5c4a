"""The sentence scorer (issue 36): its probability is a fitted logistic regression's (sklearn as the reference),
a signal with no weight cannot change a choice (the signal-free regression as the reference), the budget and
the threshold choose and refuse as hand-worked, and a refusal says its stage and number."""
import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from raglab.answerer.extractive import ExtractiveGenerator
from raglab.answerer.selection import SIGNALS, SentenceScorer, sentence_signals
from tests.stages.test_extractive import MATH, CosineTable, _source


def _fitted(seed=0, n=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(SIGNALS))) * rng.uniform(0.5, 3, len(SIGNALS)) + rng.normal(size=len(SIGNALS))
    y = (X[:, 4] + 0.5 * X[:, 5] - 0.3 * X[:, 2] + rng.normal(scale=0.7, size=n) > 0.5).astype(int)
    scaler = StandardScaler().fit(X)
    model = LogisticRegression(max_iter=2000).fit(scaler.transform(X), y)
    scorer = SentenceScorer(SIGNALS, tuple(scaler.mean_), tuple(scaler.scale_), tuple(model.coef_[0]),
                            float(model.intercept_[0]), threshold=0.2, words=40)
    return X, y, scaler, model, scorer


def test_the_probability_is_the_fitted_regressions():
    X, _, scaler, model, scorer = _fitted()
    assert np.allclose(scorer.probability(X), model.predict_proba(scaler.transform(X))[:, 1], atol=1e-9)


def test_a_signal_without_weight_chooses_as_the_signal_free_regression():
    X, _, scaler, model, scorer = _fitted(1)
    k = SIGNALS.index("cosine")
    blind = scorer.without("cosine")
    # the same regression over the other signals alone, computed here with numpy
    keep = [i for i in range(len(SIGNALS)) if i != k]
    z = (X[:, keep] - scaler.mean_[keep]) / scaler.scale_[keep]
    free = 1 / (1 + np.exp(-(z @ model.coef_[0][keep] + model.intercept_[0])))
    assert np.allclose(blind.probability(X), free)
    words = list(np.random.default_rng(2).integers(5, 30, len(X)))
    for rows in (slice(0, 30), slice(30, 55), slice(100, 140)):
        assert blind.choose(blind.probability(X[rows]), words[rows]) == \
            blind.choose(free[rows], words[rows])
    # and the signal did matter to the full scorer
    assert not np.allclose(scorer.probability(X), blind.probability(X))
    with pytest.raises(KeyError, match="no signal 'colour'"):
        scorer.without("colour")


def test_the_budget_and_the_threshold_as_hand_worked():
    s = SentenceScorer(("x",), (0.0,), (1.0,), (1.0,), 0.0, threshold=0.5, words=12)
    # best first: 0.9 (5 words); 0.7 (8) would pass 12, skipped; 0.6 (4) fits: 9; 0.55 fits with 3, not with 4
    assert s.choose(np.array([0.6, 0.9, 0.7, 0.55]), [4, 5, 8, 4]) == [1, 0]
    assert s.choose(np.array([0.6, 0.9, 0.7, 0.55]), [4, 5, 8, 3]) == [1, 0, 3]
    assert s.choose(np.array([0.3, 0.45]), [1, 1]) == []          # the best is under the threshold: refused
    assert s.choose(np.array([0.5, 0.1]), [10, 1]) == [0, 1]      # a sentence under the threshold may follow
    assert s.choose(np.array([0.5, 0.1]), [20, 1]) == [0]         # the first always fits, over the budget


def test_the_signals_of_hand_made_candidates():
    gen = ExtractiveGenerator(CosineTable({"greatest common": 0.8, "integer square root": 0.6}, default=0.2))
    sources = [_source(1, MATH), _source(2, "Other page. It says nothing about numbers at all here.", doc="o.txt")]
    sel = gen.selection("What is the greatest common divisor?", sources)
    X = sentence_signals(sel["cos"], sel["score"], sel["lexical"][0], sel["candidates"], sources)
    col = {name: X[:, i] for i, name in enumerate(SIGNALS)}
    texts = [c.plain for c in sel["candidates"]]
    best = texts.index(next(t for t in texts if "greatest common" in t))
    assert col["cosine"][best] == pytest.approx(0.8, abs=1e-6) and col["cosine below the question's best"][best] == 0
    assert col["hand-set rank (log)"][best] == 0 and col["hand-set score below the question's best"][best] == 0
    assert set(col["source rank"]) == {1.0, 2.0}
    assert all(t == (c.n == 1) for t, c in zip(col["top source"], sel["candidates"]))
    assert all(u == (c.api is not None) for u, c in zip(col["under an API line"], sel["candidates"]))
    assert (col["position in source"] >= 0).all() and (col["position in source"] <= 1).all()


def test_a_scorer_chooses_and_refuses_with_its_stage_and_number(tmp_path):
    gen = ExtractiveGenerator(CosineTable({"greatest common": 0.8, "integer square root": 0.6}, default=0.2))
    sources = [_source(1, MATH)]
    on_cosine = SentenceScorer(SIGNALS, (0.0,) * len(SIGNALS), (1.0,) * len(SIGNALS),
                               tuple(10.0 if s == "cosine" else 0.0 for s in SIGNALS), -5.0, threshold=0.5, words=12)
    gen.scorer = on_cosine
    out = gen.generate("What is the greatest common divisor?", sources)
    assert out.refusal is None and "greatest common divisor" in out.text and "square root" not in out.text
    # the hand-labelled sentence (cosine 0.6: probability 0.73) is the best for this question
    out = gen.generate("What is the integer square root?", [_source(1, MATH.replace("greatest common", "largest shared"))])
    assert "integer square root" in out.text
    strict = SentenceScorer(on_cosine.signals, on_cosine.mean, on_cosine.scale, on_cosine.coef, on_cosine.intercept,
                            threshold=0.99, words=12)
    gen.scorer = strict
    out = gen.generate("What is the greatest common divisor?", sources)
    assert out.refusal == {"stage": "sentence-score", "value": pytest.approx(1 / (1 + np.exp(-3.0)), abs=1e-4),
                           "threshold": 0.99}
    strict.save(tmp_path / "s.json")
    assert SentenceScorer.load(tmp_path / "s.json") == strict
    (tmp_path / "bad.json").write_text(json.dumps({"signals": list(SIGNALS), "mean": [0] * len(SIGNALS)}))
    with pytest.raises(ValueError, match=r"bad\.json: a sentence scorer needs the fields scale, coef, intercept"):
        SentenceScorer.load(tmp_path / "bad.json")


def test_the_floor_refusal_says_its_number():
    gen = ExtractiveGenerator(CosineTable({}, default=0.3))
    out = gen.generate("What is the greatest common divisor?", [_source(1, MATH)])
    assert out.refusal == {"stage": "sentence-floor", "value": pytest.approx(0.3, abs=1e-4), "threshold": 0.5}
