"""Grading a class at scale: every student in a process and a folder of their own, N at a time on this
machine or on a Dask cluster's workers, and a run that resumes where it stopped.

``raglab grade CLASS --out OUT [--jobs N | --scheduler ADDRESS]`` lays out ``OUT`` as:

- ``OUT/assignment/``: the assignment made once per run (the marked source notebooks, the student
  release, and nbgrader's database holding the assignment and no student);
- ``OUT/students/STUDENT/``: one student's run, replaced whole when it is done: ``course/`` (a private
  nbgrader course folder: the source, a copy of the assignment's database, the submission and the
  autograded notebooks), ``artifacts/`` (what the student's notebooks saved), ``record.json`` (the
  submission's key, the rubric, the stages of their pipeline, seconds taken);
- ``OUT/course/``: the class's nbgrader course folder, whose ``gradebook.db`` the formgrader and
  ``enter_by_hand`` use. Only this process writes it: it is rebuilt from the students' folders after
  they ran, with the points the instructor entered by hand carried over, and swapped in whole;
- ``OUT/gradebook.csv`` and ``OUT/feedback/``, each replaced whole.

A student is graded by ``python -m raglab.course.classroom`` in a process of its own: its own
environment (artifacts folder, kernel sockets, thread count), its own nbgrader database, so no two
students' runs share anything they write. A student whose key (a hash of the assignment's source,
the files they handed in, the notebooks graded, the profile and how the model runs) matches their
record is not run again: an interrupted run resumes, and a class re-graded after one student hands in
again re-runs that student only.

Notebook 08's local-model experiment is not re-run for every student: the notebooks run with
``$RAGLAB_RECORDED`` set to ``OUT/recorded`` (unless it is set already), so the model runs once for the class and every student's
notebook reads that measurement (``--live-model`` runs it for every student).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from raglab.base import config
from raglab.course import rubric
from raglab.course.by_hand import entered_by_hand, restore_by_hand
from raglab.course.cells import ASSIGNMENT
from raglab.course.gradebook import write_feedback, write_gradebook
from raglab.course.grades import StudentGrade, read_autograded
from raglab.course.grading import _api, _generate
from raglab.course.workbook import notebooks
from raglab.base.files import atomic_dir, atomic_open, crash_point

RECORD = "record.json"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def handed_in(student: Path, stems: list[str]) -> list[Path]:
    """The files of a student's folder that grading reads: the assigned notebooks and ``golden.jsonl``."""
    files = [student / f"{stem}.ipynb" for stem in stems] + [student / "golden.jsonl"]
    return [p for p in files if p.is_file()]


def submission_key(student: Path, stems: list[str], source: str, model: str) -> str:
    """What a student's grade depends on: the assignment's source, the files handed in, the notebooks graded,
    the profile and how the local model runs. A record with the same key is not graded again."""
    parts = [source, config.profile(), model, ",".join(stems)]
    parts += [f"{p.name}:{_sha(p)}" for p in handed_in(student, stems)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def read_record(work: Path, key: str | None = None) -> dict | None:
    """A student's record if their run finished (and, given ``key``, for the same submission)."""
    try:
        record = json.loads((work / RECORD).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return record if key is None or record.get("key") == key else None


# ---------------------------------------------------------------- one student, in a process of its own

def grade_student(task: dict) -> dict:
    """Autograde one student in a course folder of their own and run the rubric on what their notebooks saved;
    ``OUT/students/STUDENT`` is replaced whole when it is done (a run killed midway leaves the last one)."""
    student_dir, work, template = Path(task["student_dir"]), Path(task["work"]), Path(task["template"])
    name, stems = student_dir.name, task["stems"]
    started = time.perf_counter()
    with atomic_dir(work) as tmp:
        course = tmp / "course"
        shutil.copytree(template / "source", course / "source")
        shutil.copy2(template / "gradebook.db", course / "gradebook.db")
        submitted = course / "submitted" / name / ASSIGNMENT
        submitted.mkdir(parents=True)
        for path in handed_in(student_dir, stems):
            if path.suffix == ".ipynb":
                shutil.copy2(path, submitted / path.name)
        artifacts = tmp / "artifacts"
        artifacts.mkdir()
        os.environ["RAGLAB_ARTIFACTS"] = str(artifacts)     # this process grades this student only
        with tempfile.TemporaryDirectory(prefix="raglab-kernel-") as sockets:
            result = _api(course, task["timeout"], Path(sockets)).autograde(ASSIGNMENT, name)
        error = ""
        if not result["success"]:
            lines = (result.get("error") or result.get("log") or "").strip().splitlines()
            error = lines[-1] if lines else "nbgrader autograde failed"
        record = {"student": name, "key": task["key"], "error": error,
                  "rubric": [asdict(r) for r in rubric.check(artifacts, notebooks=stems, submission=student_dir)],
                  "stages": rubric.stages_made(artifacts),
                  "measured_on": rubric.measured_on(artifacts), "seconds": round(time.perf_counter() - started, 1)}
        with atomic_open(tmp / RECORD) as fh:
            json.dump(record, fh, indent=1)
    return record


def run_student(task: dict) -> dict:
    """Grade one student in a new Python process with the task's environment (how the local pool and a Dask
    worker both run a student); returns how it went. The process's output goes to ``STUDENT.log`` beside
    the student's folder."""
    env = {**os.environ, **task["env"]}
    for name in task.get("unset", []):
        env.pop(name, None)
    work = Path(task["work"])
    log = work.parent / f"{work.name}.log"
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.run([sys.executable, "-m", "raglab.course.classroom", json.dumps(task)], env=env,
                              stdout=fh, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    return {"student": Path(task["student_dir"]).name, "returncode": proc.returncode,
            "seconds": round(time.perf_counter() - started, 1), "error": last_line(log) if proc.returncode else ""}


def _die_with_parent() -> None:
    """In a student's process, before it starts: on Linux, be killed when the grading run that started it
    dies, so a killed run leaves no orphan grading (and writing) the next student beside the resumed run."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG


def last_line(log: Path) -> str:
    """The last line a student's grading process wrote (its error, when it failed), or ''."""
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log.exists() else []
    return lines[-1] if lines else ""


def _executor(jobs: int, scheduler: str | None):
    """Something with ``map``: a local pool running ``jobs`` students at a time, or a Dask cluster's executor."""
    if scheduler:
        from distributed import Client  # lazy: only a cluster run needs Dask

        client = Client(scheduler)
        return client, client.get_executor(pure=False)
    pool = ThreadPoolExecutor(max_workers=jobs)     # each thread waits on a student's own process
    return pool, pool


# ---------------------------------------------------------------- the class

def grade_class(class_dir: str | Path, out: str | Path, folder: Path | None = None, only: list[str] | None = None,
                timeout: int = 1800, jobs: int = 1, scheduler: str | None = None, live_model: bool = False,
                log: Callable[[str], None] = print) -> list[StudentGrade]:
    """``raglab grade CLASS OUT``: autograde every student folder in ``CLASS`` (``jobs`` at a time, or on the
    Dask scheduler at ``scheduler``), run the milestone rubric on what their notebooks saved, and write
    ``OUT/gradebook.csv`` and ``OUT/feedback/*.html``. Students graded before with the same submission
    are not run again (see the module docstring).

    ``only`` limits the assignment to some notebooks (by stem, e.g. ``01_ingest_and_chunking``); by
    default it is every notebook any submission holds."""
    class_dir, out = Path(class_dir).resolve(), Path(out).resolve()   # nbgrader changes folders as it works
    if jobs < 1:
        raise ValueError(f"--jobs {jobs}: at least 1")
    students = sorted(p for p in class_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not students:
        raise FileNotFoundError(f"{class_dir}: no student folders (one folder per student, holding their notebooks)")
    if only is None:
        held = {p.stem for s in students for p in s.glob("[0-9][0-9]_*.ipynb")}
        only = sorted(held & {p.stem for p in notebooks(folder)})
    out.mkdir(parents=True, exist_ok=True)
    template = out / "assignment"
    with atomic_dir(template) as tmp:
        stems = _generate(tmp, folder, only)
    source = hashlib.sha256("".join(_sha(p) for p in sorted((template / "source" / ASSIGNMENT).glob("*.ipynb")))
                            .encode()).hexdigest()
    model = "live" if live_model else "recorded"
    env = {} if live_model else {"RAGLAB_RECORDED": config.get("RAGLAB_RECORDED") or str(out / "recorded")}
    if jobs > 1 and not scheduler:   # N students at a time share the cores: one thread each, not N x all
        env.update(config.thread_env(jobs))
    keys = {s.name: submission_key(s, stems, source, model) for s in students}
    todo = [s for s in students if read_record(out / "students" / s.name, keys[s.name]) is None]
    (out / "students").mkdir(exist_ok=True)
    log(f"grading {len(todo)} of {len(students)} students ({len(students) - len(todo)} unchanged since their last "
        f"grade), {'on ' + scheduler if scheduler else f'{jobs} at a time'}: {', '.join(stems)}")
    tasks = [{"student_dir": str(s), "work": str(out / "students" / s.name), "template": str(template),
              "stems": stems, "timeout": timeout, "key": keys[s.name], "env": env,
              "unset": ["RAGLAB_RECORDED"] if live_model else []} for s in todo]
    holder, executor = _executor(jobs, scheduler)
    try:
        for n, done in enumerate(executor.map(run_student, tasks), 1):
            state = "graded" if done["returncode"] == 0 else f"FAILED ({done['error']})"
            log(f"  {done['student']}: {state} in {done['seconds']:g} s ({n} of {len(tasks)})")
            crash_point("class-student-graded")
    finally:
        (holder.close if scheduler else holder.shutdown)()
    grades = collect(students, out, stems, keys)
    write_gradebook(grades, out / "gradebook.csv")
    with atomic_dir(out / "feedback") as tmp:
        for g in grades:
            write_feedback(g, tmp / f"{g.student}.html")
    return grades


def _copy_grades(src_db: Path, gb, student: str) -> bool:
    """Put one student's autograded scores from their own nbgrader database into the class's ``gb``."""
    from nbgrader.api import Gradebook, MissingEntry  # lazy: only grading needs nbgrader

    with Gradebook(f"sqlite:///{src_db}") as theirs:
        try:
            sub = theirs.find_submission(ASSIGNMENT, student)
        except MissingEntry:                 # autograde stopped before it recorded the submission
            return False
        gb.update_or_create_student(student)
        gb.add_submission(ASSIGNMENT, student, timestamp=sub.timestamp)
        for nb in sub.notebooks:
            for grade in nb.grades:
                mine = gb.find_grade(grade.name, nb.name, ASSIGNMENT, student)
                mine.auto_score, mine.needs_manual_grade = grade.auto_score, grade.needs_manual_grade
            for comment in nb.comments:
                gb.find_comment(comment.name, nb.name, ASSIGNMENT, student).auto_comment = comment.auto_comment
        gb.db.commit()
    return True


def collect(students: list[Path], out: Path, stems: list[str], keys: dict[str, str]) -> list[StudentGrade]:
    """Rebuild the class's course folder from the students' own runs (this process is its only writer), carry
    over the points entered by hand for answers that did not change, and read every student's grade."""
    from nbgrader.api import Gradebook  # lazy
    from sqlalchemy.exc import SAWarning  # lazy: nbgrader's database layer

    warnings.filterwarnings("ignore", category=SAWarning)     # nbgrader's own session use: nothing to act on
    entered = entered_by_hand(out / "course")                 # points the instructor entered (formgrader, API)
    template = out / "assignment"
    grades = []
    with atomic_dir(out / "course") as root:
        for part in ("source", "release"):
            shutil.copytree(template / part, root / part)
        shutil.copy2(template / "gradebook.db", root / "gradebook.db")
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
            for s in students:
                work = out / "students" / s.name
                record = read_record(work, keys[s.name])
                autograded = root / "autograded" / s.name / ASSIGNMENT
                if record is not None and _copy_grades(work / "course" / "gradebook.db", gb, s.name):
                    for part in ("submitted", "autograded"):
                        shutil.copytree(work / "course" / part / s.name, root / part / s.name)
                    restore_by_hand(gb, s.name, autograded, entered.get(s.name, {}))
                else:
                    gb.update_or_create_student(s.name)
                grade = read_autograded(s.name, autograded, stems, gb)
                if record is None:
                    log_file = work.parent / f"{s.name}.log"
                    grade.error = f"not graded: {last_line(log_file) or 'the run did not finish'} (see {log_file})"
                else:
                    grade.error = record["error"]
                    grade.rubric = [rubric.Criterion(**{**r, "stages": tuple(r["stages"])}) for r in record["rubric"]]
                    grade.stages = record["stages"]
                    grade.measured_on = record.get("measured_on", "")
                grades.append(grade)
    return grades


if __name__ == "__main__":      # one student, as ``run_student`` starts it: python -m raglab.course.classroom TASK
    grade_student(json.loads(sys.argv[1]))
