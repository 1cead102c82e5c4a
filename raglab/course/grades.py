"""A student's grades: the records (``Check``: one self-check or prose answer; ``StudentGrade``: the
checks, how each notebook ran, the rubric, the stages of their pipeline and the copy flags) and reading
them from nbgrader's autograded notebooks and gradebook (``read_autograded``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from raglab.course.cells import ASSIGNMENT, _error_text, ran_status
from raglab.course.exercises import PROSE_STUB
from raglab.course.submission_criteria import NOT_WRITTEN

TO_GRADE = "to grade"
# The pass mark, the one place it is set: the share of the points possible (self-checks, answers graded by
# hand, one point per rubric criterion) that passes.
PASS_MARK = 0.6


@dataclass
class Check:
    notebook: str
    name: str
    score: float
    points: float
    why: str = ""
    by_hand: bool = False          # a prose answer the instructor grades
    pending: bool = False          # ... whose points are not entered yet


@dataclass
class StudentGrade:
    student: str
    checks: list[Check] = field(default_factory=list)
    ran: dict[str, str] = field(default_factory=dict)        # notebook -> "ok" / "missing" / the first error
    rubric: list = field(default_factory=list)               # rubric.Criterion
    stages: dict = field(default_factory=dict)               # stage -> who made it (the results file's ``stages``)
    measured_on: str = ""                                    # milestone 6's corpus, set and split (``rubric.measured_on``)
    error: str = ""
    self_graded: bool = False                                # ``grade --self``: no hidden test, no reference solution

    @property
    def points(self) -> tuple[float, float]:
        """Autograded points: scored and possible."""
        auto = [c for c in self.checks if not c.by_hand]
        return sum(c.score for c in auto), sum(c.points for c in auto)

    @property
    def by_hand(self) -> tuple[float, float, int]:
        """Points graded by hand: entered, possible, and how many answers are still to grade."""
        manual = [c for c in self.checks if c.by_hand]
        return sum(c.score for c in manual), sum(c.points for c in manual), sum(c.pending for c in manual)

    @property
    def total(self) -> tuple[float, float]:
        """All points: self-checks, answers graded by hand and one per rubric criterion met; scored and possible."""
        auto, hand = self.points, self.by_hand
        return auto[0] + hand[0] + self.rubric_passed, auto[1] + hand[1] + len(self.criteria)

    @property
    def result(self) -> str:
        """``pass`` or ``fail`` against ``PASS_MARK``; ``to grade`` while answers waiting for the instructor
        could still change it."""
        got, most = self.total
        waiting = sum(c.points for c in self.checks if c.pending)
        if got >= PASS_MARK * most:
            return "pass"
        return TO_GRADE if got + waiting >= PASS_MARK * most else "fail"

    @property
    def ran_ok(self) -> int:
        return sum(v == "ok" for v in self.ran.values())

    @property
    def criteria(self) -> list:
        """The rubric's criteria, without the copy flags (a flag is raised or not; it earns nothing)."""
        return [r for r in self.rubric if r.milestone != "flag"]

    @property
    def rubric_passed(self) -> int:
        return sum(r.passed for r in self.criteria)

    @property
    def flags(self) -> list[str]:
        """Copy flags raised: the rubric's (golden set, prose answers) and every stage that is a copy of
        raglab's function."""
        return [found(r.criterion) for r in self.rubric if r.milestone == "flag" and not r.passed
                and not r.why.startswith(NOT_WRITTEN)] + \
            [f"{name}: a copy of raglab's function" for name, r in self.stages.items() if r.get("by") == "copy"]


def found(flag: str) -> str:
    """What a raised flag found, in words: the criterion names what passing means ("... not copied from ..."),
    a raised flag says what was found.

    >>> found("failure analysis not copied from the reference solution")
    'failure analysis copied from the reference solution'
    >>> found("golden set not mostly copied from the project's")
    "golden set mostly copied from the project's"
    """
    return flag.replace(" not ", " ", 1)


def _grade_cell_why(cell) -> str:
    """A self-check's verdict as printed (PASS/FAIL line), or its error."""
    err = _error_text(cell)
    if err:
        return err.removeprefix("AssertionError: ")
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            lines = [ln for ln in out.text.splitlines() if ln.startswith(("PASS", "FAIL"))]
            if lines:
                return lines[-1]
    return ""


NOT_ANSWERED = "not answered"


def answered(cell) -> bool:
    """Whether a prose answer cell holds something other than the release's stub."""
    return cell.source.strip() not in ("", PROSE_STUB)


def read_autograded(student: str, autograded: Path, stems: list[str], gb) -> StudentGrade:
    """One student's grades: nbgrader's score for every self-check (from its gradebook), the verdict
    each printed, and whether each notebook ran cleanly outside the exercise cells."""
    import nbformat  # lazy
    from nbgrader.api import MissingEntry  # lazy

    grade = StudentGrade(student)
    for stem in stems:
        path = autograded / f"{stem}.ipynb"
        nb = nbformat.read(path, as_version=4) if path.exists() else None
        grade.ran[stem] = "missing" if nb is None else ran_status(nb)
        cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in (nb.cells if nb else [])}
        for gc in gb.find_notebook(stem, ASSIGNMENT).grade_cells:
            by_hand, pending = gc.cell_type == "markdown", False
            try:
                found = gb.find_grade(gc.name, stem, ASSIGNMENT, student)
                score, pending = found.score, by_hand and found.manual_score is None
            except MissingEntry:                    # not submitted: no grade row
                score = 0.0
            cell = cells.get(gc.name)
            if cell is None:                        # a notebook not handed in has nothing to grade, by hand or not
                why, pending, score = "notebook not submitted", False, 0.0
            elif by_hand:
                why = TO_GRADE if pending else f"graded by hand: {score:g} of {gc.max_score:g}"
                if pending and not answered(cell):          # nothing written: nothing to grade
                    why, pending, score = NOT_ANSWERED, False, 0.0
            else:
                why = _grade_cell_why(cell)
            grade.checks.append(Check(stem, gc.name, float(score or 0.0), float(gc.max_score), why, by_hand, pending))
    return grade
