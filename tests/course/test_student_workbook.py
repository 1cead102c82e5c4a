"""The course on a folder of a student's own, as a student sets it up in Jupyter, from a new install of the
student bundle: the numbered notebooks from 00 to the bake-off (completed) copied into a folder outside the bundle, beside a
``golden.jsonl`` the student wrote for the folder (no environment variable) and a ``settings.toml`` naming the
folder (``use_settings``, what notebook 00 shows), run in order by the main job in the bundle's new environment,
with its working folder empty (every corpus extracted, embedded and indexed on the way).

The folder is ``evals/capstone_folder``: the user guide of a fictional command-line tool with its own split golden
set, written for the course (not the Python docs). Checked:

- every notebook runs to its end from outside the bundle's ``notebooks/`` with the installed wheel (the main job
  stops at a cell that fails), and every rubric criterion of those notebooks passes;
- each milestone that reads a golden set prints, near its top, that it runs on the folder with the student's set;
- every artifact that records what it read names the folder (and its content hash) and that set; no artifact made
  before milestone 6 read a test question, and milestone 6's scoreboard holds exactly the test questions.

The chunking lab and milestone 8 are left out to keep the test command's time: on a cold install they are the
two slowest notebooks (six chunkings embedded, the local model answering every question), and they find the
folder and the set through the same functions as the notebooks run here (``golden_in_use``).
"""
import json
import shutil
from pathlib import Path

import pytest

from raglab.course import artifacts, bundle, grading, rubric
from raglab.course.criteria import CHOOSING_SECTIONS
from raglab.course.golden_in_use import use_settings

READS_THE_GOLDEN_SET = ["02_dense_and_bm25", "03_hybrid_rrf_rerank", "04_cited_answers", "06_evaluation", "07_bakeoff"]
LEFT_OUT = ("07_chunking_lab", "08_stretch_experiments")
RUN = "import sys; from raglab.course.workbook import run_workbook; sys.exit(0 if run_workbook(out=sys.argv[1], folder=sys.argv[2]) else 3)"


def _printed(path: Path) -> str:
    """Everything a notebook's code cells printed or displayed as text or Markdown."""
    cells = json.loads(path.read_text())["cells"]
    return "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                   for c in cells if c["cell_type"] == "code" for o in c.get("outputs", []))


@pytest.mark.slow
def test_every_milestone_runs_on_a_folder_and_golden_set_of_the_students_own(installed, tmp_path):
    folder = installed.top / "evals" / "capstone_folder"              # the bundle's copy of it
    notebooks = tmp_path / "my-course"                                  # outside the bundle
    notebooks.mkdir()
    ran_here = [path for path in grading.notebooks() if path.stem not in LEFT_OUT]
    for path in ran_here:
        shutil.copy(path, notebooks)
    mine = Path(shutil.copy(folder / "golden.jsonl", notebooks / "golden.jsonl"))
    use_settings(corpus=folder / "pages", folder=notebooks)
    artifacts_dir = tmp_path / "artifacts"

    ran = installed.run("python", "-c", RUN, str(tmp_path / "build"), str(notebooks), cwd=notebooks, timeout=2400,
                        RAGLAB_ARTIFACTS=str(artifacts_dir))
    assert ran.returncode in (0, 3), ran.stdout[-3000:] + ran.stderr[-5000:]    # 3: it ran, a criterion failed
    assert (installed.top / ".raglab").is_dir()          # the installed wheel found the bundle, from outside it

    rows = [json.loads(line) for line in mine.read_text().splitlines()]
    dev = sum(r["split"] == "dev" for r in rows)
    line = (f"corpus {(folder / 'pages').resolve()}; golden set: yours (golden.jsonl), "
            f"{dev} dev and {len(rows) - dev} test questions")
    for path in sorted((tmp_path / "build" / "notebooks").glob("*.ipynb")):
        printed = _printed(path)
        assert line in printed or path.stem not in READS_THE_GOLDEN_SET, path.stem
        # what the notebooks print sends the student to nothing the bundle lacks (the release checks their text)
        assert bundle.instructor_references(f"notebooks/{path.name}", printed) == [], path.stem

    results = artifacts.load_results(artifacts_dir)
    report = results["evaluation"]["read"]
    test_ids = {r["id"] for r in rows if r["split"] == "test"}
    assert report["corpus"] == str((folder / "pages").resolve()) and report["golden_path"] == str(mine.resolve())
    assert report["split"] == "test" and set(report["ids"]) == test_ids
    for name in (*CHOOSING_SECTIONS, "bakeoff"):
        read = results[name]["read"]
        assert (read["corpus"], read["corpus_sha256"], read["sha256"]) == (
            report["corpus"], report["corpus_sha256"], report["sha256"]), name
        assert read["split"] == "dev" and not test_ids & set(read["ids"]), name
    board = json.loads((artifacts_dir / "m6_scoreboard.json").read_text())
    assert {q["id"] for q in board["questions"]} == test_ids
    failed = [f"{r.criterion}: {r.why}" for r in rubric.check(artifacts_dir, notebooks=[p.stem for p in ran_here])
              if not r.passed]
    assert failed == [], failed                                                 # every criterion reads the folder
