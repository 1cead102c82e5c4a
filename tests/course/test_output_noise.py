"""nbval, as the test suite runs it (the project's conftest.py), passes a cell whose printed decimal moved by one
unit in its last digit, and fails one whose number, count or text changed."""
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow      # starts a kernel


def _notebook(path: Path, code: str, committed: str) -> Path:
    cell = nbformat.v4.new_code_cell(code, execution_count=1,
                                     outputs=[nbformat.v4.new_output("stream", name="stdout", text=committed)])
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    return path


def test_nbval_passes_last_digit_noise_and_fails_a_real_change(tmp_path):
    cases = {"noise": ('print("MRR 0.4373 over 36 questions")', "MRR 0.4372 over 36 questions\n"),
             "number": ('print("MRR 0.4369 over 36 questions")', "MRR 0.4372 over 36 questions\n"),
             "count": ('print("MRR 0.4372 over 35 questions")', "MRR 0.4372 over 36 questions\n")}
    for name, (code, committed) in cases.items():
        _notebook(tmp_path / f"{name}.ipynb", code, committed)
    (tmp_path / "no_masks.cfg").write_text("")      # on a CPU of another precision conftest.py would mask decimals
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "conftest", "-q",
                          "--nbval-sanitize-with", str(tmp_path / "no_masks.cfg"),
                          "-p", "no:cacheprovider", "-rA", str(tmp_path)],
                         cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                         capture_output=True, text=True, timeout=300)
    summary = {line.split()[1].split("::")[0].split("/")[-1]: line.split()[0]
               for line in run.stdout.splitlines() if line.startswith(("PASSED", "FAILED"))}
    assert summary == {"noise.ipynb": "PASSED", "number.ipynb": "FAILED", "count.ipynb": "FAILED"}, run.stdout
