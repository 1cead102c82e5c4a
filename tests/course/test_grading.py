"""The course edition (issue 15): the student release and class grading, through nbgrader.

- ``mark_cells`` turns the notebooks' markers into nbgrader metadata (unit tests);
- every notebook's release holds no solution and no hidden test, every self-check fails on the blank
  release while the milestone's own cells still run, and the solution passes (nbval runs the instructor's
  notebooks, hidden tests included);
- each write-it exercise's hidden tests fail a "solution" that is raglab's own function, or a wrapper;
- ``raglab grade`` on a simulated class of four (complete; a chunker that drops text; a citation check
  that lets a forged number through; a notebook failing and one missing) gives each the expected grades
  in the gradebook CSV, and the feedback page opens in headless Chromium.
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

from raglab.course import exercises, grading
from raglab.surfaces.cli import main

ASSIGNED = ["01_ingest_and_chunking", "04_cited_answers"]


# ---------------------------------------------------------------- markers and self-checks (fast)

def test_markers_become_nbgrader_metadata_and_other_cells_lose_it():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"),
        nbformat.v4.new_code_cell("# Self-check (2 points)\ncheck()\n### BEGIN HIDDEN TESTS\nmore()\n### END HIDDEN TESTS"),
        nbformat.v4.new_code_cell("# Self-check\ncheck()"),
    ])
    nb.cells[0].metadata["nbgrader"] = {"grade": True}      # stale metadata on an ordinary cell is removed
    assert grading.mark_cells(nb, "03_demo") == 2
    meta = [c.metadata.get("nbgrader") for c in nb.cells]
    assert meta[0] is None and meta[1]["solution"] and not meta[1]["grade"]
    assert (meta[2]["points"], meta[3]["points"]) == (2, 1) and meta[2]["locked"] and meta[2]["grade_id"] == "03-check-1"


def test_a_self_check_prints_pass_or_raises_with_the_reason(capsys):
    assert exercises.check("t", lambda: (True, "fine")) is None
    assert capsys.readouterr().out == "PASS  t: fine\n"
    for test, reason in [(lambda: (False, "3 words dropped"), "FAIL  t: 3 words dropped"),
                         (lambda: exec("raise NotImplementedError('write it')"), "not done yet (write it)"),
                         (lambda: 1 / 0, "ZeroDivisionError")]:
        with pytest.raises(AssertionError, match=re.escape(reason)):
            exercises.check("t", test)


def test_the_library_stands_in_while_the_students_function_is_blank(capsys):
    def blank(x):
        raise NotImplementedError

    def written(x):
        return x

    assert exercises.yours_or_library(blank, abs, -1) is abs
    assert exercises.yours_or_library(written, abs, -1) is written
    assert "not written yet" in capsys.readouterr().out


def test_own_work_catches_the_library_function_a_wrapper_and_a_renamed_call():
    import raglab as rl
    from raglab.fusion import rrf as renamed

    ns = {"__name__": "__main__", "rl": rl, "renamed": renamed}
    exec("def wrapper(r, k=60):\n    return rl.rrf(r, k)\n"
         "def hidden(r, k=60):\n    f = getattr(rl.fusion, 'rr' + 'f')\n    return f(r, k)\n"
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
            if grading.SELF_CHECK.match(src) and "(2 points)" in src.splitlines()[0]:
                answer = next(s for s in reversed(code[:i]) if grading.SOLUTION in s)
                found.append((path.stem, answer, src))
    return found


def test_every_milestone_has_three_exercises_and_one_to_write():
    stems = {p.stem: p for p in grading.notebooks() if p.stem[:2] in {f"{n:02d}" for n in range(1, 9)}}
    assert len(stems) == 8
    for stem, path in stems.items():
        nb = nbformat.read(path, as_version=4)
        n = grading.mark_cells(nb, stem)
        text = "\n".join(c.source for c in nb.cells)
        assert 3 <= n <= 12 and "## Summary" in text and "## Exercises" in text, stem
    assert sorted(s for s, _, _ in _write_it_exercises()) == sorted(stems)      # one to write in each


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


@pytest.mark.parametrize("stem", [p.stem for p in grading.notebooks()])
def test_the_blank_release_fails_every_self_check_and_still_runs(released, stem):
    """What `raglab release --prove` checks, for every notebook (00 is set-up: it has no exercise)."""
    assert grading.prove(stem, released) == []


# ---------------------------------------------------------------- a simulated class (slow)

def _solution_body(source_cell: str) -> str:
    """The instructor's answer cell as a student who solved it would hand it in: markers gone."""
    return "\n".join(ln for ln in source_cell.splitlines() if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def _submit(release_dir: Path, dest: Path, stem: str, answers: dict[str, str] | None = None,
            edit=None) -> None:
    """Fill a released notebook with the solution's answers (or the given ones, by function name), as a
    student would, and hand it in (unexecuted, like a saved notebook)."""
    src = nbformat.read(grading.notebooks()[0].parent / f"{stem}.ipynb", as_version=4)
    grading.mark_cells(src, stem)
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in src.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(release_dir / f"{stem}.ipynb", as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            body = _solution_body(solutions[meta["grade_id"]])
            for fn, code in (answers or {}).items():
                if re.search(rf"^def {fn}\(", body, re.M):
                    body = code
            cell.source = body
    if edit:
        edit(nb)
    dest.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest / f"{stem}.ipynb")


DROPS_TEXT = '''def chunk_words(words, size=150, overlap=30):
    """My windows."""
    return [words[i:i + size] for i in range(0, max(len(words) - size, 1), size - overlap)]'''

LETS_FORGED_THROUGH = '''import re

def invalid_citations(answer, n_sources):
    """Only absurd numbers are forged."""
    return [n for n in re.findall(r"\\[(\\d+)\\]", answer) if int(n) > 50]'''


def _break_a_milestone_cell(nb):
    cell = next(c for c in nb.cells if c.cell_type == "code" and "rl.ChunkSettings(\"large\")" in c.source)
    cell.source = cell.source.replace('rl.ChunkSettings("large")', 'rl.ChunkSettings("larg")')


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Four students, two notebooks each, graded by the CLI verb."""
    base = tmp_path_factory.mktemp("class")
    release_dir = grading.release(base / "course", only=ASSIGNED)
    klass = base / "class"
    for stem in ASSIGNED:
        _submit(release_dir, klass / "ada", stem)
        _submit(release_dir, klass / "ben", stem, {"chunk_words": DROPS_TEXT})
        _submit(release_dir, klass / "cy", stem, {"invalid_citations": LETS_FORGED_THROUGH})
    _submit(release_dir, klass / "dee", ASSIGNED[0], edit=_break_a_milestone_cell)     # 04 not handed in
    out = base / "grades"
    here = os.getcwd()
    os.chdir(base)                 # relative paths, as a student types them (nbgrader changes folders as it works)
    try:
        assert main(["grade", "class", "--out", "grades", "--json"]) == 0
    finally:
        os.chdir(here)
    with open(out / "gradebook.csv", newline="") as fh:
        rows = {r["student"]: r for r in csv.DictReader(fh)}
    return out, rows


def test_the_gradebook_has_a_row_per_student_and_a_column_per_criterion(graded):
    out, rows = graded
    assert sorted(rows) == ["ada", "ben", "cy", "dee"]
    columns = list(next(iter(rows.values())))
    assert {"01 01-check-1", "04 04-check-1", "ran 01", "ran 04", "autograder points", "rubric passed"} <= set(columns)
    assert sum(c.startswith("rubric: ") for c in columns) == 5      # milestones 1 and 4 only
    assert (out / "grades.json").exists()


def test_the_complete_submission_gets_full_marks(graded):
    _, rows = graded
    ada = rows["ada"]
    assert ada["autograder points"] == ada["autograder max"] and float(ada["autograder max"]) >= 8
    assert ada["ran 01"] == ada["ran 04"] == "1" and ada["rubric passed"] == ada["rubric criteria"] == "5"


def test_the_chunker_that_drops_text_loses_exactly_its_exercise(graded):
    _, rows = graded
    ada, ben = rows["ada"], rows["ben"]
    assert float(ben["01 01-check-1"]) == 0 and float(ada["01 01-check-1"]) == 2
    assert float(ben["autograder points"]) == float(ada["autograder points"]) - 2
    assert ben["ran 01"] == "1" and ben["rubric passed"] == "5"


def test_the_forged_citation_let_through_loses_exactly_its_exercise(graded):
    out, rows = graded
    cy = rows["cy"]
    assert float(cy["04 04-check-1"]) == 0 and float(cy["autograder points"]) == float(rows["ada"]["autograder points"]) - 2
    page = (out / "feedback" / "cy.html").read_text()
    assert "04-check-1" in page and "one source past the end" in page      # the failing check and why


def test_the_failing_and_missing_notebooks_show(graded):
    out, rows = graded
    dee = rows["dee"]
    assert dee["ran 01"] == "0" and dee["ran 04"] == "0"
    ada_04 = sum(float(v) for c, v in rows["ada"].items() if c.startswith("04 "))
    assert ada_04 >= 4 and all(float(v) == 0 for c, v in dee.items() if c.startswith("04 "))
    assert float(dee["autograder points"]) <= float(rows["ada"]["autograder points"]) - ada_04
    assert int(dee["rubric passed"]) < 5
    page = (out / "feedback" / "dee.html").read_text()
    assert "04_cited_answers: missing" in page and "larg" in page


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
