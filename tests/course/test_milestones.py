"""Milestone numbers and names come from one list (``raglab.course.milestones``): every notebook's first
heading agrees with it, the rubric and the student bundle's START.md read it; the points are counted from the
notebooks' markers; and the pass mark is one constant that decides pass, fail or "to grade"."""
import re
from pathlib import Path

import nbformat
import pytest

from raglab.course import blocks, bundle, criteria, milestones, points
from raglab.course.gradebook import columns, row
from raglab.course.grades import PASS_MARK, TO_GRADE, Check, StudentGrade
from raglab.course.rubric import Criterion

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebooks_first_heading_is_its_milestone(path):
    m = milestones.by_notebook(path.stem)            # a notebook with no entry fails here
    first = nbformat.read(path, as_version=4).cells[0].source.splitlines()[0]
    assert first.startswith("# ") and m.title.casefold() in first.casefold(), (first, m.title)
    named = [int(n) for n in re.findall(r"milestone (\d+)", first, re.I)]
    assert named == ([m.number] if m.number else []), f"{first!r} should be {m.label}"
    assert ("part 2" in first) == (m.part == 2)
    if not m.graded:
        assert "optional" in first.casefold()


def test_every_numbered_notebook_is_listed_in_order():
    stems = [m.notebook for m in milestones.MILESTONES]
    assert stems[0] == "00_setup" and stems == sorted(stems, key=lambda s: (not s[:2].isdigit(), s))
    numbers = [m.number for m in milestones.MILESTONES if m.number]
    assert numbers == sorted(numbers) and set(numbers) == set(range(1, 9))


def test_the_rubric_names_milestones_from_the_list():
    assert criteria.M == milestones.rubric_names()
    for label, _, _, nb, _ in criteria.CRITERIA:
        assert label == criteria.M[nb[:2]] and label.split()[0] == str(int(nb[:2]))


def test_start_md_lists_the_notebooks_it_ships_with_their_milestones():
    start = bundle.start_md()
    for m in milestones.MILESTONES:
        line = next(ln for ln in start.splitlines() if ln.startswith(f"- `{m.notebook}.ipynb`: "))
        assert m.title.casefold() in line.casefold() and (m.number is None or m.label in line), line
    only = bundle.start_md({"00_setup", "01_ingest_and_chunking"})
    assert "- `01_ingest_and_chunking.ipynb`" in only and "- `02_dense_and_bm25.ipynb`" not in only


def test_an_unknown_notebook_is_named():
    with pytest.raises(KeyError, match="99_nothing"):
        milestones.by_notebook("99_nothing")


# ---------------------------------------------------------------- points, counted from the markers

def _notebook(tmp_path, cells, released=False):
    nb = nbformat.v4.new_notebook(cells=cells)
    path = tmp_path / "01_demo.ipynb"
    if released:                                         # a released notebook keeps nbgrader's metadata
        from raglab.course.cells import mark_cells
        mark_cells(nb, path.stem)
        nb.cells[2].source = "YOUR ANSWER HERE"
        nb.cells[0].source = "def chunk_words(text):\n    raise NotImplementedError"
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize("released", [False, True], ids=["source", "released"])
def test_points_are_counted_from_the_markers(tmp_path, released):
    cells = [nbformat.v4.new_code_cell("def chunk_words(text):\n    ### BEGIN SOLUTION\n    return []\n    ### END SOLUTION"),
             nbformat.v4.new_code_cell("# Self-check (2 points)\ncheck()"),
             nbformat.v4.new_markdown_cell("<!-- graded by hand: 3 points -->\nA model answer."),
             nbformat.v4.new_code_cell("# Self-check\ncheck()")]
    p = points.notebook_points(_notebook(tmp_path, cells, released))
    assert (p.checks, p.check_points, p.answers, p.hand_points) == (2, 3, 1, 3)
    assert p.written == (() if released else ("chunk_words",))


def test_the_grading_page_adds_up():
    page = points.grading_page()
    total = re.search(r"^\| all \| \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", page, re.M)
    _, auto, _, hand, crit = map(int, total.groups())
    assert f"{auto} + {hand} + {crit} = {auto + hand + crit} points" in page
    assert f"{points.pass_points(auto + hand + crit)} of {auto + hand + crit}" in page
    assert crit == sum(points.criteria_by_notebook().values())


# ---------------------------------------------------------------- the pass mark

def _grade(auto, hand=0.0, pending=0.0, rubric=(True, False)):
    checks = [Check("01_x", "01-check-1", auto, 10.0),
              Check("01_x", "01-by-hand-1", hand, hand + pending, by_hand=True, pending=bool(pending))]
    crit = [Criterion("1 chunking", f"c{i}", ok, "why") for i, ok in enumerate(rubric)]
    return StudentGrade("ada", checks=checks, ran={"01_x": "ok"}, rubric=crit)


def test_a_raised_flag_says_what_was_found():
    g = _grade(auto=10.0)
    g.rubric += [Criterion("flag", "failure analysis not copied from the reference solution", False, "line for line"),
                 Criterion("flag", "golden set not mostly copied from the project's", True, "2 of 30")]
    assert g.flags == ["failure analysis copied from the reference solution"]


def test_pass_mark_is_a_share_of_all_points():
    assert 0 < PASS_MARK < 1
    g = _grade(auto=6.0)                                 # 6 + 1 criterion of 10 + 2 possible
    assert g.total == (7.0, 12.0)
    assert g.result == ("pass" if 7 >= PASS_MARK * 12 else "fail")
    assert _grade(auto=10.0).result == "pass" and _grade(auto=0.0).result == "fail"


def test_a_result_waits_for_the_answers_still_to_grade():
    waiting = _grade(auto=5.0, pending=5.0)              # 5 + 1 of 17: the 5 points to grade could pass it
    assert waiting.result == TO_GRADE
    assert _grade(auto=0.0, pending=1.0).result == "fail"   # not even full marks on the answer would pass


def test_the_gradebook_shows_the_total_and_pass_or_fail():
    grades = [_grade(auto=10.0), _grade(auto=0.0), _grade(auto=5.0, pending=5.0)]
    cols = columns(grades)
    rows = [dict(zip(cols, row(g))) for g in grades]
    assert [r["passed"] for r in rows] == [1, 0, TO_GRADE]
    assert [r["total points"] for r in rows] == [11.0, 1.0, 6.0]


# ---------------------------------------------------------------- the README's times

def test_readme_times_are_the_committed_timings():
    from raglab.course import timings

    committed = timings.load()
    assert set(committed["notebooks"]) == {p.stem for p in NOTEBOOKS if p.stem[:2].isdigit()}, \
        "a notebook was added or removed: run `raglab workbook`, then `python -m raglab.course.timings`"
    readme = (ROOT / "README.md").read_text()
    assert blocks.readme_block(readme, timings.BEGIN, timings.END) == \
        "\n".join([timings.BEGIN, timings.table(committed), timings.END])


def test_the_main_job_records_its_timings(tmp_path):
    from raglab.course import timings

    path = timings.record(tmp_path, {"00_setup": 3.14159}, 70.0)
    t = timings.load(path)
    assert t["notebooks"] == {"00_setup": 3.1} and t["total_s"] == 70.0 and t["cores"] >= 1
    assert "| notebook `00_setup` | 3 s |" in timings.table(t)
    assert "setup" not in t and "setup.sh" not in timings.table(t)          # no set-up ran before it


def test_the_set_up_joins_the_timings_only_when_it_ran_just_before(tmp_path):
    """``./setup.sh && raglab workbook``: the set-up's own seconds join the workbook's when it ended just before
    the workbook began, not when it ran long before (or after)."""
    import json

    from raglab.course import timings

    path = timings.record_setup(tmp_path, 211.4, "new", "empty")
    ended = json.loads(path.read_text())["ended"]
    assert timings.setup_before(tmp_path, ended + 5)["seconds"] == 211.4
    assert timings.setup_before(tmp_path, ended + timings.CHAINED + 1) is None      # an older install
    assert timings.setup_before(tmp_path, ended - 1) is None                        # a set-up after the workbook began
    t = timings.load(timings.record(tmp_path, {"00_setup": 3.0}, 300.0, "cold", timings.setup_before(tmp_path, ended + 5)))
    assert t["setup"] == {"seconds": 211.4, "environment": "new", "pip_cache": "empty"}
    rows = timings.table(t).splitlines()
    assert rows[2].startswith("| `./setup.sh`: a new environment, pip's cache empty") and rows[2].endswith("| 3 min 31 s |")
    assert rows[-1] == "| **`./setup.sh && raglab workbook`** | **8 min 31 s** |"                    # 211.4 + 300
