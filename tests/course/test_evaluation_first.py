"""Evaluation comes first, with one rule, in the executed notebooks (as a learner reads them):

- no notebook names recall@k, MRR, a bootstrap interval or the decision rule before the cells of notebook 02 that
  teach them (the glossary of notebook 00 and a notebook's own opening plan may name them);
- every exercise that chooses a setting prints the one rule (``raglab.evaluation.statistics.RULE``) beside
  the numbers it read;
- no milestone before 06 reads the golden set's test split: their code scores the dev split only.
"""
import re
from pathlib import Path

import nbformat
import pytest

from raglab.course.cells import for_readers
from raglab.course.milestones import MILESTONES
from raglab.evaluation.statistics import RULE

ROOT = Path(__file__).resolve().parents[2]
IN_ORDER = [ROOT / "notebooks" / f"{m.notebook}.ipynb" for m in MILESTONES]
TAUGHT = {   # what a learner must have been taught first: the pattern, and the heading of the cell that teaches it
    "recall@k or MRR": (re.compile(r"recall@|\bMRR\b"), "## Scoring a ranking: recall@k and MRR"),
    "a bootstrap interval or the rule": (re.compile(r"bootstrap|\binterval|rl\.choose|paired_test"),
                                         "The library's versions, which read chunks"),
}
# The exercises that choose a setting, by notebook and number; each must print the rule.
CHOOSING = {"02_dense_and_bm25": ["3"], "03_hybrid_rrf_rerank": ["3"], "04_cited_answers": ["2"],
            "07_bakeoff": ["3"]}
GLOSSARY = "## Words the course uses"         # notebook 00's list of words, each with the notebook that teaches it
GRADING_PAGE = "Markdown(rl.course.points.grading_page())"   # 00's grading page: every milestone's criteria, by name
READS_TEST = re.compile(r"golden\.test\b|split\(\s*[\"']test[\"']|split\s*=\s*[\"']test[\"']|golden\.questions\b")


def reader(path: Path):
    return for_readers(nbformat.read(path, as_version=4))


def cell_text(cell) -> str:
    outs = []
    for out in cell.get("outputs", []):
        outs.append(out.get("text", ""))
        outs += [str(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return cell.source + "\n" + "\n".join(outs)


def mentions_before_teaching(notebooks, pattern, teacher: str) -> list[str]:
    """Where ``pattern`` occurs before the cell that starts with ``teacher``, outside a glossary, the grading page
    (it lists what each milestone must show, in the words the milestone teaches) and a notebook's first cell
    (its plan)."""
    found = []
    for path in notebooks:
        for n, cell in enumerate(reader(path).cells):
            if cell.source.lstrip().startswith(teacher):
                return found
            if n == 0 or cell.source.lstrip().startswith((GLOSSARY, GRADING_PAGE)):
                continue
            if pattern.search(cell_text(cell)):
                found.append(f"{path.stem} cell {n}: {pattern.search(cell_text(cell)).group(0)!r}")
    raise AssertionError(f"no cell starts with {teacher!r}: the teaching cell is gone")


def exercise_sections(nb) -> dict[str, str]:
    """Each exercise's number and everything a reader sees from its heading to the next exercise's."""
    sections, current = {}, None
    for cell in nb.cells:
        start = re.match(r"\*\*(\d+)\. ", cell.source) if cell.cell_type == "markdown" else None
        if start:
            current = start.group(1)
        elif cell.cell_type == "markdown" and cell.source.startswith(("## ", "**Questions about the idea")):
            current = None
        if current:
            sections[current] = sections.get(current, "") + cell_text(cell)
    return sections


@pytest.mark.parametrize("what", TAUGHT)
def test_no_notebook_names_a_measure_before_it_is_taught(what):
    pattern, teacher = TAUGHT[what]
    assert mentions_before_teaching(IN_ORDER, pattern, teacher) == []


@pytest.mark.parametrize("stem", CHOOSING)
def test_every_exercise_that_chooses_prints_the_one_rule(stem):
    sections = exercise_sections(reader(ROOT / "notebooks" / f"{stem}.ipynb"))
    for number in CHOOSING[stem]:
        assert number in sections, f"{stem}: no exercise {number}"
        assert RULE in sections[number], f"{stem} exercise {number} does not print the rule"
        assert re.search(r"(better|worse|no detectable difference); keep ", sections[number]), \
            f"{stem} exercise {number} prints no verdict of the rule"


@pytest.mark.parametrize("path", [p for p in IN_ORDER if p.stem < "06"], ids=lambda p: p.stem)
def test_no_milestone_before_6_reads_the_test_split(path):
    code = [(n, c.source) for n, c in enumerate(reader(path).cells) if c.cell_type == "code"]
    assert [f"cell {n}: {READS_TEST.search(s).group(0)}" for n, s in code if READS_TEST.search(s)] == []


def test_the_checks_find_what_they_look_for(tmp_path):
    """Each check fails on a notebook that breaks it."""
    bad = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# plan: recall@k"),
        nbformat.v4.new_code_cell("print(golden.test)"),
        nbformat.v4.new_markdown_cell("The MRR is 0.5."),
        nbformat.v4.new_markdown_cell("## Scoring a ranking: recall@k and MRR"),
        nbformat.v4.new_markdown_cell("**3. Choose b.**"),
        nbformat.v4.new_code_cell("print(my_b)")])
    where = tmp_path / "bad.ipynb"
    nbformat.write(bad, where)
    found = mentions_before_teaching([where], TAUGHT["recall@k or MRR"][0], TAUGHT["recall@k or MRR"][1])
    assert found == ["bad cell 2: 'MRR'"]
    assert RULE not in exercise_sections(reader(where))["3"]
    assert READS_TEST.search(bad.cells[1].source)
