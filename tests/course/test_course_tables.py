"""The README's table of what a learner writes and what is graded is what the notebooks hold: for each
milestone notebook, the functions its write-it exercises ask for (a self-check worth 2 points with hidden
tests), every self-check's points and the prose answers graded by hand."""
import re
from pathlib import Path

import nbformat

from raglab.course import cells, grading

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- what you write: made by tests/course/test_course_tables.py -->", "<!-- end of what you write -->"


def milestone_row(path: Path) -> tuple[str, int, int, int]:
    """(the functions to write, self-check points, hand-graded points, exercises) of one notebook."""
    nb = nbformat.read(path, as_version=4)
    cells.mark_cells(nb, path.stem)
    graded = [c.metadata["nbgrader"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    written = []
    for i, src in enumerate(code):
        if cells.SELF_CHECK.match(src) and "(2 points)" in src.splitlines()[0]:
            answer = next(s for s in reversed(code[:i]) if cells.SOLUTION in s)
            written += re.findall(r"^def (\w+)\(", answer, re.M)
    checks = sum(g["points"] for g in graded if not g["solution"])
    by_hand = sum(g["points"] for g in graded if g["solution"])
    return ", ".join(f"`{name}`" for name in written), checks, by_hand, sum(1 for g in graded if not g["solution"])


def table() -> str:
    rows, totals = [], [0, 0, 0]
    for path in grading.notebooks():
        if path.stem[:2] == "00":
            continue
        written, checks, by_hand, n = milestone_row(path)
        rows.append(f"| {path.stem} | {written} | {n} | {checks} | {by_hand} |")
        totals = [totals[0] + n, totals[1] + checks, totals[2] + by_hand]
    return "\n".join([BEGIN, "| notebook | functions you write (hidden tests) | self-checks | their points | "
                      "points graded by hand |", "| --- | --- | --- | --- | --- |", *rows,
                      f"| all | | {totals[0]} | {totals[1]} | {totals[2]} |", END])


def test_readme_table_of_what_you_write_is_the_notebooks():
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme
    shown = readme[readme.index(BEGIN):readme.index(END) + len(END)]
    assert shown == table(), "the README's table of what you write is stale; replace it with:\n" + table()
