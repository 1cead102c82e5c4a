"""``raglab check DIR``: the instructor's rubric, read from the artifacts the notebooks saved.

Each criterion is one milestone's "done when" from the course, checked against the saved
artifacts (never against a notebook's printed words): pass or fail, and why, with the numbers.
A missing or unreadable artifact fails its criterion and says which file and what to run.

The rubric grades the student's pipeline, not raglab: each criterion names the stages whose
artifacts it reads (the student's chunker, BM25, fusion, citation check...), and a criterion over a
stage that raglab's fallback made, or a copy of raglab's function, fails with that reason
(``raglab.course.exercises.stage`` records who made each stage in the results file).

The criteria live beside it: ``raglab.course.criteria`` (on the milestone artifacts) and
``raglab.course.submission_criteria`` (on a student's submission); this module runs them and prints,
writes and shows the verdicts.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from raglab.course import artifacts, exercises
from raglab.course.cells import grade_prefix
from raglab.course.criteria import CRITERIA, Artifacts
from raglab.course.submission_criteria import READ_THE_REFERENCE, SUBMISSION_CRITERIA, Submission
from raglab.base.files import atomic_open


@dataclass
class Criterion:
    milestone: str
    criterion: str
    passed: bool
    why: str
    stages: tuple = ()          # the stages of the student's pipeline whose artifacts it reads


def _guard(milestone: str, criterion: str, fn, stages: tuple = ()) -> Criterion:
    """Run one check; a missing or malformed artifact fails it with the reason."""
    try:
        passed, why = fn()
    except (FileNotFoundError, ValueError) as exc:
        passed, why = False, str(exc)
    except (KeyError, TypeError, IndexError) as exc:
        passed, why = False, f"malformed artifact: missing or wrong field {exc}"
    return Criterion(milestone, criterion, bool(passed), why, tuple(stages))


def not_yours(a: "Artifacts", stages: tuple) -> str | None:
    """Why a criterion over these stages earns nothing (a stage ran on raglab's fallback, was a copy of
    raglab's function, or never ran), or None when the student's own code made every one of them."""
    try:
        made = a.section("stages")
    except (FileNotFoundError, ValueError) as exc:
        return f"no stage of your pipeline was recorded ({exc})"
    for name in stages:
        record = made.get(name)
        if record is None:
            return f"the stage '{name}' never ran through your code (run the milestone's notebook to the end)"
        if record.get("by") != exercises.YOURS:
            return f"the stage '{name}' is not yours: {record.get('why') or record.get('by')}"
    return None


def stages_made(where: Path) -> dict:
    """Who made each stage of the pipeline whose artifacts are in ``where`` (empty if none ran)."""
    try:
        return Artifacts(where).section("stages")
    except (FileNotFoundError, ValueError):
        return {}


def measured_on(where: Path) -> str:
    """What milestone 6 reported on, in one line: the corpus, the golden set (whose), the split and its size
    (``GoldenInUse.read``); empty when it did not run."""
    try:
        read = Artifacts(where).section("evaluation").get("read")
    except (FileNotFoundError, ValueError):
        return ""
    if not read:
        return ""
    return f"{read['corpus']}; {read['golden']} ({read['whose']}, {read['sha256']}); {read['split']} {len(read['ids'])}"


def notebook_key(notebook: str) -> str:
    """The key a criterion files its notebook under (the fourth field of ``CRITERIA``): a notebook's number,
    or for a milestone's later notebook its grade prefix; a number such as ``"07"`` is its own key.

    >>> notebook_key("06_evaluation"), notebook_key("07_chunking_lab"), notebook_key("07")
    ('06', '07-chunking', '07')
    """
    notebook = str(notebook)
    return notebook[:2] if len(notebook) <= 2 else grade_prefix(notebook)


def graded_criteria(notebook: str | None = None) -> list[tuple[str, str, str]]:
    """The criteria that earn a point, as ``(milestone, criterion, notebook key)``: every one, or one notebook's.
    The one list the grading page, each notebook's "Done when" and the gradebook's columns are made from
    (the copy flags earn nothing and are not in it).

    >>> [c for _, c, _ in graded_criteria("06_evaluation")][-1]
    "a golden set of the student's own passes the checks"
    """
    key = None if notebook is None else notebook_key(notebook)
    return [(m, c, nb) for m, c, _, nb, _ in [*CRITERIA, *SUBMISSION_CRITERIA]
            if m != "flag" and (key is None or nb == key)]


def _judge(a: Artifacts, milestone: str, criterion: str, fn, stages: tuple) -> Criterion:
    """One criterion: failed for its stage when the student's code did not make what it reads."""
    why = not_yours(a, stages) if stages else None
    if why:
        return Criterion(milestone, criterion, False, why, stages)
    return _guard(milestone, criterion, lambda: fn(a), stages)


def check(where: str | Path | None = None, notebooks: list[str] | None = None,
          submission: str | Path | None = None, reference: bool = True) -> list[Criterion]:
    """Every criterion of the rubric, against the artifacts in ``where``; with ``notebooks`` (stems or
    numbers such as ``01``) only those milestones' criteria; with ``submission`` (a student's folder)
    also the criteria on what the student brought and wrote, and the copy flags. Without ``reference``
    (a student grading themselves: the reference solution is the instructor's) the flags that compare
    with the reference solution are left out."""
    where = Path(where or artifacts.folder())
    if not where.is_dir():
        raise FileNotFoundError(f"{where}: no artifacts folder (run `raglab workbook` first)")
    keep = {notebook_key(n) for n in notebooks} if notebooks else None
    a = Artifacts(where)
    results = [_judge(a, m, c, fn, st) for m, c, fn, nb, st in CRITERIA if keep is None or nb in keep]
    if submission is not None:
        sub = Submission(Path(submission))
        results += [_judge(sub, m, c, fn, st) for m, c, fn, nb, st in SUBMISSION_CRITERIA if (keep is None or nb in keep)
                    and (reference or c not in READ_THE_REFERENCE)]
    return results


def done_when(notebook: str, where: str | Path | None = None, folder: str | Path = "."):
    """The end of a milestone notebook: its rubric criteria (``graded_criteria``, the grading page's list) on
    what this run saved and on what lies beside the notebook in ``folder`` (a golden set of the student's own),
    as the instructor's grader will read them (a Markdown table: each criterion, the stages it reads, pass or
    fail, and why). The copy flags, which earn nothing, are left out."""
    from IPython.display import Markdown  # lazy: only in a notebook

    results = [r for r in check(where, notebooks=[notebook], submission=folder, reference=False) if r.milestone != "flag"]
    done = sum(r.passed for r in results)
    return Markdown("\n".join([f"**Done when**, read by the checker: {done} of {len(results)} criteria pass.", "",
                               *_table(results, milestone=False, bold=True)]))


def _table(results: list[Criterion], milestone: bool = True, bold: bool = False) -> list[str]:
    """The criteria as Markdown table lines: (milestone,) criterion, the stages it reads, result, why."""
    verdict = {True: "**PASS**" if bold else "PASS", False: "**FAIL**" if bold else "FAIL"}
    head = (["milestone"] if milestone else []) + ["criterion", "reads the stages", "result", "why"]
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + [f"| {r.milestone + ' | ' if milestone else ''}{r.criterion} | {', '.join(r.stages) or '-'} | "
               f"{verdict[r.passed]} | {r.why.replace('|', '/')} |" for r in results])


def format_rubric(results: list[Criterion], where: Path | None = None) -> str:
    """The rubric as Markdown: one row per criterion, and the verdict."""
    passed = sum(r.passed for r in results)
    lines = ["# Milestone rubric", ""]
    if where is not None:
        lines += [f"Artifacts: `{where}`", ""]
    lines += _table(results)
    lines += ["", f"{passed} of {len(results)} criteria pass."]
    return "\n".join(lines) + "\n"


def write_rubric(results: list[Criterion], where: Path) -> Path:
    """Write ``rubric.md`` and ``rubric.json`` into the artifacts folder; returns the Markdown path."""
    with atomic_open(where / "rubric.json") as fh:
        json.dump([asdict(r) for r in results], fh, indent=1)
    with atomic_open(where / "rubric.md") as fh:
        fh.write(format_rubric(results, where))
    return where / "rubric.md"


def run_check(where: str | Path | None = None) -> int:
    """``raglab check``: print the rubric, write it beside the artifacts, exit 1 if any criterion fails."""
    where = Path(where or artifacts.folder())
    results = check(where)
    print(format_rubric(results, where), end="")
    print(f"rubric: {write_rubric(results, where).resolve()}")
    return 0 if all(r.passed for r in results) else 1
