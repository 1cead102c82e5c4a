"""Grading a class at scale (issue 23): students in parallel, each in a folder, process and database of their own;
a run that resumes; the same grades on a Dask cluster of two workers started here; the local model recorded once.

The class is milestone 1 for three students whose rows are known: the solutions (4 of 4 points, both criteria),
a chunker that drops the tail (the write-it exercise's 2 points and the coverage criterion lost) and the blank
release (nothing).
"""
import csv
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from raglab.course import classroom, grading
from raglab.experiments.recorded import recorded, recording

pytestmark = pytest.mark.usefixtures("project_caches")      # the main job's warm caches

M1 = "01_ingest_and_chunking"
DROPS_TAIL = """def chunk_words(words, size=150, overlap=30):
    return [words[i:i + size] for i in range(0, max(len(words) - size, 1), size - overlap)]"""
EXPECTED = {"ada": ("6.0", "1", "2"), "ben": ("4.0", "1", "1"), "bo": ("0.0", "0", "0")}   # points (of 6), ran, rubric passed


def _make_class(base: Path) -> Path:
    release = grading.release(base / "course", only=[M1])
    klass = base / "class"
    grading.hand_in(release, klass / "ada", M1)
    grading.hand_in(release, klass / "ben", M1, {"chunk_words": DROPS_TAIL})
    (klass / "bo").mkdir()
    (klass / "bo" / f"{M1}.ipynb").write_bytes((release / f"{M1}.ipynb").read_bytes())
    return klass


def _rows(out: Path) -> dict:
    with open(out / "gradebook.csv", newline="") as fh:
        return {r["student"]: r for r in csv.DictReader(fh)}


def _summary(rows: dict) -> dict:
    return {s: (r["autograder points"], r["notebooks ran"], r["rubric passed"]) for s, r in rows.items()}


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    """The class graded two at a time."""
    base = tmp_path_factory.mktemp("scale")
    klass = _make_class(base)
    said = []
    classroom.grade_class(klass, base / "grades", jobs=2, log=said.append)
    return base, klass, base / "grades", said


def test_two_at_a_time_gives_each_student_their_row(class_run):
    _, _, out, said = class_run
    assert _summary(_rows(out)) == EXPECTED
    assert said[0].startswith("grading 3 of 3 students (0 unchanged") and "2 at a time" in said[0]


def test_each_student_ran_in_a_folder_of_their_own(class_run):
    _, _, out, _ = class_run
    chunks = {s: (out / "students" / s / "artifacts" / "m1_chunks.jsonl").read_text() for s in EXPECTED}
    assert len(set(chunks.values())) == 3                          # ada's, ben's tail-dropping, raglab's stand-in
    records = {s: classroom.read_record(out / "students" / s) for s in EXPECTED}
    assert {s: r["stages"]["chunker"]["by"] for s, r in records.items()} == {"ada": "yours", "ben": "yours", "bo": "raglab"}
    assert not list((out / "students").glob(".*.tmp-*"))           # nothing half-written left behind


def test_the_class_database_holds_every_students_scores(class_run):
    """The one database the formgrader reads, rebuilt by one process, agrees with the gradebook."""
    from nbgrader.api import Gradebook

    _, _, out, _ = class_run
    rows = _rows(out)
    with Gradebook(f"sqlite:///{out / 'course' / 'gradebook.db'}") as gb:
        for s in EXPECTED:
            sub = gb.find_submission("raglab", s)
            assert float(rows[s]["autograder points"]) == sum(g.auto_score or 0 for nb in sub.notebooks for g in nb.grades)


def test_a_second_run_regrades_only_what_changed(class_run):
    base, klass, out, _ = class_run
    before = _rows(out)
    said = []
    classroom.grade_class(klass, out, jobs=2, log=said.append)
    assert said[0].startswith("grading 0 of 3 students (3 unchanged") and _rows(out) == before
    grading.hand_in(base / "course" / "release", klass / "ben", M1)            # ben fixes his chunker
    said = []
    classroom.grade_class(klass, out, jobs=2, log=said.append)
    assert said[0].startswith("grading 1 of 3 students (2 unchanged") and any(line.strip().startswith("ben:") for line in said)
    assert _summary(_rows(out))["ben"] == EXPECTED["ada"]


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path):
    klass = _make_class(tmp_path)
    cmd = [sys.executable, "-m", "raglab", "grade", str(klass), "--out", str(tmp_path / "grades")]
    killed = subprocess.run(cmd, env={**os.environ, "RAGLAB_CRASH_AT": "class-student-graded"}, capture_output=True,
                            text=True, timeout=900)
    assert killed.returncode == -9, killed.stdout + killed.stderr                 # killed after the first student
    assert not (tmp_path / "grades" / "gradebook.csv").exists()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "grading 2 of 3 students (1 unchanged" in again.stdout
    assert _summary(_rows(tmp_path / "grades")) == EXPECTED


def test_a_dask_cluster_of_two_workers_gives_the_same_gradebook(class_run, tmp_path):
    from distributed import LocalCluster

    _, klass, out, _ = class_run
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        said = []
        classroom.grade_class(klass, tmp_path / "grades", scheduler=cluster.scheduler_address, log=said.append)
    assert "on tcp://127.0.0.1:" in said[0]
    ours, theirs = _rows(tmp_path / "grades"), _rows(out)
    assert set(ours) == set(theirs) and ours["ada"] == theirs["ada"] and ours["bo"] == theirs["bo"]


# ---------------------------------------------------------------- the local model, once per class (fast)

def test_a_measurement_is_recorded_once_and_read_back(tmp_path, monkeypatch):
    calls = []

    def measure():
        calls.append(1)
        return {"latency_ms": 100 + len(calls)}

    assert recorded("cost", {"n": 8}, measure) == {"latency_ms": 101}      # no setting: measured every time
    monkeypatch.setenv("RAGLAB_RECORDED", str(tmp_path))
    threads = [threading.Thread(target=lambda: recorded("cost", {"n": 8}, measure)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 2                                                  # three graders, one measurement
    again = recorded("cost", {"n": 8}, measure)
    assert again["latency_ms"] == 102 and again["recorded"]["params"] == {"n": 8} and len(calls) == 2
    assert recorded("cost", {"n": 9}, measure)["latency_ms"] == 103           # other parameters: measured
    assert json.loads(recording("cost", {"n": 8}).read_text())["latency_ms"] == 102       # what was read back
