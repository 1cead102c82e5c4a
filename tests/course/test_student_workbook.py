"""The whole course on a folder of a student's own, as a student sets it up in Jupyter: every numbered notebook
copied beside a ``golden.jsonl`` the student wrote for the folder (no environment variable) and a ``settings.toml``
naming the folder (``use_settings``, what notebook 00 shows), run in order by the main job.

The folder is ``evals/capstone_folder``: the user guide of a fictional command-line tool with its own split golden
set, written for the course (not the Python docs). Checked:

- every notebook runs to its end (the main job stops at a cell that fails), and every rubric criterion passes;
- each milestone that reads a golden set prints, near its top, that it runs on the folder with the student's set;
- every artifact that records what it read names the folder (and its content hash) and that set; no artifact made
  before milestone 6 read a test question, and milestone 6's scoreboard holds exactly the test questions.
"""
import json
import shutil
from pathlib import Path

import pytest

from raglab.course import artifacts, grading
from raglab.course.criteria import CHOOSING_SECTIONS
from raglab.course.golden_in_use import use_settings
from raglab.course.workbook import run_workbook

pytestmark = pytest.mark.usefixtures("project_caches")      # the main job's warm caches (the folder's are cold)

FOLDER = Path(__file__).parents[2] / "evals" / "capstone_folder"
READS_THE_GOLDEN_SET = ["02_dense_and_bm25", "03_hybrid_rrf_rerank", "04_cited_answers", "06_evaluation", "07_bakeoff",
                        "07_chunking_lab", "08_stretch_experiments"]


@pytest.mark.slow
def test_every_milestone_runs_on_a_folder_and_golden_set_of_the_students_own(tmp_path, monkeypatch):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for path in grading.notebooks():
        shutil.copy(path, notebooks)
    mine = Path(shutil.copy(FOLDER / "golden.jsonl", notebooks / "golden.jsonl"))
    use_settings(corpus=FOLDER / "pages", folder=notebooks)
    for name in ("RAGLAB_GOLDEN", "RAGLAB_CORPUS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(artifacts.ENV, str(tmp_path / "artifacts"))

    passed = run_workbook(out=tmp_path / "build", folder=notebooks)      # raises at the first cell that fails

    rows = [json.loads(line) for line in mine.read_text().splitlines()]
    dev = sum(r["split"] == "dev" for r in rows)
    line = (f"corpus {(FOLDER / 'pages').resolve()}; golden set: yours (golden.jsonl), "
            f"{dev} dev and {len(rows) - dev} test questions")
    for stem in READS_THE_GOLDEN_SET:
        ran = json.loads((tmp_path / "build" / "notebooks" / f"{stem}.ipynb").read_text())
        printed = "".join("".join(o.get("text", "")) for c in ran["cells"] if c["cell_type"] == "code"
                          for o in c.get("outputs", []))
        assert line in printed, stem

    results = artifacts.load_results(tmp_path / "artifacts")
    report = results["evaluation"]["read"]
    test_ids = {r["id"] for r in rows if r["split"] == "test"}
    assert report["corpus"] == str((FOLDER / "pages").resolve()) and report["golden_path"] == str(mine.resolve())
    assert report["split"] == "test" and set(report["ids"]) == test_ids
    for name in (*CHOOSING_SECTIONS, "bakeoff"):
        read = results[name]["read"]
        assert (read["corpus"], read["corpus_sha256"], read["sha256"]) == (
            report["corpus"], report["corpus_sha256"], report["sha256"]), name
        assert read["split"] == "dev" and not test_ids & set(read["ids"]), name
    board = json.loads((tmp_path / "artifacts" / "m6_scoreboard.json").read_text())
    assert {q["id"] for q in board["questions"]} == test_ids
    assert passed, (tmp_path / "artifacts" / "rubric.md").read_text()      # every criterion reads the folder
