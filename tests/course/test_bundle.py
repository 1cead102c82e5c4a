"""The student bundle (issue 23): one archive with everything a student needs and nothing the instructor keeps,
installed into a fresh virtual environment that cannot see this repository, where milestone 1 runs blank and
completed and the student grades themselves.

The leak search is tested both ways: the bundle ``raglab release`` writes holds no solution line, hidden test,
model answer, executed notebook or milestone artifact, and each kind of leak planted in a copy is found.
"""
import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest

from raglab.base import config
from raglab.course import bundle, cells, grading

M1 = "01_ingest_and_chunking"


def test_the_archive_and_its_checksum(built):
    out, archive, _ = built
    line = (archive.parent / (archive.name + ".sha256")).read_text().split()
    assert line == [hashlib.sha256(archive.read_bytes()).hexdigest(), archive.name]


def test_the_bundle_holds_what_a_student_needs(built):
    _, _, top = built
    for name in ("START.md", "install.sh", "requirements.txt", "requirements-nodeps.txt", "raglab-course.json",
                 "config/prices.json", "config/llama_cpp_text_only.cmake", "data/profiles/small.txt", "data/python-docs-text-3.11.tar.xz",
                 "evals/python_docs_golden.jsonl", "evals/helpcenter_golden.jsonl", "evals/student_template.jsonl"):
        assert (top / name).is_file(), name
    assert sorted(p.name for p in (top / "notebooks").glob("*.ipynb")) == sorted(p.name for p in grading.notebooks())
    assert (top / "requirements.txt").read_text() == (config.PROJECT_ROOT / "requirements.txt").read_text()
    manifest = json.loads((top / "raglab-course.json").read_text())
    for name, sha in manifest["files"].items():            # every file listed with its hash, and nothing unlisted
        assert hashlib.sha256((top / name).read_bytes()).hexdigest() == sha, name
    on_disk = {str(p.relative_to(top)) for p in top.rglob("*") if p.is_file()} - {"raglab-course.json"}
    assert on_disk == set(manifest["files"])
    start = (top / "START.md").read_text()
    assert "./install.sh" in start and "jupyter lab notebooks/" in start and "raglab grade --self" in start
    assert "config/llama_cpp_text_only.cmake" in (top / "install.sh").read_text()    # the file the build reads ships


def test_the_wheel_is_raglabs_source_and_resources_only(built):
    _, _, top = built
    wheel = next((top / "wheels").glob("raglab-*.whl"))
    with zipfile.ZipFile(wheel) as whl:
        members = [m for m in whl.namelist() if not m.endswith("/")]
        package = [m for m in members if not m.startswith("raglab-") or ".dist-info/" not in m]
        for m in package:
            assert m.startswith("raglab/") and m.endswith((".py", ".jsonl", ".npz", ".html", ".css", ".js")), m
            assert whl.read(m) == (config.PROJECT_ROOT / m).read_bytes(), f"{m} differs from the checkout's"
    tracked = subprocess.run(["git", "ls-files", "raglab"], cwd=config.PROJECT_ROOT, capture_output=True, text=True).stdout.split()
    assert set(package) == {t for t in tracked if t.endswith((".py", ".jsonl", ".npz", ".html", ".css", ".js"))}


def test_nothing_of_the_instructors_is_in_the_bundle(built):
    _, _, top = built
    forbidden = bundle.instructor_text()
    assert len(forbidden) > 100               # the solutions, hidden tests and model answers of ten notebooks
    assert bundle.leaks(top, forbidden) == []
    for path in (top / "notebooks").glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), path.name
    reference = config.PROJECT_ROOT / "build" / "artifacts"      # the instructor's run, when the main job made it
    if reference.is_dir():
        theirs = {hashlib.sha256(p.read_bytes()).hexdigest() for p in reference.rglob("*") if p.is_file()}
        ours = {hashlib.sha256(p.read_bytes()).hexdigest() for p in top.rglob("*") if p.is_file()}
        assert not theirs & ours


def test_each_kind_of_leak_planted_in_a_copy_is_found(built, tmp_path):
    _, _, top = built
    forbidden = bundle.instructor_text()
    solution = next(line for line, where in forbidden.items() if where.startswith(M1))
    copy = tmp_path / "copy"
    shutil.copytree(top, copy)
    (copy / "evals" / "notes.md").write_text(f"a tip\n    {solution}\n")
    (copy / "data" / "results.json").write_text("{}")
    executed = nbformat.read(grading.notebooks()[1], as_version=4)          # the instructor's, with outputs
    nbformat.write(executed, copy / "notebooks" / "extra.ipynb")
    blank = nbformat.read(next((copy / "notebooks").glob("01_*.ipynb")), as_version=4)
    blank.cells.append(nbformat.v4.new_markdown_cell("Measured in scripts/answer_loss.py for issue 44."))
    blank.cells.append(nbformat.v4.new_markdown_cell("The test suite checks it; see `appendix_research.ipynb`."))
    (copy / "START.md").write_text((copy / "START.md").read_text() + "\nOr run `./setup.sh` as the README says.\n")
    nbformat.write(blank, copy / "notebooks" / "planted.ipynb")
    found = bundle.leaks(copy, forbidden)
    assert any("notebooks/planted.ipynb: says the word 'issue'" in p for p in found)
    assert any("notebooks/planted.ipynb: says a path into scripts/" in p for p in found)
    for planted, said in [("notebooks/planted.ipynb", "test suite"), ("notebooks/planted.ipynb", "appendix_research"),
                          ("START.md", "setup.sh"), ("START.md", "README")]:
        assert f"{planted}: names {said!r}, which only the instructor's copy has" in found, (planted, said)
    assert any("evals/notes.md" in p and solution in p for p in found)
    assert any("data/results.json: a milestone artifact" in p for p in found)
    assert any("notebooks/extra.ipynb: an executed notebook" in p for p in found)
    assert any("notebooks/extra.ipynb: holds '### BEGIN SOLUTION'" in p for p in found)


# ---------------------------------------------------------------- a fresh environment (slow)

def test_the_installed_raglab_is_the_wheel_and_reads_the_bundle(installed, tmp_path):
    """From the bundle's notebooks/, and from a folder outside the bundle (install.sh recorded where it is)."""
    for cwd in (installed.top / "notebooks", tmp_path):
        run = installed.run("python", "-c", "import raglab, raglab.base.config as c; print(raglab.__file__); "
                            "print(c.PROJECT_ROOT); print(c.data_dir() / 'profiles' / 'small.txt')", cwd=cwd)
        where, home, profile = run.stdout.split()
        assert Path(where).is_relative_to(installed.venv) and Path(home) == installed.top, run.stdout + run.stderr
        assert not Path(where).is_relative_to(config.PROJECT_ROOT) and Path(profile).is_file()


@pytest.fixture(scope="module")
def milestone_1(installed):
    """Milestone 1 executed in the fresh environment with ``jupyter nbconvert --execute``, blank and completed
    (the release filled with the solutions, as a student who solved it saves it), then self-graded."""
    top = installed.top
    grading.hand_in(top / "notebooks", top / "done", M1)
    (top / "blank").mkdir()
    shutil.copy2(top / "notebooks" / f"{M1}.ipynb", top / "blank" / f"{M1}.ipynb")
    out = {}
    for who in ("blank", "done"):
        run = installed.run("jupyter", "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
                       "--output-dir", str(top / f"{who}-executed"), str(top / who / f"{M1}.ipynb"))
        assert run.returncode == 0, run.stderr[-3000:]
        executed = nbformat.read(top / f"{who}-executed" / f"{M1}.ipynb", as_version=4)
        run = installed.run("raglab", "grade", "--self", who, "--out", f"grade-{who}", "--json")
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
        out[who] = (executed, json.loads((top / f"grade-{who}" / "grade.json").read_text()))
    return out


def test_the_blank_milestone_runs_and_earns_nothing(milestone_1):
    executed, grade = milestone_1["blank"]
    assert cells.ran_status(executed) == cells.NOTHING_DONE
    auto = [c for c in grade["checks"] if not c["by_hand"]]          # the prose answer is the instructor's to grade
    assert [c["score"] for c in grade["checks"]] == [0.0] * len(grade["checks"]) and len(auto) == 4
    assert grade["ran"] == {M1: cells.NOTHING_DONE} and not any(r["passed"] for r in grade["rubric"])


def test_the_completed_milestone_passes_its_self_checks_and_rubric(milestone_1):
    executed, grade = milestone_1["done"]
    assert cells.ran_status(executed) == "ok"
    assert all(r.error == "" for r in cells.cell_runs(executed)), [r for r in cells.cell_runs(executed) if r.error]
    auto = [c for c in grade["checks"] if not c["by_hand"]]          # the prose answer is the instructor's to grade
    assert [c["score"] for c in auto] == [c["points"] for c in auto] == [2.0, 1.0, 1.0, 2.0]
    assert grade["ran"] == {M1: "ok"} and all(r["passed"] for r in grade["rubric"]), grade["rubric"]
    assert grade["stages"]["chunker"]["by"] == "yours"


def test_an_edited_self_check_scores_nothing(installed, milestone_1):
    top = installed.top
    path = top / "done" / f"{M1}.ipynb"
    nb = nbformat.read(path, as_version=4)
    check = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code")
    check.source = "print('PASS  1. every word is in a window: trust me')"
    (top / "edited").mkdir()
    nbformat.write(nb, top / "edited" / path.name)
    run = installed.run("raglab", "grade", "--self", "edited", "--out", "grade-edited", "--json")
    assert run.returncode == 0, run.stderr[-2000:]
    grade = json.loads((top / "grade-edited" / "grade.json").read_text())
    first = grade["checks"][0]
    assert first["score"] == 0.0 and "edited" in first["why"]
