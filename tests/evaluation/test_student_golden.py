"""A student's own golden set (issue 15): the validator names every problem as file:line, the
RAGLAB_GOLDEN setting replaces the bundled set, `raglab golden check` exits 1 on problems, and
`raglab tune --golden FILE` tunes on the student's dev questions only.

The sets are built here from real pages of the small profile (quotes cut from the page texts), so
no model or index is needed."""
import json
from pathlib import Path

import pytest

from raglab.base import config
from raglab.infra.corpora import golden_path
from raglab.infra.corpus import load_corpus
from raglab.evaluation import tuning
from raglab.evaluation.golden import (
    STUDENT_MIX,
    TYPES,
    check_student_golden,
    golden_file,
    load_golden,
)
from raglab.surfaces import cli
from raglab.surfaces.cli import evaluate as cli_evaluate

PROJECT_SMALL = Path(config.PROJECT_ROOT, "evals", "python_docs_golden.jsonl")
TEMPLATE = Path(config.PROJECT_ROOT, "evals", "student_template.jsonl")
from raglab.book.refusal import REFUSAL  # noqa: E402


@pytest.fixture(scope="module")
def docs():
    return load_corpus("python-docs", "small")


def quote(doc, n: int) -> str:
    """Six consecutive words of a page (its n-th stretch): a real span, found once whitespace is folded."""
    words = doc.text.split()
    start = (40 + 9 * n) % max(1, len(words) - 10)
    return " ".join(words[start:start + 6])


def student_set(docs, mix=None) -> list[dict]:
    """A complete set in the shared format: by default exactly the required mix (30 questions),
    alternating dev and test so that both splits hold every type."""
    mix = mix or {t: n for t, n in STUDENT_MIX.items() if t in TYPES}
    pages = [d for d in docs if len(d.text.split()) > 400]
    records, n = [], 0
    for kind in TYPES:
        for i in range(mix.get(kind, 0)):
            n += 1
            page, other = pages[n % len(pages)], pages[(n + 5) % len(pages)]
            evidence = {"unanswerable": [], "multi": [{"doc": page.id, "quote": quote(page, i)},
                                                      {"doc": other.id, "quote": quote(other, i + 1)}]}
            records.append({"id": f"s-{n:03d}", "type": kind,
                            "question": f"Question {n} of my own: what does {page.id} say ({kind} {i})?",
                            "answer": REFUSAL if kind == "unanswerable" else f"answer {n}", "facts": [],
                            "evidence": evidence.get(kind, [{"doc": page.id, "quote": quote(page, i)}]),
                            "split": ("dev", "test")[n % 2]})
    return records


def write(path: Path, records: list, raw: dict[int, str] | None = None) -> Path:
    """Write records as JSONL; ``raw`` puts a literal line at a (1-based) line number."""
    lines = [json.dumps(r) for r in records]
    for lineno, text in sorted((raw or {}).items()):
        lines.insert(lineno - 1, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_complete_set_from_real_pages_passes(tmp_path, docs):
    path = write(tmp_path / "mine.jsonl", student_set(docs))
    report = check_student_golden(path, docs)
    assert report.problems == []
    assert report.questions == 30 and report.counts["fact"] == 15 and report.copies == []
    assert report.lines()[-1].startswith("ok")


def test_the_template_is_valid_apart_from_its_size(docs):
    report = check_student_golden(TEMPLATE, docs)
    assert all(p.startswith(f"{TEMPLATE}: ") and "needed" in p for p in report.problems), report.problems
    assert {q.type for q in load_golden(TEMPLATE, docs)} >= {"fact", "multi", "identifier", "unanswerable"}


def test_too_few_questions_and_a_type_missing_or_short(tmp_path, docs):
    path = write(tmp_path / "mine.jsonl", student_set(docs, {"fact": 15, "multi": 6, "unanswerable": 3}))
    problems = check_student_golden(path, docs).problems
    assert f"{path}: 24 questions, at least 30 needed" in problems
    assert f"{path}: no identifier questions, at least 4 needed" in problems
    assert f"{path}: 3 unanswerable questions, at least 5 needed" in problems
    assert not [p for p in problems if " fact " in p or " multi " in p]


def test_every_line_defect_is_reported_with_its_file_and_line(tmp_path, docs):
    records = student_set(docs)
    records[2]["evidence"] = [{"doc": records[2]["evidence"][0]["doc"], "quote": "words no page of the docs holds"}]
    records[4]["evidence"] = [{"doc": "library/nope.txt", "quote": "anything"}]
    records[6]["id"] = records[0]["id"]
    records[16]["evidence"] = records[16]["evidence"][:1]                      # a multi question with one item
    path = write(tmp_path / "mine.jsonl", records, raw={10: '{"id": "s-999", "type": "fact",'})
    report = check_student_golden(path, docs)
    doc3 = records[2]["evidence"][0]["doc"]
    expected = [f"{path}:3: s-003: evidence[0] quote not found in {doc3}: 'words no page of the docs holds'",
                f"{path}:5: s-005: evidence[0] document 'library/nope.txt' is not in the corpus",
                f"{path}:7: s-001: duplicate id 's-001'",
                f"{path}:18: s-017: a multi question needs two or more evidence items, it has 1"]
    assert [p for p in report.problems if p in expected] == expected           # all of them, in file order
    assert [p for p in report.problems if p.startswith(f"{path}:10: not valid JSON")]
    assert f"{path}: 29 questions, at least 30 needed" in report.problems      # the duplicate is not counted
    assert len(report.problems) == 7


def test_copies_of_the_project_set_are_listed_and_more_than_half_is_flagged(tmp_path, docs):
    project = load_golden(PROJECT_SMALL)
    records = student_set(docs)
    for rec, q in zip(records[:15], project):
        rec["question"] = "  " + q.question.upper().replace(" ", "\n ")     # case and whitespace do not hide a copy
    path = write(tmp_path / "half.jsonl", records)
    report = check_student_golden(path, docs)
    assert report.copies[0] == f"{path}:1: s-001: the same question as evals/python_docs_golden.jsonl {project[0].id}"
    assert len(report.copies) == 15 and report.share == 0.5 and report.problems == []   # half is allowed
    records[15]["question"] = project[15].question
    path = write(tmp_path / "copied.jsonl", records)
    report = check_student_golden(path, docs)
    assert report.problems == [f"{path}: 16 of 30 questions (53%) are copies of the project's golden sets, "
                               "more than half: write your own"]


def test_a_split_set_needs_both_kinds_in_dev_and_a_split_on_every_line(tmp_path, docs):
    records = student_set(docs)
    for rec in records:
        rec["split"] = "test" if rec["type"] == "unanswerable" else "dev"
    del records[0]["split"]
    path = write(tmp_path / "mine.jsonl", records)
    problems = check_student_golden(path, docs).problems
    assert f"{path}: the dev split needs answerable and unanswerable questions to tune the refusal threshold on " \
           "(it has 24 answerable, 0 unanswerable)" in problems
    assert f"{path}:1: s-001: no 'split' while other lines have one (it would be in neither split)" in problems


def test_raglab_golden_replaces_the_bundled_set(tmp_path, docs, monkeypatch):
    monkeypatch.delenv("RAGLAB_GOLDEN", raising=False)
    bundled = [q.id for q in load_golden(golden_path("python-docs"))]
    assert [q.id for q in load_golden("python-docs")] == bundled
    path = write(tmp_path / "mine.jsonl", student_set(docs))
    monkeypatch.setenv("RAGLAB_GOLDEN", str(path))
    assert [q.id for q in load_golden("python-docs", docs)] == [f"s-{n:03d}" for n in range(1, 31)]
    assert golden_file("python-docs", "small") == path
    assert len(load_golden(PROJECT_SMALL)) == 36                              # a path is still that file
    monkeypatch.delenv("RAGLAB_GOLDEN")
    assert [q.id for q in load_golden("python-docs")] == bundled


def test_raglab_eval_scores_the_file_raglab_golden_names(tmp_path, docs, monkeypatch, capsys):
    path = write(tmp_path / "mine.jsonl", [{k: v for k, v in r.items() if k != "split"} for r in student_set(docs)])
    monkeypatch.setenv("RAGLAB_GOLDEN", str(path))
    scored = []
    monkeypatch.setattr(cli_evaluate, "assistant_for", lambda args, build: None)
    monkeypatch.setattr(cli_evaluate, "run_golden", lambda assistant, golden, *rest: scored.append(golden) or {})
    monkeypatch.setattr(cli_evaluate, "format_scoreboard", lambda board: "scored")
    assert cli.main(["eval", "--corpus", "python-docs", "--profile", "small"]) == 0
    assert scored == [path]


def test_the_cli_verb_prints_every_problem_and_exits_1(tmp_path, docs, capsys):
    records = student_set(docs)
    records[2]["evidence"][0]["quote"] = "words no page of the docs holds"
    bad = write(tmp_path / "bad.jsonl", records[:-1])
    assert cli.main(["golden", "check", str(bad), "--corpus", "python-docs", "--profile", "small"]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:3: s-003: evidence[0] quote not found in" in out
    assert f"{bad}: 4 unanswerable questions, at least 5 needed" in out
    assert f"{bad}: 29 questions, at least 30 needed" in out and out.rstrip().endswith("3 problem(s)")
    good = write(tmp_path / "good.jsonl", records[:2] + student_set(docs)[2:])
    assert cli.main(["golden", "check", str(good), "--profile", "small", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["problems"] == []


class RecordingAssistant:
    """Stands in for the assistant: records the questions it is asked; evidence is strong for answerable ones."""

    rerank = False

    def __init__(self, strong: set[str]):
        self.strong, self.asked = strong, []

    def retrieve(self, question, user=None):
        self.asked.append(question)
        return [], 0.8 if question in self.strong else 0.2, []


def test_raglab_tune_chooses_the_threshold_on_the_students_dev_questions(tmp_path, docs, monkeypatch, capsys):
    records = student_set(docs)
    path = write(tmp_path / "mine.jsonl", records)
    assistant = RecordingAssistant({r["question"] for r in records if r["type"] != "unanswerable"})
    monkeypatch.setattr(tuning, "build_assistant", lambda corpus, profile: assistant)
    assert cli.main(["tune", "--corpus", "python-docs", "--profile", "small", "--golden", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    dev = {r["id"] for r in records if r["split"] == "dev"}
    assert result["basis"] == "dev" and set(result["questions"]) == dev
    assert sorted(assistant.asked) == sorted(r["question"] for r in records if r["split"] == "dev")
    assert result["threshold"] == 0.5 and result["youden_j"] == 1.0


def test_raglab_golden_reaches_tuning_and_experiments_but_not_the_judges_hand_labels(monkeypatch):
    from raglab.evaluation.judge import FactCheckJudge

    template = Path(config.PROJECT_ROOT, "evals", "student_template.jsonl")
    monkeypatch.setenv("RAGLAB_GOLDEN", str(template))
    seen = {}
    monkeypatch.setattr(tuning, "load_golden", lambda path, docs=None, split=None: seen.setdefault("path", path) and [])
    monkeypatch.setattr(tuning, "load_corpus", lambda corpus, profile: None)
    tuning.tuning_questions("python-docs", "small")
    assert Path(seen["path"]) == template
    assert "py-001" in FactCheckJudge("python-docs").questions       # the judge's labels are on the project's set
