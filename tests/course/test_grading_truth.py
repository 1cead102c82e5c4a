"""One grading truth: the grading page (notebook 00's section, the README's copy), every milestone's "Done when",
docs/grading.md, the instructor's rubric per question (docs/rubric_by_hand.md) and the gradebook's columns give
the same criteria and the same points, all read from ``raglab.course`` (criteria, points). Fast: the notebooks
are read as JSON, never executed; "Done when" runs on an empty artifacts folder, where every criterion fails."""
import re
from pathlib import Path

import nbformat
import pytest

from raglab.course import cells, gradebook, points, rubric
from raglab.course.grades import StudentGrade
from raglab.course.milestones import MILESTONES
from raglab.course.workbook import notebooks

ROOT = Path(__file__).resolve().parents[2]
GRADED = [m.notebook for m in MILESTONES if m.graded and m.number is not None]
DONE_WHEN = re.compile(r"rl\.course\.rubric\.done_when\(\"([^\"]+)\"\)")


def _nb(stem):
    return nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)


def page_criteria(page: str) -> dict[str, list[str]]:
    """The grading page's list of criteria, by notebook: its rows ``| `stem` | criterion |``."""
    out: dict[str, list[str]] = {}
    for stem, criterion in re.findall(r"^\| `(\w+)` \| ([^|]+) \|$", page, re.M):
        out.setdefault(stem, []).append(criterion.strip())
    return out


def table_criteria(markdown: str) -> list[str]:
    """The criteria of a "Done when" table (``rubric._table``: criterion, stages, result, why)."""
    return [row.split(" | ")[0].removeprefix("| ") for row in markdown.splitlines()
            if row.startswith("| ") and ("**PASS**" in row or "**FAIL**" in row)]


def done_when_cell(stem):
    hits = [c for c in _nb(stem).cells if c.cell_type == "code" and DONE_WHEN.search(c.source)]
    assert len(hits) == 1, f"{stem}: {len(hits)} cells run rl.course.rubric.done_when"
    return hits[0]


def test_the_grading_page_lists_every_criterion_once_and_counts_them():
    page = points.grading_page()
    listed = page_criteria(page)
    assert set(listed) <= set(GRADED)
    assert {stem: [c for _, c, _ in rubric.graded_criteria(stem)] for stem in GRADED} == \
        {stem: listed.get(stem, []) for stem in GRADED}
    assert sorted(c for cs in listed.values() for c in cs) == sorted(c for _, c, _ in rubric.graded_criteria())
    counted = dict(re.findall(r"^\| `(\w+)` \| milestone [^|]+ \| (?:\d+ \| ){4}(\d+) \|$", page, re.M))
    assert {stem: int(n) for stem, n in counted.items()} == {stem: len(listed.get(stem, [])) for stem in GRADED}


@pytest.mark.parametrize("stem", GRADED)
def test_done_when_runs_exactly_the_grading_pages_criteria(stem, tmp_path):
    """The notebook asks for its own criteria, and what it shows (run now on an empty folder, and in its saved
    output if it has one) is the grading page's list for it, in the same order."""
    want = page_criteria(points.grading_page()).get(stem, [])
    cell = done_when_cell(stem)
    asked = DONE_WHEN.search(cell.source).group(1)
    assert rubric.notebook_key(asked) == rubric.notebook_key(stem), f"{stem} runs the criteria of {asked!r}"
    shown = rubric.done_when(asked, where=tmp_path, folder=tmp_path).data
    assert table_criteria(shown) == want
    assert f"0 of {len(want)} criteria pass" in shown
    for out in cell.get("outputs", []):
        saved = out.get("data", {}).get("text/markdown")
        if saved:
            assert table_criteria(saved) == want, f"{stem}: its saved 'Done when' is not the grading page's (run it again)"


def test_notebook_00_and_the_readme_show_the_grading_page():
    page = points.grading_page()
    cell = next(c for c in _nb("00_setup").cells if c.cell_type == "code" and "grading_page()" in c.source)
    for out in cell.get("outputs", []):
        assert out.get("data", {}).get("text/markdown", page) == page, "00's grading page is stale (run it again)"
    readme = (ROOT / "README.md").read_text()
    block = readme.split(points.GRADING_BEGIN)[1].split(points.GRADING_END)[0].strip()
    assert block == points.grading_page(instructor=True), "README.md's grading page is stale: python -m raglab.course.points"
    assert page.replace(points.STUDENT, points.INSTRUCTOR) == block      # the same page; the student's ends with their part


def test_every_answer_graded_by_hand_shows_its_points_per_question():
    """nbgrader-style: each question of an answer graded by hand shows its points, and they add up to the cell's."""
    answers = [a for p in notebooks() for a in points.by_hand_answers(p)]
    markers = sum(bool(cells.BY_HAND.match(c.source)) for p in notebooks() for c in _nb(p.stem).cells
                  if c.cell_type == "markdown")
    assert len(answers) == markers == sum(n.answers for n in points.course_points())
    for a in answers:
        assert a.questions, f"{a.grade_id}: the cell above the answer shows no question's points"
        assert sum(a.questions) == a.points, f"{a.grade_id}: questions {a.questions} for {a.points} points"


def test_the_instructors_rubric_has_a_line_per_question_with_the_notebooks_points():
    text = (ROOT / "docs" / "rubric_by_hand.md").read_text()
    rubric_points: dict[str, list[int]] = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        grade_id = part.split()[0]
        rows = re.findall(r"^\| (\d+) \| (\d+) \| .+ \|$", part, re.M)
        assert [int(q) for q, _ in rows] == list(range(1, len(rows) + 1)), grade_id
        rubric_points[grade_id] = [int(p) for _, p in rows]
    answers = {a.grade_id: list(a.questions) for p in notebooks() for a in points.by_hand_answers(p)}
    assert rubric_points == answers


def test_docs_grading_states_the_points_the_tables_give():
    """docs/grading.md's simulated class (milestones 1 and 4) is worth what the notebooks say."""
    text = (ROOT / "docs" / "grading.md").read_text()
    m = re.search(r"milestones 1 and 4 are\s+worth (\d+) self-check points, (\d+) points of prose graded by hand and (\d+)\s+"
                  r"rubric criteria, (\d+) in all, so the pass mark\s+is (\d+)", text)
    assert m, "docs/grading.md: the simulated class's points are not stated"
    two = [p for p in points.course_points() if p.notebook[:2] in ("01", "04")]
    auto, hand = sum(p.check_points for p in two), sum(p.hand_points for p in two)
    crit = len(rubric.graded_criteria("01")) + len(rubric.graded_criteria("04"))
    assert tuple(map(int, m.groups())) == (auto, hand, crit, auto + hand + crit, points.pass_points(auto + hand + crit))
    # the whole course: the complete submission without its prose (every criterion but the golden set it lacks)
    course = points.course_points()
    auto, hand, crit = (sum(p.check_points for p in course), sum(p.hand_points for p in course),
                        len(rubric.graded_criteria()))
    m = re.search(r"its (\d+) points without the prose are under the pass mark of (\d+) \(of (\d+)\)", text)
    assert m and tuple(map(int, m.groups())) == (auto + crit - 1, points.pass_points(auto + hand + crit),
                                                 auto + hand + crit)


def test_the_gradebooks_criteria_columns_are_the_grading_pages():
    from raglab.course.rubric import Criterion

    every = [Criterion(m, c, False, "") for m, c, *_ in [*rubric.CRITERIA, *rubric.SUBMISSION_CRITERIA]]
    grade = StudentGrade("ada", rubric=every)
    columns = [c.removeprefix("rubric: ") for c in gradebook.columns([grade]) if c.startswith("rubric: ")]
    graded = [c for _, c, _ in rubric.graded_criteria()]
    assert [c for c in columns if c in graded] == [c for c in graded] == [r.criterion for r in grade.criteria]
    assert gradebook.row(grade)[gradebook.columns([grade]).index("rubric criteria")] == len(graded)
