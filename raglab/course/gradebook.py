"""What grading a class writes: ``gradebook.csv`` (a row per student, a column per self-check, notebook
run and rubric criterion, with totals) and each student's feedback page (the failing checks and why)."""
from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from raglab.course.cells import grade_prefix
from raglab.course.grades import PASS_MARK, TO_GRADE, StudentGrade
from raglab.base.files import atomic_open

PASSED = {"pass": 1, "fail": 0, TO_GRADE: TO_GRADE}      # the gradebook's "passed" column, by result
STAGE_MAKERS = {"yours": "your code", "raglab": "raglab's fallback (worth nothing)",
                "copy": "a copy of raglab's function (worth nothing)"}


def columns(grades: list[StudentGrade]) -> list[str]:
    """The gradebook's columns: each self-check, each notebook's clean run, each rubric criterion, totals,
    and whether the total reaches the pass mark (``raglab.course.grades.PASS_MARK``)."""
    first = grades[0]
    return (["student"] + [f"{c.notebook[:2]} {c.name}" for c in first.checks]
            + [f"ran {grade_prefix(stem)}" for stem in first.ran]      # "ran 07", "ran 07-chunking"
            + [f"rubric: {r.criterion}" for r in first.rubric]
            + ["autograder points", "autograder max", "by-hand points", "by-hand max", "to grade",
               "notebooks ran", "rubric passed", "rubric criteria", "total points", "passed", "flags",
               "measured on"])


def row(g: StudentGrade) -> list:
    got, most = g.points
    hand, hand_most, pending = g.by_hand
    return ([g.student] + [TO_GRADE if c.pending else round(c.score, 2) for c in g.checks]
            + [int(v == "ok") for v in g.ran.values()]
            + [int(r.passed) for r in g.rubric]
            + [round(got, 2), round(most, 2), round(hand, 2), round(hand_most, 2), pending,
               g.ran_ok, g.rubric_passed, len(g.criteria), round(g.total[0], 2), PASSED[g.result],
               "; ".join(g.flags), g.measured_on])


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
             f"<b>{g.ran_ok} of {len(g.ran)}</b> · rubric: <b>{g.rubric_passed} of {len(g.criteria)}</b> criteria"
             f" · in all: <b>{g.total[0]:g} of {g.total[1]:g}</b> points, <b>{e(g.result)}</b> "
             f"(the pass mark is {PASS_MARK:.0%})</p>"]
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
