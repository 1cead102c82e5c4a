"""What a learner reads in the executed notebooks (as rendered: ``raglab.course.cells.for_readers``) is plain
and true to its run:

- no project vocabulary (``raglab.course.cells.PROJECT_WORDS``): nbval markers, "issue", paths into ``scripts/``
  or ``bench/`` (the student bundle ships neither), lever codes of the research runs, the word "seam";
- every number the Markdown cites is printed by the run, at the precision the prose gives it, or is a constant
  listed below with its reason: a decimal or a percentage (a result) by the code or outputs of its own section
  (the cells under the same heading), a whole number from 10 up (a count or a setting) anywhere in the notebook,
  and a number in a model answer (it sums up the whole notebook) anywhere too;
- every golden question id the Markdown names (model answers included) is in a golden set that ships.

The student bundle refuses the same words in its notebooks (``raglab.course.bundle.leaks``).
"""
import html
import json
import re
from pathlib import Path

import nbformat
import pytest

from raglab.course.cells import BY_HAND, PROJECT_WORDS, for_readers, project_words

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


# Numbers a notebook's prose may cite without its run printing them: constants of a formula or a convention.
CONSTANTS = {
    "95": "the level of the course's bootstrap intervals (95%)",
    "97.5": "the upper percentile of a 95% bootstrap interval",
    "2.5": "the lower percentile of a 95% bootstrap interval",
    "135": "the packaged model's size, in its name (SmolLM2-135M)",
    "497": "the pages of the whole Python docs (`raglab corpus info --corpus python-docs`)",
    "3.11": "the Python version whose documentation is the corpus",
}

NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(%?)(?!\w|\.\d)")     # not a version (4.5.0)
QUOTED = re.compile(r'"[^"]{0,200}"|“[^”]{0,200}”')
MATH = re.compile(r"\$[^$\n]+\$")                # a formula's constants are not results of a run
QUESTION_ID = re.compile(r"\bpy-\d{3,}\b")


def learner_view(path: Path):
    return for_readers(nbformat.read(path, as_version=4))


def texts(nb) -> list[str]:
    """Every text a reader sees: Markdown, code, and outputs (HTML without its tags)."""
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                parts.append(out.text)
            for kind in ("text/plain", "text/html", "text/markdown"):
                if kind in out.get("data", {}):
                    parts.append(html.unescape(re.sub(r"<[^>]+>", " ", out.data[kind])))
    return parts


def run_values(nb) -> set[float]:
    """Every number in the code and outputs, also as a share (12.5 -> 0.125) and a percentage (0.125 -> 12.5)."""
    run = "\n".join(texts(nbformat.v4.new_notebook(cells=[c for c in nb.cells if c.cell_type == "code"])))
    values = set()
    for digits, percent in NUMBER.findall(run):
        v = float(digits.replace(",", ""))
        values |= {v, v / 100, v * 100}
    return values


def cited(markdown: str) -> list[tuple[str, str]]:
    """The numbers a Markdown cell cites: not inside code spans, formulas, link targets or quoted examples, and
    not a small whole number (list items, "top 5")."""
    prose = QUOTED.sub(" ", re.sub(r"\]\([^)]*\)", "]", MATH.sub(" ", re.sub(r"`[^`]*`", " ", markdown))))
    return [(d, p) for d, p in NUMBER.findall(prose)
            if "." in d or p or float(d.replace(",", "")) >= 10]


def found(digits: str, values: set[float]) -> bool:
    """Whether a number of the run, rounded to the prose's precision, is the number the prose cites.

    >>> found("0.82", {0.8231, 82.31}), found("82.3", {0.8231, 82.31}), found("0.83", {0.8231, 82.31})
    (True, True, False)
    """
    places = len(digits.split(".")[1]) if "." in digits else 0
    want = float(digits.replace(",", ""))
    return any(abs(round(v, places) - want) < 1e-9 for v in values)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_what_a_learner_reads_has_no_project_words(path):
    nb = learner_view(path)
    hits = [f"cell {i}: {said}" for i, cell in enumerate(nb.cells)
            for part in texts(nbformat.v4.new_notebook(cells=[cell])) for said in project_words(part)]
    assert not hits, f"{path.name}: " + "; ".join(hits)


def sections(nb) -> list[int]:
    """Each cell's section: the count of headings (Markdown cells starting with ``#``) up to and including it."""
    count, out = 0, []
    for cell in nb.cells:
        count += cell.cell_type == "markdown" and cell.source.lstrip().startswith("#")
        out.append(count)
    return out


def where_printed(nb) -> dict[int, set[float]]:
    """The numbers each section's code and outputs print."""
    section = sections(nb)
    return {k: run_values(nbformat.v4.new_notebook(cells=[c for c, s in zip(nb.cells, section) if s == k]))
            for k in set(section)}


def unprinted(nb) -> list[str]:
    """The numbers the prose cites that the run does not print where the test's rules ask (the module's docstring)."""
    anywhere, by_section, section = run_values(nb), where_printed(nb), sections(nb)
    missing = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        model_answer = BY_HAND.match(cell.source) is not None
        for d, p in cited(cell.source):
            result = ("." in d or p) and not model_answer
            if d not in CONSTANTS and not found(d, by_section[section[i]] if result else anywhere):
                missing.append(f"cell {i}: {d}{p}" + (" (not printed in its section)" if result and found(d, anywhere) else ""))
    return missing


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_number_the_prose_cites_is_printed_by_its_run(path):
    missing = unprinted(learner_view(path))
    assert not missing, f"{path.name}: numbers in the prose that its run does not print: " + ", ".join(missing)


def test_question_ids_in_the_prose_are_golden_questions():
    ids = {json.loads(line)["id"] for f in [*ROOT.glob("evals/*golden*.jsonl"), *ROOT.glob("evals/*full*.jsonl")]
           for line in f.read_text().splitlines() if line.strip()}
    assert ids, "no golden set found under evals/"
    named = {(p.name, m) for p in NOTEBOOKS for c in learner_view(p).cells if c.cell_type == "markdown"
             for m in QUESTION_ID.findall(c.source)}
    unknown = sorted(f"{name}: {qid}" for name, qid in named if qid not in ids)
    assert not unknown, "golden question ids that no golden set holds: " + ", ".join(unknown)


def test_the_checks_find_what_they_look_for():
    """The patterns above catch what they are for (so a clean pass means something)."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Recall is 0.823 on 31 questions; see issue 44 and scripts/x.py."),
        nbformat.v4.new_code_cell("print(0.79)", outputs=[nbformat.v4.new_output("stream", text="0.79 on 31\n")])])
    assert [d for d, _ in cited(nb.cells[0].source) if not found(d, run_values(nb))] == ["0.823", "44"]
    words = [what for what, pattern in PROJECT_WORDS.items() if pattern.search(nb.cells[0].source + " B-C8-lr-small+x")]
    assert words == ["the word 'issue'", "a path into scripts/", "a lever code"]


def test_a_result_must_be_printed_in_its_own_section():
    """A decimal printed under another heading is not the number beside the prose; a count may be; a formula's
    constants are not cited at all."""
    code = nbformat.v4.new_code_cell("print(0.79, 31)", outputs=[nbformat.v4.new_output("stream", text="0.79 31\n")])
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## One"), code,
        nbformat.v4.new_markdown_cell("## Two\n\nRecall 0.79 on 31 questions, by $z_{0.975}$."),
        nbformat.v4.new_markdown_cell("<!-- graded by hand: 2 points -->\nThe recall was 0.79.")])
    assert unprinted(nb) == ["cell 2: 0.79 (not printed in its section)"]
