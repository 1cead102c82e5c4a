"""The student release and class grading, with nbgrader.

The workbook's notebooks are the instructor's source: each exercise is an answer cell holding the
solution between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` and a self-check cell that starts
with ``# Self-check`` (optionally ``(N points)``), whose hidden part sits between ``### BEGIN HIDDEN
TESTS`` and ``### END HIDDEN TESTS``. ``mark_cells`` turns those markers into nbgrader's cell
metadata, so nothing is kept by hand, and nbgrader does the rest:

- ``raglab release OUT``: ``nbgrader generate_assignment`` writes the student edition (solutions
  replaced by a stub that raises ``NotImplementedError`` with a hint, hidden tests removed, outputs
  cleared, self-checks locked) into ``OUT/release``.
- ``raglab grade CLASS OUT``: for every student folder in ``CLASS`` (their notebooks, and optionally
  their ``golden.jsonl``), ``nbgrader autograde`` re-runs the notebooks with the
  hidden tests put back (the student's artifacts go to a folder of their own), then the milestone
  rubric runs on those artifacts; everything lands in ``OUT/gradebook.csv`` (a row per student, a
  column per criterion, with totals) and ``OUT/feedback/STUDENT.html`` (the failing checks and why).
"""
from __future__ import annotations

import csv
import hashlib
import html
import io
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from unittest import mock

from raglab.course import rubric
from raglab.course.exercises import PROSE_STUB, STUB, STUB_CALL
from raglab.course.workbook import execute, notebooks
from raglab.base.files import atomic_open

ASSIGNMENT = "raglab"
SELF_CHECK = re.compile(r"^#\s*Self-check\b(?:.*?\((\d+)\s+points?\))?", re.I)
# A prose answer the instructor grades: a Markdown cell that starts with this comment (its model answer
# follows; the release replaces it with ``PROSE_STUB``).
BY_HAND = re.compile(r"^<!--\s*graded by hand:\s*(\d+)\s+points?\s*-->")
TO_GRADE = "to grade"
SOLUTION = "### BEGIN SOLUTION"
NOTHING_DONE = "ran, but no exercise is done (worth nothing)"
STAGE_MAKERS = {"yours": "your code", "raglab": "raglab's fallback (worth nothing)",
                "copy": "a copy of raglab's function (worth nothing)"}
HIDDEN = "### BEGIN HIDDEN TESTS"


def mark_cells(nb, stem: str):
    """Give the exercise cells nbgrader's metadata (in place): answer cells become solution cells,
    self-check cells locked grade cells with their points. Returns the number of self-checks.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1\\n### BEGIN SOLUTION\\nx = 2\\n### END SOLUTION"),
    ...                                      nbformat.v4.new_code_cell("# Self-check (2 points)\\ncheck(...)")])
    >>> mark_cells(nb, "01_demo"), nb.cells[1].metadata.nbgrader["points"], nb.cells[0].metadata.nbgrader["solution"]
    (1, 2, True)
    """
    n = manual = 0
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            m = BY_HAND.match(cell.source)
            if m:
                manual += 1
                cell.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": int(m.group(1)),
                                             "grade_id": f"{stem[:2]}-by-hand-{manual}", "schema_version": 3}
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
                    "grade_id": f"{stem[:2]}-check-{n}"}
        elif SOLUTION in cell.source:
            meta = {"grade": False, "solution": True, "locked": False, "grade_id": f"{stem[:2]}-answer-{i}"}
        if meta:
            cell.metadata["nbgrader"] = {**meta, "schema_version": 3}
        else:
            cell.metadata.pop("nbgrader", None)
    return n


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
    """Copy the workbook's notebooks (or the ``only`` stems) into an nbgrader course folder, marked."""
    import nbformat  # lazy

    source = root / "source" / ASSIGNMENT
    source.mkdir(parents=True, exist_ok=True)
    stems = []
    for path in notebooks(folder):
        if only and path.stem not in only:
            continue
        nb = nbformat.read(path, as_version=4)
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
        staging = out / ".release.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(root / "release" / ASSIGNMENT, staging)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


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


# ---------------------------------------------------------------- grading a class

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
        return [r.criterion for r in self.rubric if r.milestone == "flag" and not r.passed
                and not r.why.startswith(rubric.NOT_WRITTEN)] + \
            [f"{name}: a copy of raglab's function" for name, r in self.stages.items() if r.get("by") == "copy"]


def _error_text(cell) -> str:
    for out in cell.get("outputs", []):
        if out.output_type == "error":
            return f"{out.ename}: {out.evalue}".strip()
    return ""


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


def ran_status(nb) -> str:
    """How an executed notebook ran: "ok", the first cell outside the exercises that failed, or
    ``NOTHING_DONE`` when every answer cell is still the release's stub."""
    runs = cell_runs(nb)
    broken = [r for r in runs if r.kind == "other" and r.error]
    answers = [r for r in runs if r.kind == "answer"]      # the set-up notebook has none: it is never blank
    blank = bool(answers) and all(STUB_CALL in nb.cells[r.index].source for r in answers)
    return f"cell {broken[0].index}: {broken[0].error}" if broken else NOTHING_DONE if blank else "ok"


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
            if cell is None:
                why = "notebook not submitted"
            elif by_hand:
                why = TO_GRADE if pending else f"graded by hand: {score:g} of {gc.max_score:g}"
                if pending and not answered(cell):          # nothing written: nothing to grade
                    why, pending, score = NOT_ANSWERED, False, 0.0
            else:
                why = _grade_cell_why(cell)
            grade.checks.append(Check(stem, gc.name, float(score or 0.0), float(gc.max_score), why, by_hand, pending))
    return grade


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
    write_feedback(grade, out / "feedback.html")
    return grade


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


def columns(grades: list[StudentGrade]) -> list[str]:
    """The gradebook's columns: each self-check, each notebook's clean run, each rubric criterion, totals."""
    first = grades[0]
    return (["student"] + [f"{c.notebook[:2]} {c.name}" for c in first.checks]
            + [f"ran {stem[:2]}" for stem in first.ran]
            + [f"rubric: {r.criterion}" for r in first.rubric]
            + ["autograder points", "autograder max", "by-hand points", "by-hand max", "to grade",
               "notebooks ran", "rubric passed", "rubric criteria", "flags"])


def row(g: StudentGrade) -> list:
    got, most = g.points
    hand, hand_most, pending = g.by_hand
    return ([g.student] + [TO_GRADE if c.pending else round(c.score, 2) for c in g.checks]
            + [int(v == "ok") for v in g.ran.values()]
            + [int(r.passed) for r in g.rubric]
            + [round(got, 2), round(most, 2), round(hand, 2), round(hand_most, 2), pending,
               g.ran_ok, g.rubric_passed, len(g.criteria), "; ".join(g.flags)])


def write_gradebook(grades: list[StudentGrade], path: Path) -> Path:
    """One CSV: a row per student, a column per criterion, totals at the end."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns(grades))
    for g in grades:
        w.writerow(row(g))
    with atomic_open(path) as fh:
        fh.write(buf.getvalue())
    return path


def feedback_html(g: StudentGrade) -> str:
    """One student's feedback page: totals, then every failing check, notebook and criterion with why."""
    e = html.escape
    got, most = g.points
    failing = [c for c in g.checks if c.score < c.points and not c.pending]
    parts = [f"<h1>Feedback for {e(g.student)}</h1>",
             f"<p class='totals'>Autograder: <b>{got:g} of {most:g}</b> points · graded by hand: "
             f"<b>{g.by_hand[0]:g} of {g.by_hand[1]:g}</b>" + (f" ({g.by_hand[2]} to grade)" if g.by_hand[2] else "") +
             " · notebooks that ran cleanly: "
             f"<b>{g.ran_ok} of {len(g.ran)}</b> · rubric: <b>{g.rubric_passed} of {len(g.criteria)}</b> criteria</p>"]
    if g.self_graded:
        parts.append("<p class='note'>A self-grade: the visible self-checks and the rubric on what your notebooks saved. "
                     "Your instructor's grade adds the hidden tests and the points of the prose answers.</p>")
    if g.error:
        parts.append(f"<p class='error'>The autograder reported: {e(g.error)}</p>")
    parts.append("<h2>Notebooks</h2><ul>" + "".join(
        f"<li class='{'ok' if v == 'ok' else 'fail'}'>{e(stem)}: {e('ran cleanly' if v == 'ok' else v)}</li>"
        for stem, v in g.ran.items()) + "</ul>")
    parts.append("<h2>Your pipeline</h2>" + ("<p>No stage of your pipeline ran.</p>" if not g.stages else
                 "<table><tr><th>milestone</th><th>stage</th><th>made by</th><th>why</th></tr>" + "".join(
                     f"<tr class='{'ok' if r.get('by') == 'yours' else 'fail'}'><td>{e(str(r.get('milestone')))}</td>"
                     f"<td>{e(name)}</td><td>{e(STAGE_MAKERS.get(r.get('by'), str(r.get('by'))))}</td>"
                     f"<td>{e(str(r.get('why', '')))}</td></tr>" for name, r in sorted(
                         g.stages.items(), key=lambda kv: str(kv[1].get('milestone')))) + "</table>"))
    parts.append("<h2>Failing self-checks</h2>" + ("<p>None: every self-check passed.</p>" if not failing else
                 "<table><tr><th>notebook</th><th>check</th><th>score</th><th>why</th></tr>" + "".join(
                     f"<tr class='fail'><td>{e(c.notebook)}</td><td>{e(c.name)}</td><td>{c.score:g} / {c.points:g}</td>"
                     f"<td>{e(c.why or 'no output')}</td></tr>" for c in failing) + "</table>"))
    waiting = [c for c in g.checks if c.pending]
    if waiting:
        parts.append("<h2>Graded by hand: waiting for the instructor</h2><ul>" + "".join(
            f"<li>{e(c.notebook)} {e(c.name)}: {c.points:g} points, {TO_GRADE}</li>" for c in waiting) + "</ul>")
    bad = [r for r in g.rubric if not r.passed]
    parts.append("<h2>Rubric criteria not met</h2>" + ("<p>None: every criterion passed.</p>" if not bad else
                 "<table><tr><th>milestone</th><th>criterion</th><th>reads the stages</th><th>why</th></tr>" + "".join(
                     f"<tr class='fail'><td>{e(r.milestone)}</td><td>{e(r.criterion)}</td>"
                     f"<td>{e(', '.join(r.stages) or '-')}</td><td>{e(r.why)}</td></tr>"
                     for r in bad) + "</table>"))
    passed = [c for c in g.checks if c.score >= c.points]
    parts.append("<h2>Passed</h2><ul>" + "".join(f"<li>{e(c.notebook)} {e(c.name)}: {e(c.why)}</li>" for c in passed)
                 + "".join(f"<li>{e(r.criterion)}: {e(r.why)}</li>" for r in g.rubric if r.passed) + "</ul>")
    style = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;line-height:1.4}"
             "table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.3rem;text-align:left;"
             "vertical-align:top}.fail{color:#a40000}.ok{color:#106010}")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>raglab feedback: {e(g.student)}"
            f"</title><style>{style}</style></head><body>{''.join(parts)}</body></html>\n")


def write_feedback(g: StudentGrade, path: Path) -> Path:
    with atomic_open(path) as fh:
        fh.write(feedback_html(g))
    return path


def format_grades(grades: list[StudentGrade]) -> str:
    lines = [f"{'student':<16} {'points':>9} {'ran':>5} {'rubric':>7}  flags"]
    for g in grades:
        got, most = g.points
        lines.append(f"{g.student:<16} {got:>4g}/{most:<4g} {g.ran_ok:>2}/{len(g.ran):<2} "
                     f"{g.rubric_passed:>3}/{len(g.criteria):<3}  {'; '.join(g.flags)}")
    return "\n".join(lines)


def json_grades(grades: list[StudentGrade]) -> list[dict]:
    return [asdict(g) for g in grades]


# ---------------------------------------------------------------- proving a release

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


def prove(stem: str, released: Path, folder: Path | None = None, artifacts_dir: Path | None = None) -> list[str]:
    """What is wrong with one notebook's release (empty if nothing): the released notebook must hold no
    solution code and no hidden test, and run top to bottom with every self-check failing and no other
    cell (except the blanks' NotImplementedError) failing; a milestone (01 and after, not the set-up
    notebook 00) must have at least three self-checks."""
    import nbformat  # lazy

    problems = []
    source = next(p for p in notebooks(folder) if p.stem == stem)
    src = nbformat.read(source, as_version=4)
    n = mark_cells(src, stem)
    if n < 3 and stem[:2] != "00":
        problems.append(f"{stem}: {n} self-checks (at least three exercises)")
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
