"""The student release and class grading, with nbgrader.

The workbook's notebooks are the instructor's source: each exercise is an answer cell holding the
solution between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` and a self-check cell that starts
with ``# Self-check`` (optionally ``(N points)``), whose hidden part sits between ``### BEGIN HIDDEN
TESTS`` and ``### END HIDDEN TESTS``. ``mark_cells`` (``raglab.course.cells``) turns those markers into nbgrader's cell
metadata, so nothing is kept by hand, and nbgrader does the rest:

- ``raglab release OUT``: ``nbgrader generate_assignment`` writes the student edition (solutions
  replaced by a stub that raises ``NotImplementedError`` with a hint, hidden tests removed, outputs
  cleared, self-checks locked) into ``OUT/release``.
- ``raglab grade CLASS OUT``: for every student folder in ``CLASS`` (their notebooks, and optionally
  their ``golden.jsonl``), ``nbgrader autograde`` re-runs the notebooks with the
  hidden tests put back (the student's artifacts go to a folder of their own), then the milestone
  rubric runs on those artifacts; everything lands in ``OUT/gradebook.csv`` (a row per student, a
  column per criterion, with totals) and ``OUT/feedback/STUDENT.html`` (the failing checks and why).

This module makes the release and proves it, hands in a simulated student's notebooks and runs a
student's self-grade (``raglab grade --self``), and prints the grades. Beside it: the cells and their
markers (``raglab.course.cells``), a student's grades read from nbgrader (``raglab.course.grades``), the
points entered by hand (``raglab.course.by_hand``), the gradebook and the feedback pages
(``raglab.course.gradebook``) and a class's run (``raglab.course.classroom``).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path
from unittest import mock

from raglab.course import rubric
from raglab.course.cells import ASSIGNMENT, HIDDEN, SOLUTION, _error_text, cell_runs, for_readers, mark_cells, ran_status
from raglab.course.exercises import STUB
from raglab.course.gradebook import write_feedback
from raglab.course.grades import NOT_ANSWERED, Check, StudentGrade, _grade_cell_why, answered
from raglab.course.workbook import execute, notebooks
from raglab.base.files import atomic_dir, atomic_open


def _api(root: Path, timeout: int = 1800, sockets: Path | None = None):
    """nbgrader's API over the course folder ``root``; kernels it starts listen on local sockets in
    ``sockets`` (a short path: a socket's path is limited to about 100 characters)."""
    from nbgrader.apps import NbGraderAPI  # lazy: only the release and grading need nbgrader
    from traitlets.config import Config

    c = Config()
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    c.ClearSolutions.code_stub = {"python": STUB}
    c.Execute.timeout = timeout
    c.ExecutePreprocessor.timeout = timeout
    c.Exchange.root = str(root / "exchange")
    # kernels over local sockets: nothing listens on a port, and no "running over TCP" warning
    c.KernelManager.transport = "ipc"
    c.KernelManager.ip = str(Path(sockets or root) / "kernel")
    return NbGraderAPI(config=c)


def prepare_source(root: Path, folder: Path | None = None, only: list[str] | None = None) -> list[str]:
    """Copy the workbook's notebooks (or the ``only`` stems) into an nbgrader course folder, marked, without
    the cells only the automated tests need (``raglab.course.cells.for_readers``)."""
    import nbformat  # lazy

    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True, exist_ok=True)
    stems = []
    for path in notebooks(folder):
        if only and path.stem not in only:
            continue
        nb = for_readers(nbformat.read(path, as_version=4))
        mark_cells(nb, path.stem)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(nb, source / path.name)
        stems.append(path.stem)
    if not stems:
        raise FileNotFoundError(f"no notebook named {only} in {folder or 'notebooks/'}")
    return stems


def _generate(root: Path, folder: Path | None, only: list[str] | None) -> list[str]:
    stems = prepare_source(root, folder, only)
    result = _api(root).generate_assignment(ASSIGNMENT)
    if not result["success"]:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{result.get('error') or result.get('log')}")
    return stems


def release(out: str | Path, folder: Path | None = None, only: list[str] | None = None) -> Path:
    """``raglab release``: write the student edition of the workbook into ``OUT/release`` (and the
    data a student needs nothing else for: the notebooks import ``raglab``). Returns that folder."""
    out = Path(out).resolve()
    with tempfile.TemporaryDirectory(prefix="raglab-course-") as tmp:
        root = Path(tmp)
        _generate(root, folder, only)
        target = out / "release"
        with atomic_dir(target) as staging:
            shutil.copytree(root / "release" / ASSIGNMENT, staging, dirs_exist_ok=True)
    return target


# ---------------------------------------------------------------- proving a release

def prove(stem: str, released: Path, folder: Path | None = None, artifacts_dir: Path | None = None) -> list[str]:
    """What is wrong with one notebook's release (empty if nothing): the released notebook must hold no
    solution code and no hidden test, and run top to bottom with every self-check failing and no other
    cell (except the blanks' NotImplementedError) failing; a milestone (01 and after, not the set-up
    notebook 00) must have at least three self-checks, over all its notebooks."""
    import nbformat  # lazy

    problems = []
    milestone = {p.stem: nbformat.read(p, as_version=4) for p in notebooks(folder) if p.stem[:2] == stem[:2]}
    src = milestone[stem]
    n = sum(mark_cells(nb, name) for name, nb in milestone.items())
    if n < 3 and stem[:2] != "00":      # counted over the milestone's notebooks (milestone 7 has two)
        problems.append(f"{stem}: {n} self-checks in milestone {stem[:2]} (at least three exercises)")
    path = released / f"{stem}.ipynb"
    text = path.read_text(encoding="utf-8")
    for marker in (SOLUTION, "### END SOLUTION", HIDDEN):
        if marker in text:
            problems.append(f"{path}: still holds {marker!r}")
    solutions = [re.search(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", c.source, re.S).group(1)
                 for c in src.cells if c.cell_type == "code" and SOLUTION in c.source]
    rel = nbformat.read(path, as_version=4)
    released_code = "\n".join(c.source for c in rel.cells if c.cell_type == "code")
    for body in solutions:
        lines = [ln.strip() for ln in body.splitlines() if len(ln.strip()) > 12 and not ln.strip().startswith("#")]
        leaked = [ln for ln in lines if ln in released_code]
        if leaked:
            problems.append(f"{path}: solution line left in the release: {leaked[0]!r}")
    # the blank run saves its artifacts in a folder of its own (``artifacts_dir``: one for the whole release, run
    # in order as a student would), never over the instructor's
    with tempfile.TemporaryDirectory(prefix="raglab-prove-") as where, \
            mock.patch.dict(os.environ, {"RAGLAB_ARTIFACTS": str(artifacts_dir or where)}):
        ran = execute(path, allow_errors=True)
    for r in cell_runs(ran):
        if r.kind == "check" and not r.error:
            problems.append(f"{path}: cell {r.index}: a self-check passed on the blank release")
        if r.kind == "answer" and r.error and not r.error.startswith("NotImplementedError"):
            problems.append(f"{path}: cell {r.index}: the blank answer failed with {r.error}")
        if r.kind == "other" and r.error:
            problems.append(f"{path}: cell {r.index}: a milestone cell failed on the blank release: {r.error}")
    return problems


# ---------------------------------------------------------------- a simulated submission

def _solution_body(source_cell: str) -> str:
    """The instructor's answer cell as a student who solved it would hand it in: markers gone."""
    return "\n".join(ln for ln in source_cell.splitlines() if ln.strip() not in (SOLUTION, "### END SOLUTION"))


def hand_in(release_dir: Path, dest: Path, stem: str, answers: dict[str, str] | None = None, edit=None,
            folder: Path | None = None) -> Path:
    """A simulated student's submission (the tests' class, the bench, the bundle's proof): the released notebook
    ``stem`` with every answer cell filled with the instructor's solution, or with ``answers`` (by the function
    or the variable an answer cell defines: a function replaces the whole answer, a variable that line), then
    ``edit(nb)`` if given; saved unexecuted into ``dest``, as a student hands it in."""
    import nbformat  # lazy

    src = nbformat.read(next(p for p in notebooks(folder) if p.stem == stem), as_version=4)
    mark_cells(src, stem)
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in src.cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(Path(release_dir) / f"{stem}.ipynb", as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            body = _solution_body(solutions[meta["grade_id"]])
            for name, code in (answers or {}).items():
                if re.search(rf"^def {name}\(", body, re.M):
                    body = code                                   # a function: the whole answer
                elif re.search(rf"^{name} = ", body, re.M):       # a choice: that line
                    body = re.sub(rf"^{name} = .*$", code, body, count=1, flags=re.M)
            cell.source = body
    if edit:
        edit(nb)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest / f"{stem}.ipynb")
    return dest / f"{stem}.ipynb"


# ---------------------------------------------------------------- a student's self-grade

def grade_self(folder: str | Path, out: str | Path, only: list[str] | None = None, timeout: int = 1800) -> StudentGrade:
    """``raglab grade --self``: a student grades their own notebooks with what the release holds, without the
    instructor's notebooks or hidden tests. Every notebook ``NN_*.ipynb`` in ``folder`` (or the ``only`` stems)
    runs top to bottom in that folder, its artifacts saved to ``OUT/artifacts``; each self-check scores its points
    if it ran without error and is the release's own (a self-check edited away from nbgrader's checksum scores 0);
    the rubric runs on the artifacts (without the flags that compare with the reference solution); prose answers
    wait for the instructor. Writes ``OUT/feedback.html`` and the executed notebooks to ``OUT/executed/``."""
    import nbformat  # lazy
    from nbgrader.utils import compute_checksum  # lazy: only grading needs nbgrader

    folder, out = Path(folder).resolve(), Path(out).resolve()
    paths = [p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb")) if not only or p.stem in only]
    if not paths:
        raise FileNotFoundError(f"{folder}: no notebook to grade (NN_*.ipynb{', named ' + ', '.join(only) if only else ''})")
    grade = StudentGrade(folder.name, self_graded=True)
    artifacts = out / "artifacts"
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    with mock.patch.dict(os.environ, {"RAGLAB_ARTIFACTS": str(artifacts)}):
        for path in paths:
            nb = execute(path, timeout, allow_errors=True)
            with atomic_open(out / "executed" / path.name) as fh:
                nbformat.write(nb, fh)
            grade.ran[path.stem] = ran_status(nb)
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if not meta.get("grade"):
                    continue
                points = float(meta.get("points", 0))
                if cell.cell_type == "markdown":
                    written = answered(cell)
                    grade.checks.append(Check(path.stem, meta["grade_id"], 0.0, points,
                                              "graded by your instructor" if written else NOT_ANSWERED, True, written))
                    continue
                edited = "checksum" in meta and compute_checksum(cell) != meta["checksum"]
                why = "the self-check cell was edited: it scores nothing" if edited else _grade_cell_why(cell)
                ok = not edited and not _error_text(cell)
                grade.checks.append(Check(path.stem, meta["grade_id"], points if ok else 0.0, points, why))
    stems = [p.stem for p in paths]
    grade.rubric = rubric.check(artifacts, notebooks=stems, submission=folder, reference=False)
    grade.stages = rubric.stages_made(artifacts)
    grade.measured_on = rubric.measured_on(artifacts)
    write_feedback(grade, out / "feedback.html")
    return grade


# ---------------------------------------------------------------- the grades, printed

def format_grades(grades: list[StudentGrade]) -> str:
    """One line a student: autograder points, notebooks that ran, rubric, all points and pass or fail."""
    lines = [f"{'student':<16} {'points':>9} {'ran':>5} {'rubric':>7} {'in all':>9} {'result':<9} flags"]
    for g in grades:
        got, most = g.points
        total, possible = g.total
        lines.append(f"{g.student:<16} {got:>4g}/{most:<4g} {g.ran_ok:>2}/{len(g.ran):<2} "
                     f"{g.rubric_passed:>3}/{len(g.criteria):<3} {total:>4g}/{possible:<4g} {g.result:<9} "
                     f"{'; '.join(g.flags)}")
    return "\n".join(lines)


def json_grades(grades: list[StudentGrade]) -> list[dict]:
    return [asdict(g) for g in grades]
