"""The refusal thresholds the corpora ship with (``raglab.infra.corpora.threshold_for``) are the ones
``raglab.book.refusal.choose_threshold`` picks on each corpus's golden set with the corpus's default assistant
(slow: it builds both assistants and retrieves for every golden question)."""
import pytest

from raglab.book.refusal import choose_threshold


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["python-docs", "helpcenter"])
def test_thresholds_are_the_ones_the_golden_sets_choose(corpus):
    """Recompute each corpus's refusal threshold from its golden set (as notebook 04 does)."""
    from raglab.infra.assemble import build_assistant
    from raglab.infra.corpora import golden_path, threshold_for
    from raglab.infra.corpus import load_corpus
    from raglab.evaluation.golden import load_golden, user_for

    a = build_assistant(corpus, "small")  # the corpus's default set-up, which the threshold was chosen for
    questions = load_golden(golden_path(corpus, "small"), load_corpus(corpus, "small"))
    strength = {q.id: a.retrieve(q.question, user_for(q))[1] for q in questions}
    threshold, j = choose_threshold([strength[q.id] for q in questions if q.type != "unanswerable"],
                                    [strength[q.id] for q in questions if q.type == "unanswerable"])
    assert threshold == pytest.approx(threshold_for(corpus, "small"), abs=0.01) and j > 0.4

