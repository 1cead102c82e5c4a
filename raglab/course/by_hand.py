"""Prose answers graded by hand: the points an instructor enters into the class's nbgrader database
(``enter_by_hand``, or nbgrader's formgrader), read back before a re-grade and put back for every answer
that did not change since."""
from __future__ import annotations

import hashlib
from pathlib import Path

from raglab.course.cells import ASSIGNMENT


def _answers_by_hand(autograded: Path) -> dict[tuple[str, str], str]:
    """``(notebook, grade_id) -> sha256 of the answer`` for every prose cell of one student's graded notebooks."""
    import nbformat  # lazy

    out = {}
    for path in sorted(autograded.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "markdown" and meta.get("grade") and meta.get("solution"):
                out[(path.stem, meta["grade_id"])] = hashlib.sha256(cell.source.strip().encode()).hexdigest()
    return out


def entered_by_hand(root: Path) -> dict[str, dict[tuple[str, str], tuple[float, str]]]:
    """The points an instructor entered for prose answers in an earlier run's nbgrader database (with its
    formgrader or API): ``{student: {(notebook, grade_id): (points, sha256 of the answer graded)}}``."""
    db = root / "gradebook.db"
    if not db.exists():
        return {}
    from nbgrader.api import Gradebook, MissingEntry  # lazy

    out: dict = {}
    with Gradebook(f"sqlite:///{db}") as gb:
        for student in gb.students:
            answers = _answers_by_hand(root / "autograded" / student.id / ASSIGNMENT)
            for key, sha in answers.items():
                try:
                    found = gb.find_grade(key[1], key[0], ASSIGNMENT, student.id)
                except MissingEntry:                 # not graded then
                    continue
                if found.manual_score is not None:
                    out.setdefault(student.id, {})[key] = (float(found.manual_score), sha)
    return out


def restore_by_hand(gb, student: str, autograded: Path, entered: dict) -> int:
    """Put back the points entered earlier for the answers that did not change since (a changed answer is
    to grade again). Returns how many were restored."""
    answers = _answers_by_hand(autograded)
    n = 0
    for key, (points, sha) in entered.items():
        if answers.get(key) == sha:
            found = gb.find_grade(key[1], key[0], ASSIGNMENT, student)
            found.manual_score = points
            n += 1
    if n:
        gb.db.commit()
    return n


def enter_by_hand(out: str | Path, student: str, notebook: str, grade_id: str, points: float) -> None:
    """Enter the points of one prose answer into the class's nbgrader database (what the formgrader does);
    the next ``raglab grade`` shows them in the gradebook."""
    from nbgrader.api import Gradebook  # lazy

    with Gradebook(f"sqlite:///{Path(out) / 'course' / 'gradebook.db'}") as gb:
        cell = gb.find_grade_cell(grade_id, notebook, ASSIGNMENT)
        if not 0 <= points <= cell.max_score:
            raise ValueError(f"{notebook} {grade_id}: {points} points is outside 0..{cell.max_score:g}")
        found = gb.find_grade(grade_id, notebook, ASSIGNMENT, student)
        found.manual_score = points
        gb.db.commit()
