"""Tuning reads dev only: the refusal threshold of a corpus's default assistant, chosen from data.

On a split golden set (the full docs') only the ``dev`` questions are loaded, so the test split is
never seen by any choice; on an unsplit set (the small profile's) every question is used and the
result is labelled in-sample. ``raglab tune`` prints the choice next to the value the registry
(``raglab.infra.corpora``) holds; ``tests/evaluation/test_tuning.py`` checks they agree.

The other defaults (heading-aware chunks with the prefix, the title field, release-note demotion,
no reranker) were chosen on the same dev split in the lab recorded in ``evals/full_docs_lab.md``.
"""
from __future__ import annotations

from raglab.book.refusal import choose_threshold
from raglab.infra.assemble import build_assistant
from raglab.infra.calibration import record
from raglab.infra.corpora import registered, threshold_for
from raglab.infra.corpus import load_corpus
from raglab.evaluation.golden import Question, golden_file, load_golden, user_for


def tuning_questions(corpus: str, profile: str, golden=None) -> tuple[list[Question], str]:
    """The questions a choice may read, and what they are: ``dev`` of a split set, else ``in-sample``."""
    questions = load_golden(golden or golden_file(corpus, profile), load_corpus(corpus, profile))
    if any(q.split for q in questions):
        return [q for q in questions if q.split == "dev"], "dev"
    return questions, "in-sample"


def evidence_strengths(assistant, questions: list[Question]) -> dict[str, float]:
    """The evidence strength the assistant would refuse on, for each question (no answer is generated)."""
    return {q.id: assistant.retrieve(q.question, user_for(q))[1] for q in questions}


def tune_threshold(corpus: str = "python-docs", profile: str = "full", golden=None, save: bool = False) -> dict:
    """Choose the refusal threshold of the corpus's default assistant on the tuning questions
    (``choose_threshold``: Youden's J, lowest cut within 0.02 of the best). For a folder of the user's
    own, ``registry`` is the threshold calibrated from the folder, and ``save`` records the choice in
    its index manifest in its place (``raglab.infra.calibration``)."""
    questions, basis = tuning_questions(corpus, profile, golden)
    assistant = build_assistant(corpus, profile)
    strength = evidence_strengths(assistant, questions)
    answerable = [strength[q.id] for q in questions if q.type != "unanswerable"]
    unanswerable = [strength[q.id] for q in questions if q.type == "unanswerable"]
    threshold, j = choose_threshold(answerable, unanswerable)
    signal = "rerank" if assistant.rerank else "dense"
    current = threshold_for(corpus, profile, signal) if registered(corpus) else assistant.threshold
    if save:
        if registered(corpus):
            raise ValueError(f"{corpus!r} is a bundled corpus: its thresholds live in raglab/infra/corpora.py, not in an index")
        record(assistant.retriever.index, {"threshold": threshold, "signal": signal, "method": (
            f"golden set {golden or golden_file(corpus, profile)}: Youden's J {round(j, 4)} on "
            f"{len(questions)} {basis} questions")})
    return {"corpus": corpus, "profile": profile, "basis": basis, "signal": signal, "threshold": threshold,
            "youden_j": round(j, 4), "registry": current, "saved": save,
            "questions": {q.id: q.type for q in questions}, "strength": {k: round(v, 6) for k, v in strength.items()}}


def format_tuning(result: dict) -> str:
    """One line: the choice, what it was chosen on, and whether the registry holds it."""
    same = abs(result["threshold"] - result["registry"]) < 1e-4
    line = (f"{result['corpus']} ({result['profile']}): refusal threshold on the {result['signal']} signal "
            f"{result['threshold']} (J = {result['youden_j']}) chosen on {len(result['questions'])} "
            f"{result['basis']} questions; ")
    if not registered(result["corpus"]):
        return line + (f"recorded in the folder's index in place of {result['registry']}" if result.get("saved")
                       else f"the folder's index holds {result['registry']} (--save records this choice)")
    return line + f"raglab.infra.corpora holds {result['registry']}" + ("" if same else "  <- differs: update raglab/infra/corpora.py")
