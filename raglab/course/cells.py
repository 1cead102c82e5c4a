"""The workbook's exercise cells as nbgrader sees them: the assignment's name, the markers an instructor's
notebook holds (an answer between ``### BEGIN SOLUTION`` and ``### END SOLUTION``, a ``# Self-check (N points)``
cell whose hidden part sits between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``, a prose answer
graded by hand), ``mark_cells`` turning them into nbgrader's cell metadata, and an executed notebook's code
cells read back (each one's kind and error, and how the notebook ran)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from raglab.course.exercises import STUB_CALL
from raglab.course.milestones import MILESTONES

ASSIGNMENT = "raglab"
SELF_CHECK = re.compile(r"^#\s*Self-check\b(?:.*?\((\d+)\s+points?\))?", re.I)
# A prose answer the instructor grades: a Markdown cell that starts with this comment (its model answer
# follows; the release replaces it with ``PROSE_STUB``).
BY_HAND = re.compile(r"^<!--\s*graded by hand:\s*(\d+)\s+points?\s*-->")
# A question's points, as the student reads them after each question of the Markdown cell above such an answer
# ("... and why? (1 point)"); they add up to the answer's points.
QUESTION_POINTS = re.compile(r"\((\d+) points?\)")
SOLUTION = "### BEGIN SOLUTION"
NOTHING_DONE = "ran, but no exercise is done (worth nothing)"
HIDDEN = "### BEGIN HIDDEN TESTS"
# A milestone's later notebooks (milestone 7: the bake-off, then the chunking lab): their grade ids carry their
# first word, so that ids (and the gradebook's columns) stay unique across the course.
LATER_PARTS = tuple(m.notebook for m in MILESTONES if m.part > 1)


def grade_prefix(stem: str) -> str:
    """The start of a notebook's grade ids: its milestone's number, and for a milestone's later notebook its
    first word too.

    >>> grade_prefix("07_bakeoff"), grade_prefix("07_chunking_lab")
    ('07', '07-chunking')
    """
    return f"{stem[:2]}-{stem.split('_')[1]}" if stem in LATER_PARTS else stem[:2]


# A code cell only the automated notebook test needs (it checks properties of an output that varies from
# run to run): tagged so in the instructor's notebook, left out of the student release and the rendered pages.
TEST_ONLY = "test-only"
# Words of the project that must not reach a learner: its tracker, its research runs' lever codes, its tests'
# markers, and folders the student bundle does not ship.
PROJECT_WORDS = {
    "an nbval marker": re.compile(r"NBVAL"),
    "the word 'issue'": re.compile(r"\bissues?\b", re.I),
    "a path into scripts/": re.compile(r"\bscripts/"),
    "a path into bench/": re.compile(r"\bbench/"),
    "a lever code": re.compile(r"\b[A-Z]-[A-Z]\d+(?:-[\w+]+)+"),
    "the word 'seam'": re.compile(r"\bseams?\b", re.I),
}
_NBVAL_COMMENT = re.compile(r"^[ \t]*#[ \t]*NBVAL_\w+.*(?:\n|$)", re.M)


def for_readers(nb):
    """What a learner reads of an instructor's notebook (in place, and returned): no ``test-only`` cell and
    no nbval comment marker (nbval reads the same instruction from a cell tag such as ``nbval-ignore-output``).

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\\nprint(1)"),
    ...                                      nbformat.v4.new_code_cell("assert 1", metadata={"tags": [TEST_ONLY]})])
    >>> [c.source for c in for_readers(nb).cells]
    ['print(1)']
    """
    nb.cells = [c for c in nb.cells if TEST_ONLY not in c.metadata.get("tags", [])]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _NBVAL_COMMENT.sub("", cell.source)
    return nb


def project_words(text: str) -> list[str]:
    """The project's own words in ``text`` (``PROJECT_WORDS``), each as ``what ('the text')``.

    >>> project_words("Fixed in issue 44: see scripts/answer_loss.py")
    ["the word 'issue' ('issue')", "a path into scripts/ ('scripts/')"]
    """
    return [f"{what} ({m.group(0)!r})" for what, pattern in PROJECT_WORDS.items() for m in pattern.finditer(text)]


def mark_cells(nb, stem: str):
    """Give the exercise cells nbgrader's metadata (in place): answer cells become solution cells,
    self-check cells locked grade cells with their points. Returns the number of self-checks.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1\\n### BEGIN SOLUTION\\nx = 2\\n### END SOLUTION"),
    ...                                      nbformat.v4.new_code_cell("# Self-check (2 points)\\ncheck(...)")])
    >>> mark_cells(nb, "01_demo"), nb.cells[1].metadata.nbgrader["points"], nb.cells[0].metadata.nbgrader["solution"]
    (1, 2, True)
    """
    n = manual = answers = 0          # counted, not cell positions: the release leaves out the test-only cells
    prefix = grade_prefix(stem)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = BY_HAND.match(cell.source)
            if m:
                manual += 1
                cell.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": int(m.group(1)),
                                             "grade_id": f"{prefix}-by-hand-{manual}", "schema_version": 3}
            else:
                cell.metadata.pop("nbgrader", None)
            continue
        if cell.cell_type != "code":
            continue
        meta = None
        m = SELF_CHECK.match(cell.source)
        if m:
            n += 1
            meta = {"grade": True, "solution": False, "locked": True, "points": int(m.group(1) or 1),
                    "grade_id": f"{prefix}-check-{n}"}
        elif SOLUTION in cell.source:
            answers += 1
            meta = {"grade": False, "solution": True, "locked": False, "grade_id": f"{prefix}-answer-{answers}"}
        if meta:
            cell.metadata["nbgrader"] = {**meta, "schema_version": 3}
        else:
            cell.metadata.pop("nbgrader", None)
    return n


def _error_text(cell) -> str:
    for out in cell.get("outputs", []):
        if out.output_type == "error":
            return f"{out.ename}: {out.evalue}".strip()
    return ""


@dataclass
class CellRun:
    index: int
    kind: str          # "check", "answer" or "other"
    error: str


def cell_runs(nb) -> list[CellRun]:
    """Every code cell of an executed notebook: its kind (by nbgrader metadata or marker) and its error."""
    runs = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        kind = "check" if meta.get("grade") or SELF_CHECK.match(cell.source) else \
            "answer" if meta.get("solution") or SOLUTION in cell.source else "other"
        runs.append(CellRun(i, kind, _error_text(cell)))
    return runs


def ran_status(nb) -> str:
    """How an executed notebook ran: "ok", the first cell outside the exercises that failed, or
    ``NOTHING_DONE`` when every answer cell is still the release's stub."""
    runs = cell_runs(nb)
    broken = [r for r in runs if r.kind == "other" and r.error]
    answers = [r for r in runs if r.kind == "answer"]      # the set-up notebook has none: it is never blank
    blank = bool(answers) and all(STUB_CALL in nb.cells[r.index].source for r in answers)
    return f"cell {broken[0].index}: {broken[0].error}" if broken else NOTHING_DONE if blank else "ok"
