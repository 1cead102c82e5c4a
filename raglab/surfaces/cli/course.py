"""The course verbs: ``check``, ``release``, ``grade``, ``report`` and ``workbook``, each option next to its handler."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from raglab.base.files import atomic_open
from raglab.course import bundle, classroom, grading
from raglab.course.artifacts import jsonable
from raglab.course.report import write_report
from raglab.course.rubric import run_check
from raglab.course.workbook import run_workbook


def cmd_workbook(args) -> int:
    # both are read by every notebook's kernel (it inherits the environment) and by the scoreboard
    if args.corpus:
        corpus = Path(args.corpus).resolve()
        if not corpus.is_dir():
            raise SystemExit(f"--corpus {args.corpus}: no such folder")
        os.environ["RAGLAB_CORPUS"] = str(corpus)
    if args.golden:
        golden = Path(args.golden).resolve()
        if not golden.is_file():
            raise SystemExit(f"--golden {args.golden}: no such file")
        os.environ["RAGLAB_GOLDEN"] = str(golden)
    return 0 if run_workbook(out=args.out, inplace=args.inplace) else 1


def cmd_release(args) -> int:
    target = grading.release(args.out, only=args.notebook or None)
    released = grading.notebooks(target)
    print(f"student release: {target.resolve()}/ ({', '.join(p.name for p in released)})")
    archive, sha = bundle.build(args.out, target)
    print(f"student bundle:  {archive} (sha256 {sha}): hand this file out; START.md inside says how to begin")
    if not args.prove:
        return 0
    with tempfile.TemporaryDirectory(prefix="raglab-prove-") as blank_artifacts:   # the release's run, in order
        problems = [line for p in released for line in grading.prove(p.stem, target, artifacts_dir=Path(blank_artifacts))]
    for line in problems:
        print(line)
    print(f"proof: {'every self-check fails on the blank release and the milestones still run' if not problems else f'{len(problems)} problems'}")
    return 0 if not problems else 1


def cmd_grade(args) -> int:
    if args.self_grade:
        out = Path(args.out or "grade").resolve()
        grade = grading.grade_self(args.class_dir or ".", out, only=args.notebook or None)
        print(grading.format_grades([grade]))
        print(f"feedback: {out / 'feedback.html'} (the visible self-checks and the rubric on your artifacts; "
              "your instructor's grade adds hidden tests and the prose answers' points)")
        if args.json:
            with atomic_open(out / "grade.json") as fh:
                json.dump(jsonable(grading.json_grades([grade])[0]), fh, indent=1)
        return 0
    if not args.class_dir:
        raise SystemExit("raglab grade: give the CLASS folder (one folder per student), or --self for your own notebooks")
    grades = classroom.grade_class(args.class_dir, args.out or "build/grades", only=args.notebook or None,
                                   jobs=args.jobs, scheduler=args.scheduler, live_model=args.live_model)
    print(grading.format_grades(grades))
    out = Path(args.out or "build/grades").resolve()
    print(f"gradebook: {out / 'gradebook.csv'}\nfeedback:  {out / 'feedback'}/ (one page per student)")
    if args.json:
        with atomic_open(out / "grades.json") as fh:
            json.dump(jsonable(grading.json_grades(grades)), fh, indent=1)
    return 0


def cmd_check(args) -> int:
    return run_check(args.dir)


def cmd_report(args) -> int:
    md, page = write_report(args.artifacts, args.out)
    print(f"report: {page.resolve()}\nmarkdown: {md.resolve()}")
    return 0


def add_check(sub) -> None:
    """``raglab check``."""
    chk = sub.add_parser("check", help="the instructor's rubric: every milestone's 'done when' against the artifacts")
    chk.add_argument("dir", nargs="?", help="artifacts folder (default: $RAGLAB_ARTIFACTS or build/artifacts)")
    chk.set_defaults(func=cmd_check)


def add_release(sub) -> None:
    """``raglab release``."""
    rel = sub.add_parser("release", help="the student edition: exercises blanked, hidden tests removed (nbgrader)")
    rel.add_argument("--out", default="build/course", help="writes OUT/release/ (default: build/course)")
    rel.add_argument("--notebook", action="append", metavar="STEM", help="only this notebook (repeatable), e.g. 01_ingest_and_chunking")
    rel.add_argument("--prove", action="store_true", help="run the release: every self-check must fail on the blanks, nothing else")
    rel.set_defaults(func=cmd_release)


def add_grade(sub) -> None:
    """``raglab grade``: a class, or with ``--self`` your own notebooks."""
    grd = sub.add_parser("grade", help="grade a class: autograder, rubric, clean runs -> gradebook.csv + feedback pages")
    grd.add_argument("class_dir", metavar="CLASS", nargs="?",
                     help="a folder per student, each holding their notebooks (and golden.jsonl); with --self, "
                          "the folder of your own notebooks (default: the current folder)")
    grd.add_argument("--out", help="gradebook.csv and feedback/ (default: build/grades; with --self: grade/)")
    grd.add_argument("--notebook", action="append", metavar="STEM", help="grade only this notebook (repeatable)")
    grd.add_argument("--json", action="store_true", help="also write OUT/grades.json")
    grd.add_argument("--self", dest="self_grade", action="store_true",
                     help="grade your own notebooks from the student bundle: self-checks, the rubric, a feedback page")
    grd.add_argument("--jobs", type=int, default=1, metavar="N", help="grade N students at a time on this machine (default 1)")
    grd.add_argument("--scheduler", metavar="ADDRESS", help="run the students on a Dask cluster (tcp://HOST:8786)")
    grd.add_argument("--live-model", action="store_true",
                     help="run notebook 08's local model for every student (default: once for the class)")
    grd.set_defaults(func=cmd_grade)


def add_report(sub) -> None:
    """``raglab report``."""
    rep = sub.add_parser("report", help="the course write-up (HTML + Markdown) from the run's results file")
    rep.add_argument("--artifacts", help="artifacts folder (default: $RAGLAB_ARTIFACTS or build/artifacts)")
    rep.add_argument("--out", help="output folder (default: report/ beside the artifacts folder)")
    rep.set_defaults(func=cmd_report)


def add_workbook(sub) -> None:
    """``raglab workbook``: the main job."""
    wb = sub.add_parser("workbook", help="the main job: execute the notebooks in order and render HTML")
    wb.add_argument("--out", default="build", help="folder for executed notebooks and HTML (default: build)")
    wb.add_argument("--inplace", action="store_true", help="also save the executed notebooks over the sources")
    wb.add_argument("--corpus", metavar="DIR", help="a folder of your own .md/.txt pages every notebook runs on (sets "
                    "RAGLAB_CORPUS; default: settings.toml beside the notebooks, else the Python docs); needs --golden "
                    "or a golden.jsonl for it beside the notebooks")
    wb.add_argument("--golden", metavar="FILE", help="a split golden set every notebook measures with (sets RAGLAB_GOLDEN; "
                    "default: golden.jsonl beside the notebooks once it passes the check, else the course's)")
    wb.set_defaults(func=cmd_workbook)
