"""Every setting raglab reads from the environment, in one place, with its default.

Modules never read ``os.environ`` themselves: they call ``config.get(NAME)`` (or one of the helpers
below), so this table is the whole list. The README prints the same table.

>>> get("RAGLAB_QUEUE_SIZE")
'64'
>>> sorted(SETTINGS)[:2]
['LLM_API_KEY', 'LLM_BASE_URL']
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, default (None: unset) and what it does."""

    name: str
    default: str | None
    help: str


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("RAGLAB_PROFILE", "small", "corpus size everywhere: small (24 pages + help center) or full (497 pages)"),
    Setting("RAGLAB_HOME", None, "the course folder holding data/, evals/, config/ and notebooks/ (default: this checkout; installed from the student bundle, the unpacked bundle the current folder is in, else the one its install.sh ran in)"),
    Setting("RAGLAB_CORPUS", None, "the corpus every notebook runs on: a folder of your own `.md`/`.txt` pages (`raglab workbook --corpus DIR` sets it; in Jupyter, `settings.toml` beside the notebooks, which notebook 00 writes); default: the Python docs"),
    Setting("RAGLAB_GOLDEN", None, "a golden set (JSONL) used instead of the one a bundled corpus ships (`load_golden(\"python-docs\")`, `raglab eval`, and in the notebooks before a `golden.jsonl` beside them): a student's own set, checked with `raglab golden check FILE`"),
    Setting("RAGLAB_WORKDIR", None, "extracted corpora, caches, indexes, traces (default: .raglab/ in the project)"),
    Setting("RAGLAB_DATA", None, "the bundled data folder (default: data/ in the project)"),
    Setting("RAGLAB_ARTIFACTS", None, "where notebooks save milestone artifacts (default: build/artifacts)"),
    Setting("RAGLAB_EMBED_PRECISION", "float32", "embedding precision: float32 (the default: the numbers the notebooks print on any CPU, up to its last bits), bfloat16 (2 to 3 times faster on a CPU with native bfloat16, AVX512-BF16 or AMX, but other numbers), auto (bfloat16 where native, else float32), or float64 (the same vectors on every CPU, about twice float32's time)"),
    Setting("RAGLAB_DOCS_URL", None, "archive URL for `raglab corpus fetch` (default: the official docs archive)"),
    Setting("RAGLAB_DATABASE_URL", None, "PostgreSQL + pgvector URL (default: an embedded server in the workdir)"),
    Setting("RAGLAB_TOKENS", None, "bearer tokens file for `raglab serve` (default: config/tokens.json)"),
    Setting("RAGLAB_HOSTED_BASE_URL", None, "a hosted OpenAI-compatible endpoint measured by the cost experiment"),
    Setting("RAGLAB_QUEUE_SIZE", "64", "`raglab serve`: questions that may wait for the worker; one more gets 503 + Retry-After"),
    Setting("RAGLAB_SERVE", None, "set by `raglab serve --workers N` for its worker processes: the service's options (JSON); not for users"),
    Setting("RAGLAB_DEADLINE_S", "30", "`raglab serve`: seconds a request may take, model call and retries included (then 503)"),
    Setting("RAGLAB_TRACE_MAX_BYTES", "10000000", "size at which a trace file (owner-only) is rotated"),
    Setting("RAGLAB_TRACE_KEEP", "5", "rotated trace files kept"),
    Setting("RAGLAB_RECORDED", None, "a folder of recorded local-model experiments (`raglab grade` sets it: notebook 08 reads the instructor's measurements instead of running the model for every student)"),
    Setting("RAGLAB_CRASH_AT", None, "fault injection for the crash tests: kill the process at this write point"),
    Setting("RAGLAB_MODEL_READS", "chunks", "what a model is sent: chunks (the top sources, whole) or sentences (the ones the extractive selection chose, best first, with their numbers; a selection that refuses calls no model)"),
    Setting("LLM_BASE_URL", None, "OpenAI-compatible model server; set, answers use it (default: extractive, offline)"),
    Setting("LLM_MODEL", "llama3.2", "model name sent to LLM_BASE_URL"),
    Setting("LLM_API_KEY", None, "API key for LLM_BASE_URL (never written in code)"),
)}


def get(name: str) -> str | None:
    """The value of setting ``name`` from the environment, else its default (an empty value counts as unset)."""
    return os.environ.get(name) or SETTINGS[name].default


def table() -> str:
    """The settings as a Markdown table (the README's)."""
    rows = [f"| `{s.name}` | {s.default or '(unset)'} | {s.help} |" for s in SETTINGS.values()]
    return "\n".join(["| setting | default | what |", "| --- | --- | --- |", *rows])


PROFILES = ("small", "full")
# The student bundle's root holds this file (``raglab release`` writes it beside data/, evals/, notebooks/).
BUNDLE_MARKER = "raglab-course.json"


# ``install.sh`` writes the unpacked bundle's folder here, inside the environment it installs into, so that a
# notebook or a command run from any folder finds the course it came with.
INSTALLED_HOME = Path(sys.prefix) / "raglab-course-home.txt"


def _course_home() -> Path:
    """The folder holding the course's data/, evals/, config/ and notebooks/: ``$RAGLAB_HOME``; else the
    checkout raglab runs from (an editable install); else, installed from the student bundle's wheel, the
    unpacked bundle that holds the current folder (found by its ``raglab-course.json``), or the one
    ``install.sh`` installed from (``INSTALLED_HOME``)."""
    if get("RAGLAB_HOME"):
        return Path(get("RAGLAB_HOME")).resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "data").is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / BUNDLE_MARKER).is_file():
            return folder
    if INSTALLED_HOME.is_file():
        home = Path(INSTALLED_HOME.read_text(encoding="utf-8").strip())
        if (home / BUNDLE_MARKER).is_file():
            return home
    return checkout     # nothing found: paths under it name what is missing when they are read


PROJECT_ROOT = _course_home()


def data_dir() -> Path:
    """The folder holding the bundled corpora (``data/`` in the project)."""
    return Path(get("RAGLAB_DATA") or PROJECT_ROOT / "data")


def work_dir() -> Path:
    """The working folder for extracted corpora, caches and indexes (created on use)."""
    path = Path(get("RAGLAB_WORKDIR") or PROJECT_ROOT / ".raglab")
    path.mkdir(parents=True, exist_ok=True)
    return path


def profile(name: str | None = None) -> str:
    """The profile in force: ``name`` if given, else ``$RAGLAB_PROFILE``, else ``small``.

    >>> profile("full")
    'full'
    """
    chosen = (name or get("RAGLAB_PROFILE")).strip().lower()
    if chosen not in PROFILES:
        raise ValueError(f"unknown profile {chosen!r} (RAGLAB_PROFILE): choose one of {', '.join(PROFILES)}")
    return chosen


def small_profile_pages() -> list[str]:
    """The Python-docs pages of the small profile, from ``data/profiles/small.txt``."""
    path = data_dir() / "profiles" / "small.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def artifacts_dir() -> Path:
    """Where notebooks save milestone artifacts: ``$RAGLAB_ARTIFACTS`` or ``build/artifacts``."""
    return Path(get("RAGLAB_ARTIFACTS") or PROJECT_ROOT / "build" / "artifacts")


def thread_env(processes: int) -> dict[str, str]:
    """The environment that gives each of ``processes`` processes sharing this machine its share of the cores
    for torch's and the tokenizers' threads (one each at least), so that they do not oversubscribe it."""
    threads = str(max(1, (os.cpu_count() or 1) // processes))
    return {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "TOKENIZERS_PARALLELISM": "false"}
