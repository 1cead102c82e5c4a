"""The model answers (the instructor's Markdown cells that start with ``raglab.course.cells.BY_HAND``) agree with the
run committed beside them. Fast: it reads the executed notebooks' JSON and runs nothing.

What a model answer cites, and how it must match the outputs of its notebook's code cells (stream text, plain
text, HTML without its tags and Markdown; never the code itself, so a number typed into a cell does not count):

- a decimal (``0.647``, ``+0.210``, ``-0.05``): some printed number, rounded to the decimals the answer gives, is
  the cited one. Matching after rounding lets ``0.65`` cite a printed ``0.647`` (or ``0.6470``) and refuses
  ``0.66``; a value exactly halfway rounds either way. A cited sign must be the printed sign; an unsigned number
  matches either sign (prose says "fell by 0.039" of a printed ``-0.039``);
- a percentage (``9.6%``): a printed percentage or share with that value (``9.6%``, ``9.60``, ``0.096``);
- a count "N of M" (``21 of 36``): both N and M are printed as whole numbers;
- a finding ("exercise 3 found ...", "the run shows ..."): the sentence that reports what this run found must cite
  at least one number, and every number it cites must match as above. An unnumbered claim about a result cannot
  be checked against the outputs, and that is how a model answer drifts from its run.

Numbers inside code spans, formulas, links and quotes are examples, not results, and are left out, and so are
question ids (``py-026``), small counts written as words and whole numbers on their own (a setting such as "the
top 20", or a hypothetical "fetching 50").
"""
import html
import json
import re
from pathlib import Path

import pytest

from raglab.course.cells import BY_HAND

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# A signed or unsigned decimal, or a percentage; not part of a word, an id (py-026), a version (3.11.2) or a range.
DECIMAL = re.compile(r"(?<![\w.\-+−])([+\-−]?)(\d+\.\d+|\d+(?=%))(%?)(?![\w.]\d|\w)")
PRINTED = re.compile(r"(?<![\w.])([+\-−]?)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(%?)(?!\w)")
COUNT = re.compile(r"(?<![\w.,])(\d[\d,]*) of (\d[\d,]*)(?![\w.,]\d)")
FINDING = re.compile(r"\b(?:exercise \d+|the run|this run|the table|the printout) (?:found|finds|showed|shows)\b", re.I)
SKIPPED = re.compile(r"`[^`]*`|\$[^$\n]+\$|\]\([^)]*\)|\"[^\"]{0,200}\"|“[^”]{0,200}”")
SENTENCE = re.compile(r"(?:[^.!?]|[.](?=\d))+[.!?]?")   # a decimal point does not end a sentence


def model_answers(nb: dict) -> list[tuple[int, str]]:
    """Each model answer of a notebook's JSON, with its cell index."""
    cells = [(i, "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"]
    return [(i, text) for i, text in cells if BY_HAND.match(text)]


def outputs_text(nb: dict) -> str:
    """What the notebook's code cells printed or displayed."""
    parts = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            if "text" in out:
                parts.append("".join(out["text"]))
            for kind in ("text/plain", "text/markdown", "text/html"):
                data = out.get("data", {}).get(kind)
                if data is not None:
                    data = "".join(data)
                    parts.append(html.unescape(re.sub(r"<[^>]+>", " ", data)) if kind == "text/html" else data)
    return "\n".join(parts)


def printed_numbers(text: str) -> list[tuple[float, bool]]:
    """Every number printed, signed, each with whether it was printed as a percentage."""
    return [((-1 if sign in "-−" and sign else 1) * float(digits.replace(",", "")), percent == "%")
            for sign, digits, percent in PRINTED.findall(text)]


def matches(cited: str, sign: str, percent: bool, printed: list[tuple[float, bool]]) -> bool:
    """Whether a cited number is one the run printed, after rounding to the cited precision (the docstring's rule).

    >>> run = printed_numbers("test MRR 0.647, then 0.608; 9.6% over; kappa -0.05")
    >>> cited = [("0.65", "", False), ("0.608", "", False), ("0.66", "", False), ("0.05", "-", False),
    ...          ("0.05", "+", False), ("9.6", "", True), ("0.096", "", False)]
    >>> [matches(*c, run) for c in cited]
    [True, True, False, True, False, True, True]
    """
    places = len(cited.split(".")[1]) if "." in cited else 0
    want = float(cited)
    half = 0.5 * 10 ** -places + 1e-9
    for value, was_percent in printed:
        # a cited percentage may be a printed share; a printed percentage may be cited as a share
        candidates = ({value, value * 100} if percent and not was_percent else
                      {value, value / 100} if was_percent else {value})
        for v in candidates:
            v = v if sign else abs(v)
            target = -want if sign in ("-", "−") else want
            if abs(v - target) <= half:
                return True
    return False


def prose(text: str) -> str:
    """A model answer without its marker, code spans, formulas, link targets and quoted examples."""
    return SKIPPED.sub(" ", BY_HAND.sub(" ", text))


def disagreements(nb: dict) -> list[str]:
    """Every number or finding of a model answer that the notebook's outputs do not bear out."""
    out = outputs_text(nb)
    printed = printed_numbers(out)
    whole = {v for v, percent in printed if not percent and v == int(v)}
    problems = []
    for i, text in model_answers(nb):
        body = prose(text)
        for sign, digits, percent in DECIMAL.findall(body):
            if not matches(digits, sign, percent == "%", printed):
                problems.append(f"cell {i}: {sign}{digits}{percent} is not printed by the run")
        for n, m in COUNT.findall(body):
            missing = [x for x in (n, m) if float(x.replace(",", "")) not in whole]
            if missing:
                problems.append(f"cell {i}: '{n} of {m}': {', '.join(missing)} not printed by the run")
        for sentence in SENTENCE.findall(" ".join(body.split())):
            if FINDING.search(sentence) and not DECIMAL.search(sentence) and not COUNT.search(sentence):
                problems.append(f"cell {i}: a finding with no number to check: {sentence.strip()!r}")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_model_answers_cite_what_the_run_printed(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems = disagreements(nb)
    assert not problems, f"{path.name}: model answers that disagree with the run beside them: " + "; ".join(problems)


def _notebook(answer: str, printed: str) -> dict:
    code = {"cell_type": "code", "source": "print(table)", "outputs": [{"output_type": "stream", "text": printed}]}
    return {"cells": [code, {"cell_type": "markdown", "source": "<!-- graded by hand: 3 points -->\n" + answer}]}


# Notebook 03's exercise 3 as it once printed it, and its model answer of the time, which said the opposite.
OLD_03_OUTPUT = ("      candidates  recall@5  MRR@10  first\n"
                 "test  20             0.867   0.647             7\n"
                 "      6              0.800   0.608             7\n")
OLD_03_ANSWER = ("3. Cost and return. The first stage scores every chunk cheaply; the reranker costs far more per\n"
                 "   candidate. The evidence is usually already in the fused top 20 if it is anywhere near; deeper\n"
                 "   candidates add little recall and mostly add distractors the reranker might promote (exercise 3\n"
                 "   found fewer can do as well).")


def test_the_old_claim_of_notebook_03_is_caught():
    """The sentence that said fewer candidates do as well, while the run printed test MRR falling from 0.647 to
    0.608, fails: it reports a finding and cites no number; with the run's numbers it passes, with a wrong one not."""
    (problem,) = disagreements(_notebook(OLD_03_ANSWER, OLD_03_OUTPUT))
    assert problem.startswith("cell 1: a finding with no number to check: 'The evidence is usually")
    assert problem.endswith("(exercise 3 found fewer can do as well).'")
    honest = "Exercise 3 found that 6 candidates lower test MRR@10, from 0.647 to 0.608."
    assert disagreements(_notebook(honest, OLD_03_OUTPUT)) == []
    wrong = "Exercise 3 found 6 candidates do as well (MRR@10 0.65 against 0.66)."
    assert disagreements(_notebook(wrong, OLD_03_OUTPUT)) == ["cell 1: 0.66 is not printed by the run"]


def test_the_patterns_find_what_they_look_for():
    """Signs, percentages, counts and precision, and what is left alone (ids, code, versions, whole numbers)."""
    answer = ("Recall +0.210 [-0.05, +0.35]; 9.6% over; agrees on 21 of 36; `0.999` in code; py-026, version 3.11.2; "
              "the top 20.")
    printed = "diff +0.2101 [-0.050, +0.355]  share 0.0960  agreed 21 of 36"
    assert disagreements(_notebook(answer, printed)) == []
    assert disagreements(_notebook(answer, printed.replace("21 of 36", "20 of 36").replace("+0.355", "+0.365"))) == [
        "cell 1: +0.35 is not printed by the run", "cell 1: '21 of 36': 21 not printed by the run"]
