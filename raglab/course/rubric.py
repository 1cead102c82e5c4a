"""``raglab check DIR``: the instructor's rubric, read from the artifacts the notebooks saved.

Each criterion is one milestone's "done when" from the course, checked against the saved
artifacts (never against a notebook's printed words): pass or fail, and why, with the numbers.
A missing or unreadable artifact fails its criterion and says which file and what to run.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from raglab import config
from raglab.course import artifacts
from raglab.corpus import load_corpus
from raglab.evaluation.golden import check_student_golden
from raglab.files import atomic_open
from raglab.generate import REFUSAL

# A heading-aware chunk ends cleanly at sentence punctuation (closing quotes and brackets allowed),
# before a blank line or at the document's end. A line end proves nothing: the docs are hard-wrapped.
# The chunker may cut inside one sentence or block only when it alone is longer than the window.
SENTENCE_END = re.compile(r"[.!?:;][\"')\]]*$")
TABLE_ROW = re.compile(r"(?:^|\n)[ \t]*(?:\||\+[-=])[^\n]*$")     # the last line is a grid or pipe table row
# The bake-off must separate its configurations by more than noise: 0.10 in recall@5 is three
# questions of thirty.
MATERIAL_SPREAD = 0.10
# The four score families of checkpoint 5, and a line of the printed scoreboard that shows each.
FAMILIES = {"retrieval (recall@k)": r"^recall@\d+\s+\d\.\d+",
            "citations": r"^citation_(validity|support)\s+\d\.\d+",
            "answer correctness": r"^answer_correct\s+\d\.\d+",
            "refusal (abstention)": r"^abstention_accuracy\s+\d\.\d+"}


@dataclass
class Criterion:
    milestone: str
    criterion: str
    passed: bool
    why: str


def _guard(milestone: str, criterion: str, fn) -> Criterion:
    """Run one check; a missing or malformed artifact fails it with the reason."""
    try:
        passed, why = fn()
    except (FileNotFoundError, ValueError) as exc:
        passed, why = False, str(exc)
    except (KeyError, TypeError, IndexError) as exc:
        passed, why = False, f"malformed artifact: missing or wrong field {exc}"
    return Criterion(milestone, criterion, bool(passed), why)


class Artifacts:
    """The artifacts folder, each file read once per check (several criteria read the same file)."""

    def __init__(self, where: Path):
        self.where, self._read = where, {}

    def _once(self, key, load):
        if key not in self._read:
            self._read[key] = load()       # a missing or broken file raises, and fails each criterion that needs it
        return self._read[key]

    def jsonl(self, name: str) -> list[dict]:
        return self._once(name, lambda: artifacts.load_jsonl(name, self.where))

    def json(self, name: str):
        return self._once(name, lambda: artifacts.load_json(name, self.where))

    def section(self, name: str) -> dict:
        results = self.json(artifacts.RESULTS)
        if name not in results:
            raise ValueError(f"{self.where / artifacts.RESULTS}: no section {name!r} (run the notebook that records it)")
        return results[name]


# ---------------------------------------------------------------- milestone 1

def chunks_have_ids(a: Artifacts):
    rows = a.jsonl("m1_chunks.jsonl")
    if not rows:
        return False, "m1_chunks.jsonl holds no chunks"
    seen: dict[str, set] = {}
    for n, r in enumerate(rows, 1):
        for field in ("id", "doc", "chunking"):
            if not str(r.get(field) or "").strip():
                return False, f"m1_chunks.jsonl:{n}: chunk without {'a source' if field == 'doc' else 'an ' + field}"
        ids = seen.setdefault(r["chunking"], set())
        if r["id"] in ids:
            return False, f"m1_chunks.jsonl:{n}: id {r['id']!r} appears twice in {r['chunking']}"
        ids.add(r["id"])
    return True, f"{len(rows)} chunks over {len(seen)} chunkings, each with a unique id and a source"


def window(label: str) -> int:
    """The window in words of a chunking label such as ``headings 150/30 +prefix``."""
    m = re.search(r"(\d+)/\d+", label)
    if not m:
        raise ValueError(f"m1_chunks.jsonl: chunking {label!r} does not give its window (like 'headings 150/30')")
    return int(m.group(1))


def cut_in_half(text: str, following: str, size: int) -> str | None:
    r"""What a chunk's end cuts in half ('a table', 'a sentence'), or None if it ends cleanly or inside
    one sentence or block longer than ``size`` words; ``following`` runs to the next boundary.

    >>> cut_in_half("It returns the\nvalue", "\nof x.", 150), cut_in_half("It returns x.", " Then", 150)
    ('a sentence', None)
    """
    if not following.strip():                     # a blank line or the document's end follows
        return None
    if TABLE_ROW.search(text):
        return "a table"
    if SENTENCE_END.search(text):
        return None
    starts = [m.end() for m in artifacts.SENTENCE_BOUNDARY.finditer(text)]
    unit = text[starts[-1] if starts else 0:] + following
    return None if len(unit.split()) > size else "a sentence"


def clean_cuts(a: Artifacts):
    rows = [(n, r) for n, r in enumerate(a.jsonl("m1_chunks.jsonl"), 1) if r["chunking"].startswith("headings")]
    if not rows:
        return False, "no heading-aware chunks in m1_chunks.jsonl"
    for n, r in rows:
        what = cut_in_half(r["text"], r["following"], window(r["chunking"]))
        if what:
            return False, f"m1_chunks.jsonl:{n}: heading-aware chunk {r['id']} cuts {what} in half " \
                          f"(ends {r['text'][-30:]!r}, then {r['following'][:30]!r})"
    long = sum(bool(r["following"].strip()) and not SENTENCE_END.search(r["text"]) for _, r in rows)
    return True, f"all {len(rows)} heading-aware chunks end at a sentence, a blank line or the document's end" + \
        (f", or ({long}) inside one sentence or block longer than the window" if long else "")


# ---------------------------------------------------------------- milestones 2 and 3

def fused_top20(a: Artifacts):
    m2 = a.section("m2")
    rows, depth = m2["questions"], m2["depth"]
    found = [r for r in rows if r.get("hybrid rank") is not None and r["hybrid rank"] <= 20]
    if depth < 20:
        return False, f"fused lists were cut at {depth}, not 20"
    ok = len(found) >= 10
    return ok, (f"{len(found)} of {len(rows)} hand-written questions have the evidence chunk in the fused top 20"
                + ("" if ok else " (the course asks for 10)"))


def keyword_and_vector_wins(a: Artifacts):
    m2 = a.section("m2")
    k = m2["k"]
    rows = m2["questions"]
    only_bm25 = [r["id"] for r in rows if r[f"bm25 recall@{k}"] > 0 and r[f"dense recall@{k}"] == 0]
    only_dense = [r["id"] for r in rows if r[f"dense recall@{k}"] > 0 and r[f"bm25 recall@{k}"] == 0]
    why = f"only BM25 finds the evidence in its top {k}: {only_bm25 or 'none'}; only dense: {only_dense or 'none'}"
    return bool(only_bm25 and only_dense), why


def ranked_first(a: Artifacts):
    m3 = a.section("m3")
    parts, best = [], None
    for label, rows in m3["configs"].items():
        first = sum(r.get("rerank rank") == 1 for r in rows)
        parts.append(f"{label}: {first}/{len(rows)}")
        if first > len(rows) / 2:
            best = label
    missed = m3.get("misses_shown", [])
    why = "right chunk ranked first after reranking: " + "; ".join(parts)
    if not missed:
        return False, why + "; the cases where it is not were not looked at (no misses shown)"
    return best is not None, why + (f"; most with {best}" if best else "; not most in any configuration") + \
        f"; {len(missed)} misses shown"


# ---------------------------------------------------------------- milestone 4

def valid_citations(a: Artifacts):
    rows = [r for r in a.jsonl("m4_answers.jsonl") if r["kind"] == "answer"]
    answered = [r for r in rows if not r["refused"]]
    if not answered:
        return False, "no answered question in m4_answers.jsonl"
    for r in answered:
        retrieved = {x["id"] for x in r["retrieved"]}
        if not r["citations"]:
            return False, f"answer to {r['question']!r} carries no citation"
        bad = [c["id"] for c in r["citations"] if c["id"] not in retrieved]
        if bad or r["invalid_citations"]:
            return False, f"answer to {r['question']!r} cites {bad or r['invalid_citations']}, not retrieved"
    return True, f"{len(answered)} answers, every citation points at a retrieved chunk"


def invented_id_caught(a: Artifacts):
    rows = [r for r in a.jsonl("m4_answers.jsonl") if r["kind"] == "invented-id"]
    if not rows:
        return False, "no invented-id test in m4_answers.jsonl"
    for r in rows:
        if not (r["refused"] and r["reason"] == "invalid-citation" and r["invalid_citations"]):
            return False, f"an answer citing {r['raw']!r} was let through (reason {r['reason']})"
    return True, f"{len(rows)} answer(s) citing a non-existent source refused as invalid-citation " \
                 f"(caught: {rows[0]['invalid_citations']})"


def out_of_corpus_refused(a: Artifacts):
    rows = [r for r in a.jsonl("m4_answers.jsonl") if r["kind"] == "out-of-corpus"]
    if not rows:
        return False, "no out-of-corpus question in m4_answers.jsonl"
    leaked = [r["question"] for r in rows if not (r["refused"] and r["answer"] == REFUSAL)]
    if leaked:
        return False, f"not refused: {leaked[0]!r}"
    return True, f"{len(rows)} out-of-corpus question(s) got the exact refusal ({rows[0]['reason']})"


# ---------------------------------------------------------------- milestone 5

def one_command_four_scores(a: Artifacts):
    run = a.json("m5_eval_command.json")
    if not run["command"].startswith("raglab eval") or run["exit_code"] != 0:
        return False, f"the saved command is {run['command']!r} (exit {run['exit_code']}), not a successful raglab eval"
    lines = run["output"].splitlines()
    missing = [name for name, pat in FAMILIES.items() if not any(re.match(pat, ln) for ln in lines)]
    if missing:
        return False, f"`{run['command']}` did not print: {', '.join(missing)}"
    return True, f"`{run['command']}` printed all four: {', '.join(FAMILIES)}"


def failures_read(a: Artifacts):
    board = a.json("m5_scoreboard.json")
    questions = board["questions"]
    unread = [q["id"] for q in questions
              if q["failure"] is None and (q["correct"] == 0 or (q["type"] != "unanswerable" and q["recall"] == 0))]
    listed = sum(len(v) for v in board["failures"].values())
    if unread:
        return False, f"failed questions without a stage: {unread[:5]}"
    return True, f"{listed} failures of {len(questions)} questions, each traced to a stage " + \
        ", ".join(f"({s} {len(v)})" for s, v in board["failures"].items() if v)


# ---------------------------------------------------------------- access and bake-off

def no_leaks(a: Artifacts):
    access = a.section("access")
    leaks, questions = access["leaks"], access["questions"]
    if not (leaks and all(leaks.values()) and questions):
        return False, f"the leak check checked nothing ({questions} questions, backends and modes {leaks})"
    counts = [modes[m] for modes in leaks.values() for m in modes]
    if not all(isinstance(n, int) and n >= 0 for n in counts):
        raise ValueError(f"{a.where / artifacts.RESULTS}: leak counts must be whole numbers, got {counts}")
    backends = ", ".join(leaks)
    if sum(counts):
        return False, f"{sum(counts)} restricted chunks reached a public user ({backends})"
    return True, f"{questions} questions in {len(counts)} backend and mode pairs ({backends}): " \
                 "no restricted chunk reached a public user"


def bakeoff_decided(a: Artifacts):
    bake = a.section("bakeoff")
    metric = bake["metric"]
    values = [r[metric] for r in bake["table"]]
    spread = max(values) - min(values)
    cells = {(r["chunking"], r["retriever"]) for r in bake["table"]}
    winner = tuple(bake.get("winner") or ())
    if winner not in cells:
        return False, f"no winner chosen among the {len(cells)} configurations (got {winner or 'none'})"
    if spread < MATERIAL_SPREAD:
        return False, f"{metric} spans only {spread:.3f} over {len(cells)} configurations (< {MATERIAL_SPREAD})"
    return True, f"{metric} spans {spread:.3f} over {len(cells)} configurations; winner {' + '.join(winner)}"


# ---------------------------------------------------------------- the student's own work

MIN_WHY_WORDS = {"traced_failures": 10, "choice": 15}


def failures_traced_by_you(a: Artifacts):
    rows = a.section("traced_failures")
    board = a.json("m5_scoreboard.json")
    failed = {q["id"] for q in board["questions"] if q["failure"] is not None}
    stages = set(board["failures"])
    ids = [r["id"] for r in rows]
    if len(set(ids)) < 5:
        return False, f"{len(set(ids))} distinct questions traced (five asked)"
    for n, r in enumerate(rows, 1):
        if r["id"] not in failed:
            return False, f"traced failure {n}: {r['id']!r} did not fail on this run's scoreboard"
        if r["stage"] not in stages:
            return False, f"traced failure {n}: stage {r['stage']!r} is none of {sorted(stages)}"
        if len(str(r["why"]).split()) < MIN_WHY_WORDS["traced_failures"]:
            return False, f"traced failure {n} ({r['id']}): the why has {len(str(r['why']).split())} words " \
                          f"(at least {MIN_WHY_WORDS['traced_failures']})"
    return True, f"{len(set(ids))} failures traced, each a failed question with its stage " \
        f"({', '.join(sorted({r['stage'] for r in rows}))}) and a reason"


NUMBER = re.compile(r"(\d+(?:\.\d+)?)(%?)")       # 0.823, or 82% for 0.82


def chunking_choice(a: Artifacts):
    choice, bake = a.section("choice"), a.section("bakeoff")
    row = next((r for r in bake["table"] if r["chunking"] == choice["chunking"] and r["retriever"] == choice["retriever"]), None)
    if row is None:
        return False, f"the choice {choice['chunking']} + {choice['retriever']} is not a configuration of the bake-off"
    why = str(choice["why"])
    if len(why.split()) < MIN_WHY_WORDS["choice"]:
        return False, f"the justification has {len(why.split())} words (at least {MIN_WHY_WORDS['choice']})"
    values = [v for key, v in row.items() if key.startswith(("recall@", "mrr")) and isinstance(v, (int, float))]
    quoted = [m.group(0) for m in NUMBER.finditer(why)
              if any(abs(float(m.group(1)) / (100 if m.group(2) else 1) - v) <= 0.005 + 1e-9 for v in values)]
    if not quoted:
        return False, f"the justification quotes none of the {choice['chunking']} + {choice['retriever']} row's " \
                      "scores (recall@k, MRR, to 2 decimals)"
    return True, f"chose {choice['chunking']} + {choice['retriever']}, justified with {', '.join(quoted[:3])} from its row"


class Submission(Artifacts):
    """A student's folder (their notebooks and ``golden.jsonl``), its golden set checked once for every
    criterion that reads it."""

    def golden(self):
        def load():
            path = self.where / "golden.jsonl"
            if not path.exists():
                raise FileNotFoundError(f"{path}: no golden set of your own in the submission")
            return check_student_golden(path, load_corpus("python-docs"))
        return self._once("golden.jsonl", load)


def own_golden_set(s: Submission):
    report = s.golden()
    if report.problems:
        return False, f"{len(report.problems)} problems, first: {report.problems[0]}"
    return True, f"{report.questions} questions of your own pass the checks ({report.lines()[-1]})"


def golden_not_copied(s: Submission):
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
    reference = _answer_cell(config.PROJECT_ROOT / "notebooks" / f"{stem}.ipynb", marker)
    same = _code_lines(mine) == _code_lines(reference)
    return not same, (f"the {what} is the reference solution's, line for line" if same
                      else f"the {what} differs from the reference solution")


CRITERIA = [
    ("1 chunking", "every chunk has an id and a source", chunks_have_ids, "01"),
    ("1 chunking", "no heading-aware chunk cuts a sentence or a table in half", clean_cuts, "01"),
    ("2 hybrid search", "the right chunk is in the fused top 20 for 10 hand-written questions", fused_top20, "02"),
    ("2 hybrid search", "a question only BM25 gets right and one only dense gets right", keyword_and_vector_wins, "02"),
    ("3 rerank", "the right chunk is ranked first for most questions, and the misses were looked at", ranked_first, "03"),
    ("4 cited answers", "answers carry valid citations", valid_citations, "04"),
    ("4 cited answers", "an invented citation id is caught", invented_id_caught, "04"),
    ("4 cited answers", "an out-of-corpus question gets the refusal", out_of_corpus_refused, "04"),
    ("access", "a public user never retrieves a restricted chunk", no_leaks, "05"),
    ("5 evaluation", "one command printed all four score families", one_command_four_scores, "06"),
    ("5 evaluation", "every failure is traced to a stage", failures_read, "06"),
    ("5 evaluation", "five failures traced and explained by the student", failures_traced_by_you, "06"),
    ("bake-off", "the bake-off numbers differ materially and a winner was chosen", bakeoff_decided, "07"),
    ("bake-off", "a chunking chosen and justified with the bake-off's numbers", chunking_choice, "07"),
]

# Graded only on a submission (``raglab grade``): what the student brought and wrote.
SUBMISSION_CRITERIA = [
    ("5 evaluation", "a golden set of the student's own passes the checks", own_golden_set, "06"),
    ("flag", "golden set not mostly copied from the project's", golden_not_copied, "06"),
    ("flag", "failure analysis not copied from the reference solution",
     lambda s: answer_not_reference(s, "06_evaluation", 'record("traced_failures"', "failure analysis"), "06"),
    ("flag", "chunking choice not copied from the reference solution",
     lambda s: answer_not_reference(s, "07_bakeoff", 'record("choice"', "chunking choice"), "07"),
]


def check(where: str | Path | None = None, notebooks: list[str] | None = None,
          submission: str | Path | None = None) -> list[Criterion]:
    """Every criterion of the rubric, against the artifacts in ``where``; with ``notebooks`` (stems or
    numbers such as ``01``) only those milestones' criteria; with ``submission`` (a student's folder)
    also the criteria on what the student brought and wrote, and the copy flags."""
    where = Path(where or artifacts.folder())
    if not where.is_dir():
        raise FileNotFoundError(f"{where}: no artifacts folder (run `raglab workbook` first)")
    keep = {str(n)[:2] for n in notebooks} if notebooks else None
    a = Artifacts(where)
    results = [_guard(m, c, lambda fn=fn: fn(a)) for m, c, fn, nb in CRITERIA if keep is None or nb in keep]
    if submission is not None:
        sub = Submission(Path(submission))
        results += [_guard(m, c, lambda fn=fn: fn(sub)) for m, c, fn, nb in SUBMISSION_CRITERIA
                    if keep is None or nb in keep]
    return results


def format_rubric(results: list[Criterion], where: Path | None = None) -> str:
    """The rubric as Markdown: one row per criterion, and the verdict."""
    passed = sum(r.passed for r in results)
    lines = ["# Milestone rubric", ""]
    if where is not None:
        lines += [f"Artifacts: `{where}`", ""]
    lines += ["| milestone | criterion | result | why |", "|---|---|---|---|"]
    lines += [f"| {r.milestone} | {r.criterion} | {'PASS' if r.passed else 'FAIL'} | {r.why.replace('|', '/')} |"
              for r in results]
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
