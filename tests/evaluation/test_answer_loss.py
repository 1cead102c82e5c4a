"""scripts/answer_loss.py: the loss table of the answer step (where an answerable question loses its facts)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("answer_loss", ROOT / "scripts" / "answer_loss.py")
answer_loss = importlib.util.module_from_spec(spec)
spec.loader.exec_module(answer_loss)

# four hand-made questions: worked out by hand below
ROWS = [{"id": "a", "type": "fact", "evidence@5": True, "stage": "carried"},
        {"id": "b", "type": "fact", "evidence@5": False, "stage": "not in the top 5"},
        {"id": "c", "type": "howto", "evidence@5": True, "stage": "removed", "layer": "learned"},
        {"id": "d", "type": "howto", "evidence@5": False, "stage": "refused: sentence floor"}]


def test_summary_by_hand():
    s = answer_loss.summary(ROWS)
    assert s["answerable"] == 4
    assert s["evidence in the top 5"] == 0.5            # a, c
    assert s["facts in the top 5 sources"] == 0.75      # all but b
    assert s["facts carried"] == 0.25                   # a
    assert s["lost after retrieval (facts in the top 5, not carried)"] == 0.5          # c, d
    assert s["lost after retrieval (evidence in the top 5, not carried)"] == 0.25      # c


def test_table_counts_in_pipeline_order_and_by_type():
    lines = answer_loss.table(ROWS).splitlines()
    assert lines[0] == "| stage | questions | share | fact | howto |"
    body = [line.split(" | ") for line in lines[2:]]
    assert [b[0].lstrip("| ") for b in body] == ["not in the top 5", "removed: learned", "refused: sentence floor",
                                                   "carried", "all"]
    assert body[1][1:] == ["1", "25.0%", "0", "1 |"]
    assert body[-1][1:] == ["4", "100%", "2", "2 |"]


@pytest.mark.slow
def test_carried_is_exactly_what_the_scorer_counts_correct(workdir):
    """On the small profile's golden set, a question is 'carried' exactly when the scoreboard counts it
    correct (metrics.answer_correct, which the headline reports), every stage is a known one, and the
    retrieval and weak-evidence stages agree with what the answer itself shows."""
    from raglab.infra.assemble import build_assistant
    from raglab.evaluation.golden import load_golden, user_for
    from raglab.evaluation.metrics import answer_correct

    from raglab.evaluation.metrics import facts_present
    from raglab.evaluation.scoreboard import evaluate

    assistant = build_assistant("python-docs", "small", generator="extractive")
    questions = [q for q in load_golden("python-docs") if q.type != "unanswerable"]
    rows = {q.id: answer_loss.stage_of(assistant, q) for q in questions}
    # the scoreboard's own run (its retrieval and scoring path) counts the same questions correct
    scored = {r.id: r.correct for r in evaluate(assistant.retriever, questions, 5, assistant.mode, assistant)}
    assert {i for i, r in rows.items() if r["stage"] == "carried"} == {i for i, c in scored.items() if c == 1}
    index = assistant.retriever.index
    for q in questions:
        row, answer = rows[q.id], assistant.ask(q.question, user_for(q))
        assert row["stage"] in answer_loss.STAGES, row
        assert (row["stage"] == "carried") == bool(answer_correct(q, answer)), row
        # the stages' claims, read off the answer itself: facts absent from the retrieved chunks' own text
        # (not widened) when 'not in the top 5'; a weak-evidence refusal exactly when the answer says so
        raw = " ".join(index.chunk(r["id"]).text for r in answer.retrieved)
        if facts_present(raw, q.facts):
            assert row["stage"] != "not in the top 5", row
        if row["stage"] != "not in the top 5":
            assert (row["stage"] == "refused: weak evidence") == (answer.reason == "weak-evidence"), row
