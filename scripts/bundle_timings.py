"""How long each notebook takes the first time a student runs it: measured from a new install of the student bundle.

The student bundle is built (``raglab release``), unpacked, and installed by its own ``install.sh`` into a new
virtual environment. Each notebook, completed with the solutions (what a student who did every exercise saves),
then runs in order with ``jupyter nbconvert --execute`` in that environment, from a folder outside the bundle's
``notebooks/``, with the bundle's working folder empty: every corpus is extracted, and every embedding and index
built, as on a student's first run. The seconds go to ``config/bundle_timings.json``, which the bundle ships and
notebook 00's table of milestones prints.

    python scripts/bundle_timings.py                 # about 15 minutes on 2 cores with pip's cache filled

Run it on a machine doing nothing else: the seconds are wall-clock time.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raglab.base.files import atomic_open  # noqa: E402
from raglab.course import bundle, grading, timings  # noqa: E402


def measure(work: Path) -> dict:
    release = work / "release"
    subprocess.run([sys.executable, "-m", "raglab", "release", "--out", str(release)], check=True, cwd=ROOT)
    with tarfile.open(next(release.glob("raglab-course-*.tar.gz"))) as tar:
        tar.extractall(work / "student", filter="data")
    top = next((work / "student").iterdir())
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = bundle.student_env(venv)
    began = time.perf_counter()
    subprocess.run(["bash", "install.sh"], cwd=top, env=env, check=True)
    install = time.perf_counter() - began

    done, ran = work / "my-work", work / "ran"
    stems = [p.stem for p in sorted((top / "notebooks").glob("*.ipynb"))]
    for stem in stems:
        grading.hand_in(top / "notebooks", done, stem)
    seconds = {}
    for stem in stems:
        began = time.perf_counter()
        subprocess.run([str(venv / "bin" / "jupyter"), "nbconvert", "--to", "notebook", "--execute",
                        "--ExecutePreprocessor.timeout=1800", "--output-dir", str(ran), str(done / f"{stem}.ipynb")],
                       cwd=done, env=env, check=True, capture_output=True)
        seconds[stem] = round(time.perf_counter() - began, 1)
        print(f"{stem}: {timings.minutes(seconds[stem])}", flush=True)
    return {"measured": time.strftime("%Y-%m-%d"), "profile": "small", "cores": os.cpu_count(),
            "python": platform.python_version(), "caches": "cold", "install_s": round(install, 1),
            "notebooks": seconds, "total_s": round(sum(seconds.values()), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=timings.BUNDLE, help="where to write the seconds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="raglab-bundle-times-") as tmp:
        result = measure(Path(tmp))
    with atomic_open(args.out) as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    print(f"{args.out}: install {timings.minutes(result['install_s'])}, notebooks {timings.minutes(result['total_s'])}")


if __name__ == "__main__":
    main()
