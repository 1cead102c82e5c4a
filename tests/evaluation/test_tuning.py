"""Tuning reads dev only, and the defaults in raglab.infra.corpora are what dev chooses.

- ``tune_threshold`` on the split golden set hands the assistant the dev questions and nothing else;
- the committed dev run (``evals/results/python-docs-full-tuning.json``, made by
  ``RAGLAB_PROFILE=full raglab tune --out ...``) holds exactly the dev questions, and the threshold
  ``choose_threshold`` picks from its evidence strengths is the registry's;
- the retrieval defaults are the configuration the lab's selection rule (``full_lab.dev_choice``)
  picks from its dev table (``evals/full_docs_lab.md``), and the rule picks differently when the
  table says otherwise.
"""
import hashlib
import json
from pathlib import Path

import pytest

from raglab.base import config
from raglab.book.refusal import choose_threshold
from raglab.infra.corpora import entry, threshold_for
from raglab.evaluation import tuning
from raglab.evaluation.full_lab import dev_choice, lab_levers

EVALS = Path(config.PROJECT_ROOT, "evals")
GOLDEN = EVALS / "python_docs_full.jsonl"


def split_rule(qid: str) -> str:
    """The split rule of evals/README.md, recomputed here rather than read from the file."""
    return "test" if int(hashlib.sha256(qid.encode("utf-8")).hexdigest(), 16) % 5 < 3 else "dev"


def golden_ids() -> dict[str, str]:
    return {json.loads(line)["id"]: split_rule(json.loads(line)["id"])
            for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()}


class RecordingAssistant:
    """Stands in for the assistant: records every question it is asked about."""

    rerank = False

    def __init__(self):
        self.asked = []

    def retrieve(self, question, user=None):
        self.asked.append(question)
        return [], 0.9 if question.endswith("?") else 0.1, []


def test_tuning_hands_the_assistant_dev_questions_only(monkeypatch):
    recorder = RecordingAssistant()
    recorder.retrieve = lambda question, user=None: (recorder.asked.append(question), [], len(question) % 17 / 17, [])[1:]
    monkeypatch.setattr(tuning, "build_assistant", lambda corpus, profile: recorder)
    monkeypatch.setattr(tuning, "load_corpus", lambda corpus, profile: None)   # no corpus: skip the quote checks
    result = tuning.tune_threshold("python-docs", "full", GOLDEN)
    texts = {json.loads(line)["question"]: json.loads(line)["id"]
             for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()}
    ids = golden_ids()
    asked = [texts[q] for q in recorder.asked]
    assert sorted(asked) == sorted(i for i, s in ids.items() if s == "dev")
    assert not [i for i in asked if ids[i] == "test"]
    assert result["basis"] == "dev" and set(result["questions"]) == set(asked)


def test_an_unsplit_golden_set_is_tuned_in_sample_and_says_so(monkeypatch, tmp_path):
    golden = tmp_path / "mine.jsonl"
    golden.write_text("\n".join(json.dumps(r) for r in [
        {"id": "a", "type": "fact", "question": "Known?", "facts": [], "evidence": [{"doc": "x.txt"}]},
        {"id": "b", "type": "unanswerable", "question": "Unknown", "facts": [], "evidence": []}]))
    recorder = RecordingAssistant()
    monkeypatch.setattr(tuning, "build_assistant", lambda corpus, profile: recorder)
    monkeypatch.setattr(tuning, "load_corpus", lambda corpus, profile: None)
    result = tuning.tune_threshold("python-docs", "small", golden)
    assert result["basis"] == "in-sample" and len(recorder.asked) == 2
    assert result["threshold"] == 0.5                     # midway between 0.1 and 0.9


def test_committed_full_docs_threshold_is_what_dev_chooses():
    run = json.loads((EVALS / "results" / "python-docs-full-tuning.json").read_text())
    ids = golden_ids()
    assert run["basis"] == "dev" and set(run["questions"]) == {i for i, s in ids.items() if s == "dev"}
    answerable = [v for q, v in run["strength"].items() if run["questions"][q] != "unanswerable"]
    unanswerable = [v for q, v in run["strength"].items() if run["questions"][q] == "unanswerable"]
    threshold, j = choose_threshold(answerable, unanswerable)
    assert threshold == run["threshold"] == threshold_for("python-docs", "full", "dense")
    assert j > 0.6      # well above chance (J = 0 at random); 0.75 on the 158 dev questions of the two batches


def test_the_headline_run_used_the_same_evidence_on_dev():
    """The committed headline results and the tuning run agree on every dev question's evidence strength."""
    report = json.loads((EVALS / "results" / "python-docs-full.json").read_text())
    run = json.loads((EVALS / "results" / "python-docs-full-tuning.json").read_text())
    for qid, strength in run["strength"].items():
        assert report["evidence_strength"][qid] == pytest.approx(strength, abs=1e-5)


# What each candidate configuration of the lab means in raglab.infra.corpora's terms
# (chunking, rerank, title_weight, demote_factor).
MEANING = {
    "ref-headings-prefix-hybrid": (("headings", True), False, 0.0, 1.0),
    "C8-title-field-x0.5": (("headings", True), False, 0.5, 1.0),
    "C9-title-x0.5+changelog-0.5": (("headings", True), False, 0.5, 0.5),
    "course-baseline-words-150-30": (("words", False), False, 0.0, 1.0),
    "current-default-words-150-30-sentencemax": (("words", False), True, 0.0, 1.0),
}


def test_the_retrieval_defaults_are_the_dev_choice():
    """The selection rule of the lab: the highest dev MRR@10 among the reference and the configurations
    that beat it with a paired 95% interval above 0 (the interval rule alone)."""
    rows = lab_levers()
    assert len(rows) > 40 and sum(r["diff"] is None for r in rows) == 1
    chosen = dev_choice(rows)
    e = entry("python-docs")
    assert MEANING[chosen["name"]] == (e.chunking, e.rerank, e.title_weight, e.demote_factor)
    assert e.demote == ("whatsnew/",)


def test_the_selection_rule_follows_the_table():
    rows = lab_levers()
    flipped = [dict(r, mrr=0.99, lo=0.01, p=0.01, diff=0.2) if r["name"] == "C8-title-field-x0.5" else r for r in rows]
    assert dev_choice(flipped)["name"] == "C8-title-field-x0.5"
    none_better = [dict(r, lo=-0.01) if r["diff"] is not None else r for r in rows]
    assert dev_choice(none_better)["name"] == "ref-headings-prefix-hybrid"
    high_p = [dict(r, mrr=0.99, lo=0.01, p=0.5, diff=0.2) if r["name"] == "C8-title-field-x0.5" else r for r in rows]
    assert dev_choice(high_p)["name"] == "C8-title-field-x0.5"      # the p-value does not decide
