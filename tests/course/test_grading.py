"""The course edition (issue 15): the student release and class grading, through nbgrader.

- ``mark_cells`` turns the notebooks' markers into nbgrader metadata (unit tests);
- every notebook's release holds no solution and no hidden test, every self-check fails on the blank
  release while the milestone's own cells still run (the whole course graded for a blank and a complete
  submission), and the solution passes (nbval runs the instructor's notebooks, hidden tests included);
- each write-it exercise's hidden tests fail a "solution" that is raglab's own function, or a wrapper, and each
  code exercise's self-check fails an edge-case bug;
- ``raglab grade`` on a simulated class of eight archetypes over milestones 1 and 4 (``CLASS``: complete,
  blank, library copies, a bug in each code exercise, wrong choices, half done, a notebook that raises,
  one bug) gives each the gradebook row stated for it, and the feedback page opens in headless Chromium.
"""
import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from raglab.course import by_hand, cells, classroom, criteria, exercises, grading, points, rubric
from raglab.surfaces.cli import main

pytestmark = pytest.mark.usefixtures("project_caches")      # the main job's warm caches

M1 = "01_ingest_and_chunking"
ASSIGNED = [M1, "04_cited_answers"]


# ---------------------------------------------------------------- markers and self-checks (fast)

def test_markers_become_nbgrader_metadata_and_other_cells_lose_it():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"),
        nbformat.v4.new_code_cell("# Self-check (2 points)\ncheck()\n### BEGIN HIDDEN TESTS\nmore()\n### END HIDDEN TESTS"),
        nbformat.v4.new_code_cell("# Self-check\ncheck()"),
    ])
    nb.cells[0].metadata["nbgrader"] = {"grade": True}      # stale metadata on an ordinary cell is removed
    assert cells.mark_cells(nb, "03_demo") == 2
    meta = [c.metadata.get("nbgrader") for c in nb.cells]
    assert meta[0] is None and meta[1]["solution"] and not meta[1]["grade"]
    assert (meta[2]["points"], meta[3]["points"]) == (2, 1) and meta[2]["locked"] and meta[2]["grade_id"] == "03-check-1"
    assert meta[1]["grade_id"] == "03-answer-1"
    # a cell only the tests need, which the release leaves out, moves no id
    nb.cells.insert(0, nbformat.v4.new_code_cell("assert 1", metadata={"tags": [cells.TEST_ONLY]}))
    cells.mark_cells(nb, "03_demo")
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in cells.for_readers(nb).cells] == \
        [None, "03-answer-1", "03-check-1", "03-check-2"]


def test_a_self_check_prints_pass_or_raises_with_the_reason(capsys):
    assert exercises.check("t", lambda: (True, "fine")) is None
    assert capsys.readouterr().out == "PASS  t: fine\n"
    for test, reason in [(lambda: (False, "3 words dropped"), "FAIL  t: 3 words dropped"),
                         (lambda: exec("raise NotImplementedError('write it')"), "not done yet (write it)"),
                         (lambda: 1 / 0, "ZeroDivisionError")]:
        with pytest.raises(AssertionError, match=re.escape(reason)):
            exercises.check("t", test)


def test_in_a_notebook_the_hidden_checks_that_pass_read_as_one_line_per_exercise():
    """A graded notebook shows each public check, one line for each exercise's passing hidden checks, and a
    failing hidden check in full."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        'import raglab as rl\n'
        'rl.course.exercises.check("4. by hand", lambda: (True, "ok"))\n'
        'for i in range(5):\n'
        '    rl.course.exercises.check(f"4. hidden: case {i}", lambda: (True, f"case {i} agrees"))\n'
        'rl.course.exercises.check("5. hidden: an edge", lambda: (True, "agrees"))\n'
        'rl.course.exercises.check("5. hidden: another", lambda: (False, "3 words dropped"))')])
    from nbclient import NotebookClient
    NotebookClient(nb, allow_errors=True, kernel_name="python3").execute()
    printed = "".join(o.text for o in nb.cells[0].outputs if o.output_type == "stream")
    assert printed == ("PASS  4. by hand: ok\nPASS  4. hidden tests: 5 passed\n"
                       "PASS  5. hidden tests: 1 passed\n")
    error = next(o for o in nb.cells[0].outputs if o.output_type == "error")
    assert error.evalue == "FAIL  5. hidden: another: 3 words dropped"


def _notebook_function(source: str, **names):
    """A function defined as in a notebook cell (module ``__main__``), with these names in its globals."""
    ns = {"__name__": "__main__", **names}
    exec(source, ns)
    return next(v for k, v in ns.items() if callable(v) and getattr(v, "__module__", None) == "__main__"
                and k not in names)


def test_the_seam_uses_the_students_function_raglabs_while_it_is_blank_and_records_which(tmp_path, monkeypatch, capsys):
    """``stage`` runs the student's function as the pipeline's stage, raglab's while it is blank or fails, and
    a copy of raglab's as a copy; the results file records who made the stage and a hash of its source."""
    import raglab as rl
    from raglab.course import artifacts

    monkeypatch.setenv(artifacts.ENV, str(tmp_path))
    blank = _notebook_function("def my_rrf(r, k=60):\n    raise NotImplementedError")
    broken = _notebook_function("def my_rrf(r, k=60):\n    return r['missing']")
    copied = _notebook_function("def my_rrf(r, k=60):\n    return rl.rrf(r, k)", rl=rl)
    mine = _notebook_function("def my_rrf(r, k=60):\n    s = {}\n    for ids in r.values():\n"
                              "        for n, d in enumerate(ids, 1):\n            s[d] = s.get(d, 0) + 1 / (k + n)\n"
                              "    return sorted(s.items(), key=lambda kv: -kv[1])")
    probe = {"a": ["x", "y"], "b": ["y"]}
    made = {}
    for fn, used, by in [(blank, rl.rrf, "raglab"), (broken, rl.rrf, "raglab"), (copied, copied, "copy"), (mine, mine, "yours")]:
        assert exercises.stage("fusion", fn, rl.rrf, probe) is used
        made[fn] = artifacts.load_results(tmp_path)["stages"]["fusion"]
        assert made[fn]["by"] == by and made[fn]["milestone"] == "03"
    out = capsys.readouterr().out
    assert "raglab's `rrf` runs in its place (your `my_rrf` is not written yet)" in out and "KeyError: 'missing'" in out
    assert "calls raglab's `rrf`" in made[copied]["why"] and made[blank]["sha256"] is None
    assert made[mine]["sha256"] == exercises.fingerprint(mine) != exercises.fingerprint(copied)
    def not_set():
        raise NameError("name 'my_size' is not defined")

    assert exercises.choice("chunk size", not_set, 150) == 150
    assert exercises.choice("chunk size", lambda: 90, 150) == 90
    st = artifacts.load_results(tmp_path)["stages"]
    assert st["chunk size"] == {"milestone": "01", "stage": "the window size", "by": "yours", "value": 90, "why": "your choice"}
    assert st["fusion"]["by"] == "yours"                       # each stage's record kept beside the others


def test_each_stage_stands_in_for_the_functions_its_hidden_test_names():
    """The seam's copy check and the autograder's hidden own-work test guard the same raglab functions."""
    import raglab.surfaces.web.app  # noqa: F401  (the endpoint's stage names the web app's functions: loaded, they count)

    named = {}
    for stem, answer, selfcheck in _write_it_exercises():
        for call in re.finditer(r"own_work\(\s*(\w+),\s*(.*?),\s*probe=", selfcheck, re.S):
            named[call.group(1)] = {part.strip().rsplit(".", 1)[-1] for part in call.group(2).split(",")}
    stages = {"chunk_words": "chunker", "split_sections": "sections", "bm25_scores": "bm25", "dense_search": "dense search",
              "my_rrf": "fusion", "rerank_by_best_sentence": "reranker", "invalid_citations": "citation check",
              "my_messages": "prompt", "answer_or_refuse": "answer or refuse", "visible_rows": "access rule",
              "visible_search": "filtered query", "plan_reindex": "reindex plan", "recall_at_k": "recall", "mrr_at_k": "mrr",
              "evaluate_retrieval": "evaluation loop", "paired_bootstrap": "decision rule", "pick_winner": "winner rule",
              "bakeoff_rows": "bake-off loop", "my_chunker": "own chunker", "cost_per_answer": "answer cost",
              "make_ask_app": "ask endpoint"}
    assert set(named) == set(stages)
    for fn, stage in stages.items():
        assert {f.__name__ for f in exercises.replaced(stage)} == named[fn], fn


def test_own_work_catches_the_library_function_a_wrapper_and_a_renamed_call():
    import raglab as rl
    from raglab.book.fusion import rrf as renamed

    ns = {"__name__": "__main__", "rl": rl, "renamed": renamed}
    exec("def wrapper(r, k=60):\n    return rl.rrf(r, k)\n"
         "def hidden(r, k=60):\n    f = getattr(rl.book.fusion, 'rr' + 'f')\n    return f(r, k)\n"
         "def via_name(r, k=60):\n    return renamed(r, k)\n"
         "def helper(r, k):\n    return renamed(r, k)\n"
         "def two_deep(r, k=60):\n    return helper(r, k)\n"
         "def mine(r, k=60):\n    s = {}\n    for ids in r.values():\n        for n, d in enumerate(ids, 1):\n"
         "            s[d] = s.get(d, 0) + 1 / (k + n)\n    return sorted(s.items(), key=lambda kv: -kv[1])\n", ns)
    probe = {"a": ["x", "y"], "b": ["y"]}
    assert not exercises.own_work(rl.rrf, rl.rrf)[0]                       # the library function itself
    for name in ("wrapper", "hidden", "via_name", "two_deep"):
        ok, why = exercises.own_work(ns[name], rl.rrf, probe=lambda f=ns[name]: f(probe))
        assert not ok and "rrf" in why, (name, why)
    assert exercises.own_work(ns["mine"], rl.rrf, probe=lambda: ns["mine"](probe)) == (True, "`mine` does the work itself")


def _write_it_exercises():
    """(notebook, the answer cell defining the student's function, its self-check cell) for each notebook."""
    found = []
    for path in grading.notebooks():
        nb = nbformat.read(path, as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        for i, src in enumerate(code):
            if cells.SELF_CHECK.match(src) and "(2 points)" in src.splitlines()[0]:
                answer = next(s for s in reversed(code[:i]) if cells.SOLUTION in s)
                found.append((path.stem, answer, src))
    return found


def test_every_milestone_has_three_exercises_and_one_to_write():
    stems = {p.stem: p for p in grading.notebooks() if p.stem[:2] in {f"{n:02d}" for n in range(1, 9)}}
    assert len({s[:2] for s in stems}) == 8 and len(stems) == 9           # milestone 7 in two notebooks
    checks = {}
    for stem, path in stems.items():
        nb = nbformat.read(path, as_version=4)
        checks[stem[:2]] = checks.get(stem[:2], 0) + cells.mark_cells(nb, stem)
        text = "\n".join(c.source for c in nb.cells)
        assert "## Summary" in text and "## Exercise" in text, stem
    assert all(3 <= n <= 12 for n in checks.values()), checks
    assert {s for s, _, _ in _write_it_exercises()} == set(stems)      # one to write in each (07's two have three)


@pytest.mark.parametrize("stem,answer,selfcheck", _write_it_exercises(), ids=lambda v: v if isinstance(v, str) and len(v) < 40 else "")
def test_hidden_tests_pass_the_solution_and_fail_raglabs_own_function(stem, answer, selfcheck):
    """The write-it self-check, run alone: it passes with the solution and fails when the student's
    name is bound to raglab's function or to a wrapper around it (the hidden test's own-work check)."""
    name = re.search(r"^def (\w+)\(", answer, re.M).group(1)
    library = re.search(r"own_work\(\s*\w+,\s*(.*?),\s*probe=", selfcheck, re.S).group(1)
    first = library.split(",")[0].strip()

    def run(defining: str):
        ns = {"__name__": "__main__"}
        exec(compile(defining, f"<{stem} answer>", "exec"), ns)
        exec(compile(selfcheck, f"<{stem} self-check>", "exec"), ns)

    run(answer)                                                     # the solution passes every check
    for fake in (f"import raglab\nimport raglab as rl\n{name} = {first}\n",
                 f"import raglab\nimport raglab as rl\ndef {name}(*args, **kwargs):\n    return {first}(*args, **kwargs)\n"):
        with pytest.raises(AssertionError, match="FAIL"):
            run(fake)


# ---------------------------------------------------------------- the release, proven (slow)

@pytest.fixture(scope="module")
def released(tmp_path_factory):
    out = tmp_path_factory.mktemp("course")
    return grading.release(out)


def test_the_release_has_every_notebook_and_no_solution(released):
    names = sorted(p.name for p in released.glob("*.ipynb"))
    assert names == sorted(p.name for p in grading.notebooks())
    for path in released.glob("*.ipynb"):
        text = path.read_text()
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text, path.name
    nb = nbformat.read(released / "01_ingest_and_chunking.ipynb", as_version=4)
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    assert "raise NotImplementedError(" in answer.source and "Hint:" in answer.source
    assert all(not c.outputs for c in nb.cells if c.cell_type == "code")


def test_the_blank_release_of_a_milestone_fails_every_self_check_and_still_runs(released, tmp_path):
    """What `raglab release --prove` checks, on milestone 1; every other notebook's blank release is graded in the
    whole-course class below (nothing earned, every notebook ran)."""
    assert grading.prove("01_ingest_and_chunking", released, artifacts_dir=tmp_path) == []


# ---------------------------------------------------------------- a simulated class (slow)

def _submit(release_dir: Path, dest: Path, stem: str, answers: dict[str, str] | None = None, edit=None) -> None:
    grading.hand_in(release_dir, dest, stem, answers, edit)


# ---- the archetypes' answers (by the function or variable their answer cell defines)

DROPS_TEXT = """def chunk_words(words, size=150, overlap=30):
    \"\"\"My windows.\"\"\"
    return [words[i:i + size] for i in range(0, max(len(words) - size, 1), size - overlap)]"""

LETS_FORGED_THROUGH = """import re

def invalid_citations(answer, n_sources):
    \"\"\"Only absurd numbers are forged.\"\"\"
    return [n for n in re.findall(r"\\[(\\d+)\\]", answer) if int(n) > 50]"""

COPIES_THE_CHUNKER = """def chunk_words(words, size=150, overlap=30):
    \"\"\"raglab's windows, called directly.\"\"\"
    text = " ".join(words)
    nth = {start: n for n, (start, _) in enumerate(rl.book.chunkers.word_positions(text))}
    return [words[nth[a]:nth[a] + len(text[a:b].split())] for a, b in rl.book.chunkers.word_spans(text, size, overlap)]"""

WRAPS_THE_CHECK = """from raglab.book.citations import parse_citations as find_markers

def _numbers(answer):
    return find_markers(answer)

def invalid_citations(answer, n_sources):
    \"\"\"The numbers past the sources, by a helper under another name.\"\"\"
    return [c for c in _numbers(answer) if not (c.isdigit() and 1 <= int(c) <= n_sources)]"""

TEN_WORD_WINDOWS = "my_size = 10"
THRESHOLD_ZERO = "my_threshold = 0.0"


def _break_a_milestone_cell(nb):
    cell = next(c for c in nb.cells if c.cell_type == "code" and "rl.ChunkSettings(\"large\")" in c.source)
    cell.source = cell.source.replace('rl.ChunkSettings("large")', 'rl.ChunkSettings("larg")')


def _hand_in_blank(release_dir: Path, dest: Path, stem: str) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(release_dir / f"{stem}.ipynb", dest / f"{stem}.ipynb")


# Each archetype: {notebook: answers by name, "blank", "broken" or None (not handed in)}, and the row the
# gradebook must give it: autograder points lost per check column, notebooks that ran, rubric criteria failed.
CLASS = {
    "ada": ({"01_ingest_and_chunking": {}, "04_cited_answers": {}}, "complete: the solutions"),
    "bo": ({"01_ingest_and_chunking": "blank", "04_cited_answers": "blank"}, "the blank release, handed in unchanged"),
    "cal": ({"01_ingest_and_chunking": {"chunk_words": COPIES_THE_CHUNKER},
             "04_cited_answers": {"invalid_citations": WRAPS_THE_CHECK}}, "library copies: a direct call, a renamed wrapper"),
    "ben": ({"01_ingest_and_chunking": {"chunk_words": DROPS_TEXT},
             "04_cited_answers": {"invalid_citations": LETS_FORGED_THROUGH}}, "one edge-case bug per code exercise"),
    "dan": ({"01_ingest_and_chunking": {"my_size": TEN_WORD_WINDOWS},
             "04_cited_answers": {"my_threshold": THRESHOLD_ZERO}}, "plausible but wrong choices"),
    "eve": ({"01_ingest_and_chunking": {}, "04_cited_answers": "blank"}, "half the milestones done"),
    "fay": ({"01_ingest_and_chunking": "broken", "04_cited_answers": None}, "a notebook that raises, one not handed in"),
    "gus": ({"01_ingest_and_chunking": {"chunk_words": DROPS_TEXT}, "04_cited_answers": {}}, "one bug, the rest complete"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The simulated class, two milestones each, graded by the CLI verb, two students at a time."""
    base = tmp_path_factory.mktemp("class")
    release_dir = grading.release(base / "course", only=ASSIGNED)
    klass = base / "class"
    for student, (work, _) in CLASS.items():
        for stem, answers in work.items():
            if answers is None:
                continue
            if answers == "blank":
                _hand_in_blank(release_dir, klass / student, stem)
            elif answers == "broken":
                _submit(release_dir, klass / student, stem, edit=_break_a_milestone_cell)
            else:
                _submit(release_dir, klass / student, stem, answers)
    out = base / "grades"
    here = os.getcwd()
    os.chdir(base)                 # relative paths, as a student types them (nbgrader changes folders as it works)
    try:
        assert main(["grade", "class", "--out", "grades", "--json", "--jobs", "2"]) == 0     # as an instructor grades: two at a time
    finally:
        os.chdir(here)
    with open(out / "gradebook.csv", newline="") as fh:
        rows = {r["student"]: r for r in csv.DictReader(fh)}
    return out, rows


def _total(row) -> float:
    return float(row["autograder points"]) + int(row["rubric passed"]) + int(row["notebooks ran"])


def _lost(rows, student) -> set[str]:
    """The check columns where the student got less than the complete submission."""
    ada = rows["ada"]
    return {c for c, v in rows[student].items() if re.match(r"\d\d \d\d-check-", c) and float(v) < float(ada[c])}


def _failed(rows, student) -> set[str]:
    return {c.removeprefix("rubric: ") for c, v in rows[student].items() if c.startswith("rubric: ") and v == "0"}


def test_the_gradebook_has_a_row_per_student_and_a_column_per_criterion(graded):
    out, rows = graded
    assert sorted(rows) == sorted(CLASS)
    columns = list(next(iter(rows.values())))
    assert {"01 01-check-1", "04 04-check-1", "ran 01", "ran 04", "autograder points", "rubric passed"} <= set(columns)
    assert sum(c.startswith("rubric: ") for c in columns) == 5      # milestones 1 and 4 only
    assert (out / "grades.json").exists()


def test_the_complete_submission_gets_full_marks(graded):
    _, rows = graded
    ada = rows["ada"]
    assert ada["autograder points"] == ada["autograder max"] and float(ada["autograder max"]) >= 8
    assert ada["ran 01"] == ada["ran 04"] == "1" and ada["rubric passed"] == ada["rubric criteria"] == "5"
    assert ada["flags"] == ""


def test_the_blank_release_gets_nothing_in_any_column(graded):
    out, rows = graded
    bo = rows["bo"]
    numbers = {c: v for c, v in bo.items()
               if c not in ("student", "flags", "measured on", "autograder max", "by-hand max", "rubric criteria")}
    assert all(float(v) == 0 for v in numbers.values()), {c: v for c, v in numbers.items() if float(v)}
    assert bo["flags"] == "" and bo["measured on"] == ""          # milestone 6 is not assigned: nothing measured
    page = (out / "feedback" / "bo.html").read_text()
    assert "ran, but no exercise is done" in page and "raglab&#x27;s fallback (worth nothing)" in page


def test_copies_of_raglab_are_flagged_and_worth_nothing_for_their_stage(graded):
    out, rows = graded
    cal = rows["cal"]
    assert _lost(rows, "cal") == {"01 01-check-1", "04 04-check-1"}          # the hidden own-work tests
    assert _failed(rows, "cal") == {c for c in _failed(rows, "bo")}            # every criterion reads a copied stage
    assert "chunker: a copy of raglab's function" in cal["flags"] and "citation check: a copy" in cal["flags"]
    page = (out / "feedback" / "cal.html").read_text()
    assert "calls raglab&#x27;s `word_spans`" in page and "a copy of raglab&#x27;s function (worth nothing)" in page


def test_a_bug_in_each_code_exercise_shows_in_that_students_own_numbers(graded):
    out, rows = graded
    assert _lost(rows, "ben") == {"01 01-check-1", "04 04-check-1"}
    failed = _failed(rows, "ben")
    assert "your chunker's chunks have ids and sources and cover every word" in failed     # the dropped tail
    assert "an invented citation id is caught" in failed                                  # [6] let through
    assert "answers carry valid citations" not in failed and "an out-of-corpus question gets the refusal" not in failed
    page = (out / "feedback" / "ben.html").read_text()
    assert "words of the pages are in no chunk" in page and "one source past the end" in page
    assert _lost(rows, "gus") == {"01 01-check-1"} and "an invented citation id is caught" not in _failed(rows, "gus")


def test_wrong_choices_fail_their_checks_both_ways(graded):
    _, rows = graded
    assert _lost(rows, "dan") == {"01 01-check-2", "04 04-check-2"}
    assert _failed(rows, "dan") == {"your window size fits the model without fragmenting the pages"}


def test_the_failing_and_missing_notebooks_show(graded):
    out, rows = graded
    fay = rows["fay"]
    assert fay["ran 01"] == "0" and fay["ran 04"] == "0"
    assert all(float(v) == 0 for c, v in fay.items() if c.startswith("04 "))
    # her chunker made its chunks at her size before the broken cell's names ran out in the save cell: that
    # criterion stands; the corpus record after it was never written, and milestone 4 never ran
    assert _failed(rows, "fay") == set(_failed(rows, "bo")) - {"your window size fits the model without fragmenting the pages"}
    page = (out / "feedback" / "fay.html").read_text()
    assert "04_cited_answers: missing" in page and "larg" in page


def test_the_class_ranks_as_its_work(graded):
    """Complete above one bug, above a bug in every exercise and wrong choices, above half done, above
    nothing; the blank release is worth 0, and so is a copy's stage. (A bug in every code exercise ranks
    above half the milestones not done: every stage of that capstone exists and runs, and each bug costs
    its exercise's points and the criteria its numbers fail.)"""
    _, rows = graded
    total = {s: _total(r) for s, r in rows.items()}
    assert total["bo"] == 0
    assert total["ada"] > total["gus"] > total["ben"] > total["eve"] > total["bo"]
    assert total["ada"] > total["dan"] > total["eve"]
    assert total["eve"] > total["fay"] >= total["bo"]
    print("\n" + gradebook_table(rows))       # pytest -s: the table docs/grading.md shows


def gradebook_table(rows) -> str:
    """The simulated class's gradebook rows as a Markdown table, one archetype a row."""
    lines = ["| archetype | autograder | notebooks ran | rubric | points in all | passed | flags |", "|---|---|---|---|---|---|---|"]
    for s, (_, why) in CLASS.items():
        r = rows[s]
        ran = [c for c in r if c.startswith("ran ")]
        lines.append(f"| {why} | {float(r['autograder points']):g}/{float(r['autograder max']):g} | "
                     f"{sum(r[c] == '1' for c in ran)}/{len(ran)} | {r['rubric passed']}/{r['rubric criteria']} | "
                     f"{r['total points']} | {r['passed']} | {r['flags']} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- the whole course (run on demand)

BUGS = {  # one edge-case bug in each code exercise
    "01_ingest_and_chunking": {"chunk_words": DROPS_TEXT},
    "02_dense_and_bm25": {"bm25_scores": """import collections
import math


def bm25_scores(query_tokens, docs_tokens, k1=1.5, b=0.75):
    \"\"\"A repeated query term counted once.\"\"\"
    n_docs = len(docs_tokens)
    avgdl = sum(len(doc) for doc in docs_tokens) / n_docs
    holding = collections.Counter(term for doc in docs_tokens for term in set(doc))
    out = []
    for doc in docs_tokens:
        tf = collections.Counter(doc)
        norm = k1 * (1 - b + b * len(doc) / avgdl)
        out.append(sum(math.log(1 + (n_docs - holding[t] + 0.5) / (holding[t] + 0.5)) * tf[t] * (k1 + 1) / (tf[t] + norm)
                       for t in set(query_tokens) if tf[t]))
    return out"""},
    "03_hybrid_rrf_rerank": {"my_rrf": """def my_rrf(rankings, k=60):
    \"\"\"Ranks from 0.\"\"\"
    scores = {}
    for ranked in rankings.values():
        for rank, doc in enumerate(ranked):
            scores[doc] = scores.get(doc, 0.0) + 1 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])"""},
    "04_cited_answers": {"invalid_citations": LETS_FORGED_THROUGH},
    "05_access_and_vector_db": {"visible_rows": """def visible_rows(chunk_access, user_groups):
    \"\"\"Forgets that everyone is in public.\"\"\"
    return [i for i, access in enumerate(chunk_access) if set(user_groups) & set(access)]"""},
    "06_evaluation": {"recall_at_k": """def recall_at_k(ranked_docs, relevant_docs, k):
    \"\"\"Counts one past k.\"\"\"
    relevant = set(relevant_docs)
    return len(relevant & set(ranked_docs[:k + 1])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked_docs, relevant_docs, k=10):
    \"\"\"No cut at k.\"\"\"
    for rank, doc in enumerate(ranked_docs, 1):
        if doc in set(relevant_docs):
            return 1 / rank
    return 0.0"""},
    "07_bakeoff": {"pick_winner": """def pick_winner(rows, k=5):
    \"\"\"Recall alone: ties go to the first row.\"\"\"
    best = max(rows, key=lambda row: row[f"recall@{k}"])
    return best["chunking"], best["retriever"]"""},
    "07_chunking_lab": {"my_chunker": """def my_chunker(text, limit=256):
    \"\"\"Whole paragraphs, never cut: a long one is over the model's limit.\"\"\"
    return list(rl.base.text.paragraphs(text, 0, len(text)))"""},
    "08_stretch_experiments": {"cost_per_answer": """def cost_per_answer(prompt_tokens, completion_tokens, price_in_per_m, price_out_per_m):
    \"\"\"Prices per thousand tokens.\"\"\"
    return (prompt_tokens * price_in_per_m + completion_tokens * price_out_per_m) / 1_000"""},
}


@pytest.mark.slow
def test_the_whole_course_grades_the_complete_and_the_blank_submission(tmp_path):
    """All eight milestones for two students, two at a time: the solutions, and the blank release handed in
    unchanged (every notebook must still run, and earn nothing: no self-check passes, no rubric criterion, each
    for the stage raglab made). A bug in each code exercise, half the milestones done and copies of raglab are
    graded in the simulated class above (milestones 1 and 4); every exercise's bug fails its hidden tests
    (test_a_bug_in_each_code_exercise_fails_its_hidden_tests), and raglab's own function fails them too
    (test_hidden_tests_pass_the_solution_and_fail_raglabs_own_function)."""
    stems = [p.stem for p in grading.notebooks() if p.stem[:2] != "00"]
    release_dir = grading.release(tmp_path / "course", only=stems)
    klass = tmp_path / "class"
    for stem in stems:
        _submit(release_dir, klass / "complete", stem)
        _hand_in_blank(release_dir, klass / "blank", stem)
    grades = {g.student: g for g in classroom.grade_class(klass, tmp_path / "grades", jobs=2)}   # two at a time
    print("\n" + grading.format_grades(list(grades.values())))
    for g in grades.values():
        print(g.student, "rubric failed:", [r.criterion for r in g.criteria if not r.passed])
    complete, blank = (grades[s] for s in ("complete", "blank"))
    golden = "a golden set of the student's own passes the checks"          # nobody hands one in here
    assert [r.criterion for r in complete.criteria if not r.passed] == [golden]
    assert len(complete.criteria) == len(rubric.graded_criteria())            # the grading page's list
    course = [n for n in points.course_points() if n.notebook in stems]
    answers = sum(n.answers for n in course)                                   # prose graded by hand
    assert complete.points[0] == complete.points[1] and complete.ran_ok == len(stems) == 9
    assert complete.by_hand[2] == answers and complete.by_hand[1] == sum(n.hand_points for n in course)
    # the prose counts 0 until graded; the rest (every point but the golden set's) is under the pass mark, so
    # the prose decides
    assert complete.total == (complete.points[1] + len(complete.criteria) - 1, complete.points[1] + complete.by_hand[1]
                              + len(complete.criteria))
    assert complete.total[0] < points.PASS_MARK * complete.total[1] and complete.result == "to grade"
    assert set(complete.flags) == {"failure analysis copied from the reference solution",      # it is the reference
                                   "chunking choice copied from the reference solution"}
    assert set(blank.ran.values()) == {cells.NOTHING_DONE} and len(blank.ran) == len(stems)    # no cell of ours failed
    assert blank.points[0] == 0 and blank.by_hand[0] == 0 and blank.by_hand[2] == 0              # nothing to grade
    assert blank.rubric_passed == 0 and len(blank.criteria) == len(complete.criteria)
    assert all("is not yours" in r.why for r in blank.criteria if r.criterion != golden), \
        [r.why for r in blank.criteria]                                         # each for the stage raglab made


def _checked_by(stem: str, name: str) -> str:
    """The self-check cell (hidden tests included) that follows the answer cell defining ``name`` in ``stem``."""
    nb = nbformat.read(grading.notebooks()[0].parent / f"{stem}.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    at = next(i for i, src in enumerate(code) if cells.SOLUTION in src and re.search(rf"^def {name}\(|^{name} =", src, re.M))
    return next(src for src in code[at + 1:] if cells.SELF_CHECK.match(src))


@pytest.mark.parametrize("stem", list(BUGS))
def test_a_bug_in_each_code_exercise_fails_its_hidden_tests(stem):
    """Each exercise's edge-case bug (``BUGS``), run with its self-check alone: the check, hidden tests included,
    fails it. (The simulated class shows two of them costing their points in the gradebook.)"""
    for name, answer in BUGS[stem].items():
        ns = {"__name__": "__main__"}
        exec(compile(f"import raglab\nimport raglab as rl\n{answer}", f"<{stem} bug>", "exec"), ns)
        with pytest.raises(AssertionError, match="FAIL"):
            exec(compile(_checked_by(stem, name), f"<{stem} self-check>", "exec"), ns)


# ---------------------------------------------------------------- prose graded by hand (slow)

@pytest.fixture(scope="module")
def graded_by_hand(tmp_path_factory):
    """Milestone 1 handed in by two students (the solution's prose, and the blank), graded three times: before
    the instructor enters points, after, and after the student changed the answer."""
    base = tmp_path_factory.mktemp("byhand")
    release_dir = grading.release(base / "course", only=[M1])
    _submit(release_dir, base / "class" / "ada", M1)
    _hand_in_blank(release_dir, base / "class" / "bo", M1)
    out = base / "grades"

    def grade():
        classroom.grade_class(base / "class", out, jobs=2)
        with open(out / "gradebook.csv", newline="") as fh:
            return {r["student"]: r for r in csv.DictReader(fh)}

    first = grade()
    by_hand.enter_by_hand(out, "ada", M1, "01-by-hand-1", 2)
    entered = grade()
    path = base / "class" / "ada" / f"{M1}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "markdown" and cells.BY_HAND.match(c.source))
    cell.source += "\n\nI also tried 200-word windows: more of them ran over the limit."
    nbformat.write(nb, path)
    changed = grade()
    return out, first, entered, changed


def test_prose_is_to_grade_until_the_instructor_enters_points(graded_by_hand):
    out, first, entered, changed = graded_by_hand
    ada, bo = first["ada"], first["bo"]
    # milestone 1 holds one prose answer (01-by-hand-1, four questions of a point each)
    assert ada["01 01-by-hand-1"] == "to grade" and ada["to grade"] == "1" and ada["by-hand points"] == "0.0"
    hand_max = sum(a.points for a in points.by_hand_answers(grading.notebooks()[0].parent / f"{M1}.ipynb"))
    assert float(ada["by-hand max"]) == hand_max and float(ada["autograder points"]) == float(ada["autograder max"])
    assert bo["01 01-by-hand-1"] == "0.0" and bo["to grade"] == "0"            # nothing written: nothing to grade
    assert entered["ada"]["01 01-by-hand-1"] == "2.0" and entered["ada"]["by-hand points"] == "2.0"
    assert entered["ada"]["to grade"] == "0"                                    # kept across the re-grade
    assert changed["ada"]["01 01-by-hand-1"] == "to grade"                      # a changed answer is graded again
    assert "waiting for the instructor" in (out / "feedback" / "ada.html").read_text()      # the last run's page


def test_points_outside_the_cells_range_are_refused(graded_by_hand):
    out = graded_by_hand[0]
    with pytest.raises(ValueError, match="outside 0..4"):
        by_hand.enter_by_hand(out, "ada", M1, "01-by-hand-1", 5)


def test_the_feedback_page_in_chromium(graded, tmp_path):
    out, _ = graded
    browser = Path(__file__).parents[1] / "browser"
    chromium = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    if not chromium.exists() or shutil.which("node") is None or not (browser / "node_modules" / "playwright-core").exists():
        message = "needs Chromium, node and tests/browser/node_modules (./setup.sh --tests installs them)"
        if os.environ.get("RAGLAB_SKIP_BROWSER") == "1":
            pytest.skip(message)
        pytest.fail(message)
    shot = tmp_path / "feedback.png"
    run = subprocess.run(["node", str(browser / "notebook.mjs"),
                          json.dumps({"file": str(out / "feedback" / "ben.html"), "screenshot": str(shot),
                                      "expect": "1. every word is in a window"})],
                         capture_output=True, text=True, timeout=180)
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen.get("ok") and seen["expectVisible"], seen
    assert shot.stat().st_size > 5_000
