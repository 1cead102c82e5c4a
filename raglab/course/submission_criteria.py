"""The rubric's criteria graded only on a submission (``raglab grade``): what the student brought and
wrote (``Submission``: their folder, its golden set checked once), a golden set of their own, and the
copy flags (the golden set, the answers compared with the reference solution's)."""
from __future__ import annotations

from pathlib import Path

from raglab.base import config
from raglab.course import exercises
from raglab.course.criteria import M, Artifacts
from raglab.course.golden_in_use import corpus_in_use
from raglab.infra.corpus import load_corpus
from raglab.evaluation.golden import check_student_golden


class Submission(Artifacts):
    """A student's folder (their notebooks and ``golden.jsonl``), its golden set checked once for every
    criterion that reads it."""

    def golden(self):
        def load():
            path = self.where / "golden.jsonl"
            if not path.exists():
                raise FileNotFoundError(f"{path}: no golden set of your own beside your notebooks")
            return check_student_golden(path, load_corpus(corpus_in_use(self.where)))   # settings.toml's, if any
        return self._once("golden.jsonl", load)


def own_golden_set(s: Submission):
    report = s.golden()
    if report.problems:
        return False, f"{len(report.problems)} problems, first: {report.problems[0]}"
    return True, f"{report.questions} questions of your own pass the checks ({report.lines()[-1]})"


NOT_WRITTEN = "not written"     # a flag that has nothing to judge: it fails (worth nothing) but flags no copy


def golden_not_copied(s: Submission):
    if not (s.where / "golden.jsonl").exists():
        return False, f"{NOT_WRITTEN}: no golden.jsonl in the submission"
    report = s.golden()
    share = len(report.copies) / max(report.questions, 1)
    return share <= 0.5, f"{len(report.copies)} of {report.questions} questions are the project's ({share:.0%}; more than half is flagged)"


def _code_lines(source: str) -> list[str]:
    """A cell's code without comments, solution markers, blank lines or indentation (to compare answers)."""
    return [ln.strip() for ln in source.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def _answer_cell(path: Path, marker: str) -> str:
    import nbformat  # lazy

    nb = nbformat.read(path, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and marker in c.source]
    if not cells:
        raise ValueError(f"{path}: no answer cell that runs {marker!r}")
    return cells[0]


def answer_not_reference(s: Submission, stem: str, marker: str, what: str):
    mine = _answer_cell(s.where / f"{stem}.ipynb", marker)
    if exercises.STUB_CALL in mine:
        return False, f"{NOT_WRITTEN}: the {what} (the answer cell still raises NotImplementedError)"
    reference = _answer_cell(config.PROJECT_ROOT / "notebooks" / f"{stem}.ipynb", marker)
    same = _code_lines(mine) == _code_lines(reference)
    return not same, (f"the {what} is the reference solution's, line for line" if same
                      else f"the {what} differs from the reference solution")


# Graded only on a submission (``raglab grade``): what the student brought and wrote.
SUBMISSION_CRITERIA = [
    (M["06"], "a golden set of the student's own passes the checks", own_golden_set, "06", ()),
    ("flag", "golden set not mostly copied from the project's", golden_not_copied, "06", ()),
    ("flag", "failure analysis not copied from the reference solution",
     lambda s: answer_not_reference(s, "06_evaluation", 'record("traced_failures"', "failure analysis"), "06", ()),
    ("flag", "chunking choice not copied from the reference solution",
     lambda s: answer_not_reference(s, "07_bakeoff", 'record("choice"', "chunking choice"), "07", ()),
]

# the flags that read the reference solution (the instructor's notebooks): not in a student's self-grade
READ_THE_REFERENCE = {c for m, c, *_ in SUBMISSION_CRITERIA if "reference solution" in c}
