"""The student bundle: one archive an instructor hands out, holding everything a student needs and
nothing the instructor keeps.

``raglab release --out OUT`` writes, beside the blank notebooks in ``OUT/release/``,
``OUT/raglab-course-VERSION.tar.gz`` and its ``.sha256``. Unpacked, the bundle holds:

- ``START.md``: install, open, do milestone 1, self-grade, hand in;
- ``install.sh`` and the pinned ``requirements.txt`` / ``requirements-nodeps.txt``;
- ``wheels/raglab-VERSION-py3-none-any.whl``: the library, built from ``raglab/`` alone (no notebook,
  solution, hidden test or reference artifact: the package holds code and its resources only);
- ``notebooks/``: the student release (solutions replaced by stubs, hidden tests removed, no outputs);
- ``data/``, ``evals/``, ``config/``: the corpora, golden sets and prices the notebooks read;
- ``raglab-course.json``: what the bundle is (version, date, the files and their sha256). An
  installed ``raglab`` finds its course folder by this file (``raglab.base.config``).

Before the archive is written, ``leaks`` searches every file of the bundle and of the wheel for the
instructor's text (solution lines, hidden-test lines, the model answers of the prose questions, the
solution and hidden-test markers), for executed notebooks, for the project's own words in a notebook (its
tracker, test markers, research lever codes: ``raglab.course.cells.PROJECT_WORDS``), for the milestone
artifacts, and for a text the student reads that sends them to a file or command only the instructor's copy has
(``INSTRUCTOR_ONLY``); the release fails if it finds one.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from raglab import __version__

from raglab.base import config
from raglab.course.cells import BY_HAND, HIDDEN, SOLUTION, project_words
from raglab.course.milestones import MILESTONES
from raglab.course.workbook import notebooks
from raglab.base.files import atomic_dir, atomic_open

NAME = "raglab-course"
# what the notebooks read besides the library: copied from the course folder into the bundle
DATA = ("data", "evals", "config/prices.json", "config/tokens.example.json", "config/llama_cpp_text_only.cmake")
# copied when present: each notebook's measured first run (scripts/bundle_timings.py measures it on a bundle)
MEASURED = ("config/bundle_timings.json",)
# the files a milestone run saves (raglab.course.artifacts): none may ship
ARTIFACT = re.compile(r"(^|/)(results\.json|rubric\.(md|json)|m\d_[\w.-]+|bakeoff_\w+\.png|exp_\w+\.png)$")

# What only the instructor's copy holds (its README, setup script, test suite, scripts, docs, benchmarks, the research
# appendix and the main job that runs them) and the instructor's own commands: the texts a student reads in the
# bundle (notebooks, START.md, install.sh, the requirement files) must not send them there.
INSTRUCTOR_ONLY = re.compile(
    r"\bsetup\.sh\b|\bREADME\b|\bpyproject\.toml\b|\bconftest\.py\b|requirements-tests\.txt|appendix_research"
    r"|\btest suite\b|\bthe tests\b|\bmain job\b|(?<![\w/])(?:tests|scripts|docs|bench)/"
    r"|raglab release|raglab grade (?!--self)|formgrader")
STUDENT_TEXTS = re.compile(r"^(notebooks/.*\.ipynb|START\.md|install\.sh|requirements[\w-]*\.txt)$")

WHEEL_README = """# raglab

The library of the raglab course: every reusable step of a cited RAG assistant over technical documentation.
Installed from the course bundle (see its START.md), it reads the course's data from the unpacked bundle.
"""

INSTALL = """#!/usr/bin/env bash
# Install the course into the Python environment in use. Make a fresh one first:
#   python3.11 -m venv .venv && . .venv/bin/activate
set -euo pipefail
cd "$(dirname "$0")"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# notebook 08's local model server: a portable llama.cpp build of only the libraries a text model loads
# (config/llama_cpp_text_only.cmake; about a minute and a half the first time, then pip reuses its wheel)
llama_flags="-DGGML_NATIVE=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE='$PWD/config/llama_cpp_text_only.cmake'"
export CMAKE_ARGS="${CMAKE_ARGS:-$llama_flags}"
python -m pip install -q --no-compile -r requirements.txt     # each module is compiled when first imported
python -m pip install -q --no-compile --no-deps -r requirements-nodeps.txt
python -m pip install -q --no-deps --force-reinstall wheels/*.whl
# remember this folder, so that notebooks and commands run from anywhere find the course's data
python -c "import sys; from raglab.base.config import INSTALLED_HOME; INSTALLED_HOME.write_text(sys.argv[1])" "$PWD"
python -c "import raglab, sys; print('raglab', raglab.__version__, 'installed in', sys.prefix)"
"""

START = """# raglab: the course, student edition

Build a cited RAG assistant over the Python documentation, milestone by milestone, one notebook at a time.
Everything runs offline on a laptop CPU (Python 3.11).

{milestones}

## Two commands

```bash
python3.11 -m venv .venv && . .venv/bin/activate && ./install.sh   # 1. install into a fresh environment
jupyter lab notebooks/                                              # 2. open the workbook
```

The first install builds the local model server (llama-cpp-python) from source: about a minute and a half on two
cores, once. Open `00_setup.ipynb` first: it checks your machine.

## Milestone 1

Open `01_ingest_and_chunking.ipynb` and run it top to bottom. Each exercise is an answer cell (replace the
`raise NotImplementedError(...)` with your code) and a self-check cell below it that prints `PASS` or `FAIL`
with the reason. The last section, **Your pipeline: save the milestone**, cuts the corpus with *your* chunker;
**Done when** shows what the instructor's checker will read from it.

## Grade yourself

```bash
raglab grade --self notebooks/          # runs your notebooks; grade/feedback.html
```

You get the visible self-checks' points, the rubric on what your notebooks saved, and a feedback page
(your pipeline stage by stage, what failed and why). Your instructor's grade adds hidden tests and the points
of the answers graded by hand; a self-check cell you edited scores nothing. Notebook 00 shows what each
milestone is worth and the pass mark.

## Hand in

Hand in the notebooks you did (`notebooks/NN_*.ipynb`, saved, as they are) and, for milestone 6's capstone,
your `golden.jsonl`, in one folder named after you:

```
yourname/01_ingest_and_chunking.ipynb
yourname/02_dense_and_bm25.ipynb
...
yourname/golden.jsonl
```

The instructor re-runs them with the hidden tests.
"""


def student_env(venv: Path) -> dict:
    """The environment a student's shell gives a program of the bundle's virtual environment ``venv``: the venv
    first on PATH, and nothing of this checkout (no ``RAGLAB_*``, ``PYTHON*``, ``VIRTUAL_ENV`` or ``JUPYTER*``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGLAB_", "PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    env.update(PATH=f"{Path(venv) / 'bin'}:{env.get('PATH', '')}", VIRTUAL_ENV=str(venv))
    return env


def start_md(present: set[str] | None = None) -> str:
    """The bundle's START.md, listing the notebooks it holds (``present``: their stems; default every one)
    with their milestones (``raglab.course.milestones``)."""
    listed = [m for m in MILESTONES if present is None or m.notebook in present]
    return START.format(milestones="\n".join(
        f"- `{m.notebook}.ipynb`: " + (m.title if m.number is None else f"{m.label}, {m.title[0].lower()}{m.title[1:]}")
        for m in listed))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_wheel(dest: Path) -> Path:
    """The ``raglab`` wheel, built from a copy of the package alone (``raglab/`` and ``pyproject.toml``, with a
    README of its own), so that nothing else of the checkout can end up in it."""
    root = config.PROJECT_ROOT
    with tempfile.TemporaryDirectory(prefix="raglab-wheel-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(root / "raglab", src / "raglab", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copy2(root / "pyproject.toml", src / "pyproject.toml")
        (src / "README.md").write_text(WHEEL_README, encoding="utf-8")     # the project's README is the instructor's
        run = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                              "-w", str(Path(tmp) / "dist"), str(src)], capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(f"building the raglab wheel failed:\n{run.stdout}{run.stderr}")
        wheel = next((Path(tmp) / "dist").glob("raglab-*.whl"))
        dest.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheel, dest / wheel.name))


def instructor_text(folder: Path | None = None) -> dict[str, str]:
    """What must never reach a student, from the instructor's notebooks: ``{line: where it comes from}`` for every
    solution line, hidden-test line and prose model answer line (12 characters or more, comments left out), except
    lines that are public anyway: in raglab's own source (the library the course teaches: ``return 1.0 / rank``)
    or in what the release shows of the notebooks (``import pandas as pd``)."""
    import nbformat  # lazy

    public = {ln.strip() for p in (config.PROJECT_ROOT / "raglab").rglob("*.py")
              for ln in p.read_text(encoding="utf-8").splitlines()}
    found: dict[str, str] = {}
    solution = re.compile(rf"{SOLUTION}\n(.*?)### END SOLUTION", re.S)
    hidden = re.compile(rf"{HIDDEN}\n(.*?)### END HIDDEN TESTS", re.S)
    for path in notebooks(folder):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            blocks = solution.findall(cell.source) + hidden.findall(cell.source)
            if cell.cell_type == "markdown" and BY_HAND.match(cell.source):
                blocks.append(BY_HAND.sub("", cell.source))
            else:       # what the release shows of the cell is public too (``import pandas as pd``)
                public |= {ln.strip() for ln in hidden.sub("", solution.sub("", cell.source)).splitlines()}
            for block in blocks:
                for line in (ln.strip() for ln in block.splitlines()):
                    if len(line) >= 12 and not line.startswith("#"):
                        found.setdefault(line, f"{path.name} cell {i}")
    return {line: where for line, where in found.items() if line not in public}


def _texts(folder: Path):
    """``(name, text)`` for every file of the bundle folder and every member of a wheel in it."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = str(path.relative_to(folder))
        data = path.read_bytes()
        if path.suffix == ".whl":
            with zipfile.ZipFile(io.BytesIO(data)) as whl:
                for member in whl.namelist():
                    yield f"{name}!{member}", whl.read(member).decode("utf-8", errors="replace")
        elif path.suffix not in (".xz", ".gz", ".npz"):
            yield name, data.decode("utf-8", errors="replace")


def instructor_references(name: str, text: str) -> list[str]:
    """What a text the student reads (``STUDENT_TEXTS``) names of the instructor's copy (``INSTRUCTOR_ONLY``).

    >>> instructor_references("START.md", "Run ./setup.sh, then read the README; raglab grade --self notebooks/")
    ["START.md: names 'setup.sh', which only the instructor's copy has", "START.md: names 'README', which only the instructor's copy has"]
    >>> instructor_references("data/HELPCENTER.md", "see the README")          # not a text the student is sent by
    []
    """
    if not STUDENT_TEXTS.match(name):
        return []
    said = dict.fromkeys(m.group(0).strip() for m in INSTRUCTOR_ONLY.finditer(text))
    return [f"{name}: names {s!r}, which only the instructor's copy has" for s in said]


def leaks(folder: Path, forbidden: dict[str, str] | None = None) -> list[str]:
    """Everything in a bundle folder (and its wheel) that is the instructor's: a file holding a solution,
    hidden-test or model-answer line (``instructor_text``) or a solution / hidden-test marker, a notebook with
    outputs or the project's own words, a milestone artifact. Empty when the bundle is clean."""
    import nbformat  # lazy

    forbidden = instructor_text() if forbidden is None else forbidden
    problems = []
    for name, text in _texts(Path(folder)):
        if ARTIFACT.search(name.split("!")[-1]):
            problems.append(f"{name}: a milestone artifact")
        if name.endswith(".ipynb"):
            nb = nbformat.reads(text, as_version=4)
            if any(c.get("outputs") or c.get("execution_count") for c in nb.cells if c.cell_type == "code"):
                problems.append(f"{name}: an executed notebook (it has outputs)")
            if "!" in name or not name.startswith("notebooks/"):
                problems.append(f"{name}: a notebook outside notebooks/")
            text = "\n".join(c.source for c in nb.cells)            # its cells' lines, not their JSON
            problems += [f"{name}: says {said}" for said in project_words(text)]
        problems += instructor_references(name, text)
        lines = {ln.strip() for ln in text.splitlines()}
        for marker in (SOLUTION, HIDDEN):
            if marker in lines:                  # a marker on a line of its own: an instructor's cell
                problems.append(f"{name}: holds {marker!r}")
        for line in lines & forbidden.keys():
            problems.append(f"{name}: holds {line!r} (from {forbidden[line]})")
    return problems


def build(out: str | Path, release_dir: Path, version: str | None = None) -> tuple[Path, str]:
    """Write the student bundle for the blank notebooks in ``release_dir``: ``OUT/raglab-course-VERSION.tar.gz``
    and ``OUT/raglab-course-VERSION.tar.gz.sha256``. Returns the archive and its sha256. Raises ``ValueError``
    listing what leaked if the bundle would hold anything of the instructor's."""
    out, root = Path(out).resolve(), config.PROJECT_ROOT
    version = version or __version__
    top = f"{NAME}-{version}"
    with atomic_dir(out / top) as tmp:
        shutil.copytree(release_dir, tmp / "notebooks", ignore=shutil.ignore_patterns(".*"))
        for part in DATA + tuple(p for p in MEASURED if (root / p).exists()):
            src, dst = root / part, tmp / part
            if src.is_dir():
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", ".*"))
            else:
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        for name in ("requirements.txt", "requirements-nodeps.txt"):
            shutil.copy2(root / name, tmp / name)
        build_wheel(tmp / "wheels")
        (tmp / "START.md").write_text(start_md({p.stem for p in release_dir.glob("*.ipynb")}), encoding="utf-8")
        (tmp / "install.sh").write_text(INSTALL, encoding="utf-8")
        (tmp / "install.sh").chmod(0o755)
        files = {str(p.relative_to(tmp)): _sha256(p.read_bytes()) for p in sorted(tmp.rglob("*")) if p.is_file()}
        (tmp / config.BUNDLE_MARKER).write_text(json.dumps(
            {"name": NAME, "version": version, "built": time.strftime("%Y-%m-%d"), "files": files}, indent=1))
        problems = leaks(tmp)
        if problems:
            raise ValueError("the student bundle would hold the instructor's material:\n" + "\n".join(problems))
    archive = out / f"{top}.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(out / top, arcname=top, filter=_plain)
    with atomic_open(archive, "wb") as fh:
        fh.write(buf.getvalue())
    sha = _sha256(buf.getvalue())
    with atomic_open(archive.with_name(archive.name + ".sha256")) as fh:
        fh.write(f"{sha}  {archive.name}\n")
    return archive, sha


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Archive members owned by nobody in particular (a student unpacks them as themselves)."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
