"""A student's own golden set through the workbook: a checked, split ``golden.jsonl`` beside the notebooks, with
no setting, is the set the milestones that read a golden set (02, 03, 04, 06, 07) measure with. Each says so in
the line it prints near its top, no milestone cell fails, and the scoreboard the rubric reads holds the
student's test questions, not the course's."""
import json
import shutil
import sys
from pathlib import Path

import pytest

from raglab.infra.corpus import load_corpus
from raglab.course import cells, grading
from raglab.course.workbook import execute

sys.path.insert(0, str(Path(__file__).parents[1] / "evaluation"))
from test_student_golden import student_set, write  # noqa: E402  (the same builder the validator's tests use)

pytestmark = pytest.mark.usefixtures("project_caches")      # the main job's warm caches

READS_THE_GOLDEN_SET = ["02_dense_and_bm25", "03_hybrid_rrf_rerank", "04_cited_answers", "06_evaluation", "07_bakeoff",
                        "07_chunking_lab"]


@pytest.mark.slow
def test_the_milestones_run_on_a_students_own_golden_set(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    mine = write(folder / "golden.jsonl", student_set(load_corpus("python-docs", "small")))
    monkeypatch.delenv("RAGLAB_GOLDEN", raising=False)
    monkeypatch.setenv("RAGLAB_ARTIFACTS", str(tmp_path / "artifacts"))
    paths = {p.stem: p for p in grading.notebooks()}
    for stem in READS_THE_GOLDEN_SET:
        ran = execute(Path(shutil.copy(paths[stem], folder)), allow_errors=True)
        broken = [(r.index, r.error) for r in cells.cell_runs(ran) if r.kind == "other" and r.error]
        assert not broken, (stem, broken)
        printed = "".join(o.get("text", "") for c in ran.cells if c.cell_type == "code" for o in c.get("outputs", []))
        assert "golden set: yours (golden.jsonl), 15 dev and 15 test questions" in printed, stem
    board = json.loads((tmp_path / "artifacts" / "m6_scoreboard.json").read_text())   # milestone 6 reports test
    rows = [json.loads(line) for line in mine.read_text().splitlines()]
    assert {q["id"] for q in board["questions"]} == {r["id"] for r in rows if r["split"] == "test"}
