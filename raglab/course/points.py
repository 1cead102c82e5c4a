"""What is graded and how many points each part is worth, counted from the notebooks' own markers
(``# Self-check (N points)``, ``<!-- graded by hand: N points -->``) and the rubric's criteria: the README's
table of what a learner writes, and the grading page that notebook 00 and the README show."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from raglab.base import config
from raglab.course import cells
from raglab.course.blocks import replace_block
from raglab.course.grades import PASS_MARK
from raglab.course.milestones import MILESTONES, by_notebook, table
from raglab.course.rubric import graded_criteria, notebook_key
from raglab.course.workbook import notebooks

GRADING_BEGIN = "<!-- grading page: made by raglab.course.points.grading_page -->"
GRADING_END = "<!-- end of the grading page -->"


@dataclass(frozen=True)
class NotebookPoints:
    notebook: str
    written: tuple[str, ...]   # the functions the 2-point exercises ask for (hidden tests)
    checks: int                # self-check cells
    check_points: int
    answers: int               # prose answers graded by hand
    hand_points: int


def _graded_cells(nb, stem: str) -> list[dict]:
    """nbgrader's metadata of the graded cells: as released (kept in the cells) or derived from the markers."""
    if not any(c.metadata.get("nbgrader", {}).get("grade") for c in nb.cells):
        cells.mark_cells(nb, stem)
    return [c.metadata["nbgrader"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def notebook_points(path: Path) -> NotebookPoints:
    """The points one notebook is worth and the functions its code-writing exercises ask for."""
    import nbformat  # lazy: only when notebooks are read

    nb = nbformat.read(path, as_version=4)
    graded = _graded_cells(nb, path.stem)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    written = []
    for i, src in enumerate(code):
        if cells.SELF_CHECK.match(src) and "(2 points)" in src.splitlines()[0]:
            answer = next((s for s in reversed(code[:i]) if cells.SOLUTION in s), "")
            written += re.findall(r"^def (\w+)\(", answer, re.M)
    auto = [g for g in graded if not g["solution"]]
    hand = [g for g in graded if g["solution"]]
    return NotebookPoints(path.stem, tuple(written), len(auto), sum(g["points"] for g in auto),
                          len(hand), sum(g["points"] for g in hand))


@dataclass(frozen=True)
class ByHand:
    notebook: str
    grade_id: str                  # nbgrader's id of the answer cell (``cells.mark_cells``)
    points: int                    # the answer's points (its ``<!-- graded by hand: N points -->`` marker)
    questions: tuple[int, ...]     # each question's points, as the cell above the answer shows them


def by_hand_answers(path: Path) -> list[ByHand]:
    """The answers graded by hand of one notebook (the instructor's, or as released: nbgrader's metadata), each
    with the points per question that the Markdown cell above it shows the student (``cells.QUESTION_POINTS``)."""
    import nbformat  # lazy: only when notebooks are read

    nb = nbformat.read(path, as_version=4)
    _graded_cells(nb, path.stem)                   # the metadata, derived from the markers when not released
    out, question = [], ""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and meta.get("solution"):
            out.append(ByHand(path.stem, meta["grade_id"], int(meta["points"]),
                              tuple(int(n) for n in cells.QUESTION_POINTS.findall(question))))
        else:
            question = cell.source
    return out


def criteria_by_notebook() -> dict[str, int]:
    """How many rubric criteria each notebook's "Done when" runs, by its key (``rubric.notebook_key``: "06",
    "07-chunking"; the golden set of the student's own counts under 06); the copy flags earn nothing."""
    out: dict[str, int] = {}
    for _, _, nb in graded_criteria():
        out[nb] = out.get(nb, 0) + 1
    return out


def course_points(folder: Path | None = None) -> list[NotebookPoints]:
    """Every numbered notebook of ``folder`` (default: the course's), in order."""
    return [notebook_points(p) for p in notebooks(folder)]


def what_you_write(folder: Path | None = None) -> str:
    """The README's table of what a learner writes: per milestone notebook, the functions, the self-checks,
    their points and the points graded by hand."""
    rows, totals = [], [0, 0, 0]
    for p in course_points(folder):
        if p.notebook[:2] == "00":
            continue
        rows.append(f"| {p.notebook} | {', '.join(f'`{n}`' for n in p.written)} | {p.checks} | {p.check_points} | "
                    f"{p.hand_points} |")
        totals = [totals[0] + p.checks, totals[1] + p.check_points, totals[2] + p.hand_points]
    return "\n".join(["| notebook | functions you write (hidden tests) | self-checks | their points | "
                      "points graded by hand |", "| --- | --- | --- | --- | --- |", *rows,
                      f"| all | | {totals[0]} | {totals[1]} | {totals[2]} |"])


def pass_points(possible: int, mark: float = PASS_MARK) -> int:
    """The fewest points that pass, out of ``possible``.

    >>> pass_points(108), pass_points(10, 0.5)
    (65, 5)
    """
    return -int(-possible * mark // 1)


STUDENT = """**Grade your own work** with `raglab grade --self notebooks/`: the visible self-checks and the rubric, on
your run. Your instructor's grade adds the hidden tests and the points of the answers graded by hand."""
INSTRUCTOR = """**What an instructor runs** (in the course folder):

```bash
raglab release --out build/course --prove        # the student edition and the bundle to hand out, proven
raglab grade CLASS --out build/grades --jobs 2   # CLASS/<student>/NN_*.ipynb (+ golden.jsonl) -> gradebook.csv, feedback/
# enter the points of the answers graded by hand (formgrader on build/grades/course), then grade again:
raglab grade CLASS --out build/grades --jobs 2   # only what changed runs again; the gradebook shows pass or fail
```

A learner grades their own work with `raglab grade --self notebooks/` (the visible self-checks and the rubric;
no hidden tests, no answers graded by hand)."""


def grading_page(folder: Path | None = None, instructor: bool = False) -> str:
    """The grading page (Markdown): per notebook, the self-checks and the answers graded by hand with their
    points and the rubric's criteria; the totals; the pass mark; and how a student grades their own work (notebook
    00), or, with ``instructor``, what an instructor runs (the README)."""
    criteria = criteria_by_notebook()
    rows, tot = [], [0, 0, 0, 0, 0]
    for p in course_points(folder):
        m = by_notebook(p.notebook)
        if not m.graded or m.number is None:
            continue
        n = criteria.get(notebook_key(p.notebook), 0)
        rows.append(f"| `{p.notebook}` | {m.label} | {p.checks} | {p.check_points} | {p.answers} | "
                    f"{p.hand_points} | {n} |")
        tot = [a + b for a, b in zip(tot, (p.checks, p.check_points, p.answers, p.hand_points, n))]
    possible = tot[1] + tot[3] + tot[4]
    names = {m.notebook: m.label for m in MILESTONES if m.graded and m.number is not None}
    shown = [p.stem for p in notebooks(folder) if p.stem in names]
    listed = [f"| `{stem}` | {criterion} |" for stem in shown for _, criterion, _ in graded_criteria(stem)]
    hand = [f"| `{a.notebook}` | {a.grade_id} | {' + '.join(map(str, a.questions)) or '-'} | {a.points} |"
            for stem in shown for a in by_hand_answers(Path(folder or notebooks()[0].parent) / f"{stem}.ipynb")]
    return "\n".join([
        "| notebook | milestone | self-checks (graded by the computer) | their points | answers graded by hand | "
        "their points | rubric criteria (1 point each) |",
        "| --- | --- | --- | --- | --- | --- | --- |", *rows,
        f"| all | | {tot[0]} | {tot[1]} | {tot[2]} | {tot[3]} | {tot[4]} |", "",
        f"A grade adds the self-checks' points, the points of the answers graded by hand and one point for each "
        f"rubric criterion met: {tot[1]} + {tot[3]} + {tot[4]} = {possible} points in all. Milestone 6's criteria "
        f"include a golden set of your own (`golden.jsonl`, checked by `raglab golden check`). "
        f"**The pass mark is {PASS_MARK:.0%} of the points possible** in the notebooks assigned: "
        f"{pass_points(possible)} of {possible} for the whole course. The self-checks count only when their hidden tests pass as well.",
        "", "**The rubric's criteria**, one point each. Each notebook's \"Done when\" runs its own on your run:", "",
        "| notebook | criterion |", "| --- | --- |", *listed, "",
        "**The answers graded by hand**, with the points of each question (printed after the question in the notebook):",
        "", "| notebook | answer | points per question | points |", "| --- | --- | --- | --- |", *hand, "",
        INSTRUCTOR if instructor else STUDENT])


MILESTONES_BEGIN = "<!-- milestones: made by raglab.course.milestones.table -->"
MILESTONES_END = "<!-- end of the milestones -->"
WRITE_BEGIN = "<!-- what you write: made by tests/course/test_course_tables.py -->"
WRITE_END = "<!-- end of what you write -->"


def readme_blocks(folder: Path | None = None) -> dict[tuple[str, str], str]:
    """The README's generated blocks, by their markers: the milestones, the grading page, what you write."""
    present = {p.stem for p in Path(folder or notebooks()[0].parent).glob("*.ipynb")}
    return {(MILESTONES_BEGIN, MILESTONES_END): table(present),
            (GRADING_BEGIN, GRADING_END): grading_page(folder, instructor=True),
            (WRITE_BEGIN, WRITE_END): what_you_write(folder)}


def update_readme(readme: Path, folder: Path | None = None) -> None:
    """Rewrite the README's generated blocks from the notebooks (``python -m raglab.course.points``)."""
    text = readme.read_text()
    for (begin, end), body in readme_blocks(folder).items():
        text = replace_block(text, begin, end, body)
    readme.write_text(text)


if __name__ == "__main__":
    update_readme(config.PROJECT_ROOT / "README.md")
    print("README.md: the milestones, the grading page and what you write are the notebooks' again")
