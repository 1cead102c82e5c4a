"""The course's one rule for a choice (raglab.evaluation.statistics.choose), against scipy's paired bootstrap as an
independent reference, and its properties: it keeps the default unless the change is better on dev."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from raglab.evaluation.statistics import RULE, choose


def scipy_interval(a, b):
    """The 95% percentile interval of the mean paired difference, by scipy (resampling whole questions)."""
    d = np.asarray(b, float) - np.asarray(a, float)
    res = stats.bootstrap((d,), np.mean, n_resamples=20000, method="percentile", random_state=1)
    return res.confidence_interval.low, res.confidence_interval.high


@pytest.mark.parametrize("seed", range(12))
def test_the_verdict_is_scipys_wherever_the_interval_is_clear_of_0(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(15, 40))
    a = rng.choice([0, 0.25, 0.5, 1.0], size=n)
    b = np.clip(a + rng.normal(rng.choice([-0.3, 0.0, 0.3]), 0.3, size=n), 0, 1)
    low, high = scipy_interval(a, b)
    c = choose(list(a), list(b), "old", "new")
    assert abs(c.diff - float(np.mean(b - a))) < 1e-4
    if min(abs(low), abs(high)) > 0.02:           # far enough from 0 that two resamplings cannot disagree
        want = "better" if low > 0 else "worse" if high < 0 else "no detectable difference"
        assert c.verdict == want, (c, low, high)
        assert c.kept == ("new" if want == "better" else "old")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.2, 0.5, 1.0]), min_size=2, max_size=30), st.data())
def test_swapping_the_two_settings_mirrors_the_verdict(a, data):
    b = data.draw(st.lists(st.sampled_from([0.0, 0.2, 0.5, 1.0]), min_size=len(a), max_size=len(a)))
    forward, backward = choose(a, b, "x", "y"), choose(b, a, "y", "x")
    mirror = {"better": "worse", "worse": "better", "no detectable difference": "no detectable difference"}
    assert backward.verdict == mirror[forward.verdict]
    assert forward.diff == -backward.diff


def test_no_change_is_no_detectable_difference_and_keeps_the_default():
    c = choose([0.5, 1.0, 0.0] * 6, [0.5, 1.0, 0.0] * 6, "20 candidates", "6 candidates")
    assert (c.verdict, c.kept) == ("no detectable difference", "20 candidates")


def test_the_printed_choice_names_the_split_the_numbers_and_the_rule():
    text = str(choose([0.0] * 10, [1.0] * 10, "b = 0.75", "b = 1.0"))
    assert text.startswith("dev, MRR@10, b = 1.0 minus b = 0.75, paired over 10 questions: +1.000 [+1.000, +1.000]")
    assert "better; keep b = 1.0" in text and RULE in text


def test_scores_on_different_questions_are_refused():
    with pytest.raises(ValueError, match="same questions"):
        choose([1.0, 0.0], [1.0])
