"""Where raglab keeps things, and which profile is in force.

One setting picks the profile everywhere (CLI, notebooks, tests)::

    RAGLAB_PROFILE=small   # a fixed subset of the Python docs (default)
    RAGLAB_PROFILE=full    # all 497 pages

Other settings: ``RAGLAB_WORKDIR`` (extracted corpora, caches, indexes; default
``.raglab/`` in the project) and ``RAGLAB_DATA`` (the bundled data folder).
"""
from __future__ import annotations

import os
from pathlib import Path

PROFILES = ("small", "full")
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def data_dir() -> Path:
    """The folder holding the bundled corpora (``data/`` in the project)."""
    return Path(os.environ.get("RAGLAB_DATA", PROJECT_ROOT / "data"))


def work_dir() -> Path:
    """The working folder for extracted corpora, caches and indexes (created on use)."""
    path = Path(os.environ.get("RAGLAB_WORKDIR", PROJECT_ROOT / ".raglab"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def profile(name: str | None = None) -> str:
    """The profile in force: ``name`` if given, else ``$RAGLAB_PROFILE``, else ``small``.

    >>> profile("full")
    'full'
    """
    chosen = (name or os.environ.get("RAGLAB_PROFILE") or "small").strip().lower()
    if chosen not in PROFILES:
        raise ValueError(f"unknown profile {chosen!r} (RAGLAB_PROFILE): choose one of {', '.join(PROFILES)}")
    return chosen


def small_profile_pages() -> list[str]:
    """The Python-docs pages of the small profile, from ``data/profiles/small.txt``."""
    path = data_dir() / "profiles" / "small.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
