"""Refusal (``raglab.book.refusal``): the one refusal sentence, ``is_refusal`` on hand-worked replies, and
``choose_threshold`` (Youden's J = TPR - FPR, cuts midway between neighbouring scores, the lowest cut within
``tolerance`` of the best). The threshold is checked on hand-worked score lists with the arithmetic written out,
against scikit-learn's ``roc_curve`` (the best J and the questions it answers) and against a numpy brute force over
every candidate cut (the tolerance rule) on random scores."""
import numpy as np
import pytest

from raglab.book.refusal import REFUSAL, choose_threshold, is_refusal


def test_the_refusal_sentence():
    assert REFUSAL == "I can't find this in the documentation."


@pytest.mark.parametrize("reply", [
    "I can't find this in the documentation.",
    "i can't find this in the\n   documentation",                      # case, line wrapping, no full stop
    "Sorry. I can't find this in the documentation. [1]",              # the sentence inside a longer reply
    "",                                                                 # an empty reply declines
    "  \n ",
    "I could not find that in the sources.",
    "I cannot answer that from these documents.",
    "We don't know.",
    "The sources do not mention a phone number.",
    "That is not covered in the documentation.",
])
def test_replies_that_decline(reply):
    assert is_refusal(reply)


@pytest.mark.parametrize("reply", [
    "Use json.loads() [1].",
    "I can find this in the documentation: use json.loads() [1].",
    "The documentation does not require an API key [1].",
    "I don't knowingly store cookies [1].",                             # "know" must be a whole word
    "Use json.loads() [1]. " + "It parses JSON text [1]. " * 12 + "I don't know more.",  # past the first 300 characters
])
def test_replies_that_answer(reply):
    assert not is_refusal(reply)


def test_a_custom_refusal_sentence():
    assert is_refusal("Nothing on that here.", refusal="Nothing on that here.")
    assert not is_refusal("Nothing on that here.")


# ---------------------------------------------------------------- choose_threshold by hand

def test_two_separated_lists():
    # scores 0.1 0.2 | 0.8 0.9; cuts 0.15, 0.5, 0.85
    # J(0.15) = 2/2 - 1/2 = 0.5, J(0.5) = 2/2 - 0/2 = 1, J(0.85) = 1/2 - 0/2 = 0.5
    assert choose_threshold([0.9, 0.8], [0.2, 0.1]) == (0.5, 1.0)


def test_a_tie_goes_to_the_lowest_cut():
    # scores 0.1u 0.4a 0.6u 0.9a; cuts 0.25, 0.5, 0.75
    # J(0.25) = 2/2 - 1/2 = 0.5, J(0.5) = 1/2 - 1/2 = 0, J(0.75) = 1/2 - 0/2 = 0.5
    assert choose_threshold([0.4, 0.9], [0.1, 0.6], tolerance=0) == (0.25, 0.5)


def test_a_lower_cut_within_the_tolerance_wins():
    # 100 answerable at 0.9; 99 unanswerable at 0.1 and one at 0.6; cuts 0.35 and 0.75
    # J(0.35) = 1 - 1/100 = 0.99, J(0.75) = 1 - 0 = 1: 0.99 is within 0.02 of the best, and lower
    answerable, unanswerable = [0.9] * 100, [0.1] * 99 + [0.6]
    assert choose_threshold(answerable, unanswerable) == (0.35, pytest.approx(0.99))
    assert choose_threshold(answerable, unanswerable, tolerance=0) == (0.75, 1.0)
    # a generous tolerance takes the lowest cut of all
    assert choose_threshold([0.9, 0.8], [0.2, 0.1], tolerance=1) == (0.15, 0.5)


def test_the_threshold_is_rounded_to_four_places():
    # scores 0.12345u 0.67891a; one cut, (0.12345 + 0.67891) / 2 = 0.40118
    assert choose_threshold([0.67891], [0.12345]) == (0.4012, 1.0)


# ---------------------------------------------------------------- choose_threshold on random scores

def random_scores(seed: int) -> tuple[list[float], list[float]]:
    """Answerable scores around 0.6 and unanswerable ones around 0.45, rounded to two places so that scores tie.
    The list lengths are primes below 50, so that no J (a multiple of 1 / (n_answerable x n_unanswerable)) lies
    exactly 0.02 below another."""
    rng = np.random.default_rng(seed)
    primes = [7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]
    n_a, n_u = rng.choice(primes, 2)
    return (np.round(rng.normal(0.6, 0.15, n_a), 2).tolist(), np.round(rng.normal(0.45, 0.15, n_u), 2).tolist())


def test_the_best_j_and_the_questions_answered_equal_roc_curve():
    from sklearn.metrics import roc_curve

    for seed in range(100):
        answerable, unanswerable = random_scores(seed)
        scores = np.array(answerable + unanswerable)
        fpr, tpr, cuts = roc_curve([1] * len(answerable) + [0] * len(unanswerable), scores, drop_intermediate=False)
        j = tpr - fpr
        # roc_curve answers a score >= its cut (its cuts fall, best first); the lowest cut with the best J (ties are
        # exact, 1e-9 is room for rounding)
        best = int(np.flatnonzero(j >= j.max() - 1e-9)[-1])
        threshold, ours = choose_threshold(answerable, unanswerable, tolerance=1e-9)
        assert ours == pytest.approx(j[best], abs=1e-12), seed
        assert np.array_equal(scores >= threshold, scores >= cuts[best]), seed


def test_the_tolerance_rule_equals_a_brute_force_over_every_cut():
    for seed in range(100):
        answerable, unanswerable = random_scores(seed)
        a, u = np.array(answerable), np.array(unanswerable)
        values = np.unique(np.concatenate([a, u]))
        cuts = (values[:-1] + values[1:]) / 2
        j = (a[:, None] >= cuts).mean(axis=0) - (u[:, None] >= cuts).mean(axis=0)
        first = int(np.flatnonzero(j >= j.max() - 0.02)[0])
        threshold, ours = choose_threshold(answerable, unanswerable)
        assert threshold == round(float(cuts[first]), 4), seed
        assert ours == pytest.approx(j[first], abs=1e-12), seed


@pytest.mark.parametrize("answerable,unanswerable", [([], [0.2, 0.4]), ([0.5, 0.7], []), ([0.5], [0.5]), ([], [])])
def test_no_cut_to_choose_is_a_clear_error(answerable, unanswerable):
    with pytest.raises(ValueError, match=f"no cut to choose: {len(answerable)} answerable and {len(unanswerable)} unanswerable"):
        choose_threshold(answerable, unanswerable)
