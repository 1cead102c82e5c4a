"""The assistant's JSONL traces: owner-only files, rotated at a size limit, read back across rotations.

A trace holds the prompt, and so the text of restricted chunks: each file is created with mode 0600
(never chmod-ed afterwards) in a folder created with mode 0700. When appending a line would take
``asks.jsonl`` past ``$RAGLAB_TRACE_MAX_BYTES`` (default 10 MB) it becomes ``asks.jsonl.1``, the
older ones move up (``.1`` -> ``.2`` ...) and at most ``$RAGLAB_TRACE_KEEP`` (default 5) rotated files
are kept. Writers share the file's lock (``raglab.base.files.dir_lock``), within a process and across
the worker processes of ``raglab serve --workers``.
"""
from __future__ import annotations

import json
import logging
import os
import re
import threading
from pathlib import Path

from raglab.base import config
from raglab.base.files import dir_lock, read_jsonl

MAX_BYTES_ENV, KEEP_ENV = "RAGLAB_TRACE_MAX_BYTES", "RAGLAB_TRACE_KEEP"
DEFAULT_MAX_BYTES, DEFAULT_KEEP = 10_000_000, 5
_LOCK = threading.Lock()


def _setting(name: str, default: int, minimum: int) -> int:
    """An integer setting from the environment; a bad value is an error naming it."""
    raw = config.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value}: must be at least {minimum}")
    return value


def max_bytes() -> int:
    """The size at which a trace file is rotated: ``$RAGLAB_TRACE_MAX_BYTES``, else 10 MB."""
    return _setting(MAX_BYTES_ENV, DEFAULT_MAX_BYTES, 1)


def keep() -> int:
    """How many rotated files are kept: ``$RAGLAB_TRACE_KEEP``, else 5."""
    return _setting(KEEP_ENV, DEFAULT_KEEP, 1)


def rotate(path: Path, n_keep: int) -> None:
    """``path`` -> ``path.1``, ``path.1`` -> ``path.2`` ..., the oldest beyond ``n_keep`` deleted."""
    Path(f"{path}.{n_keep}").unlink(missing_ok=True)
    for i in range(n_keep - 1, 0, -1):
        older = Path(f"{path}.{i}")
        if older.exists():
            older.replace(f"{path}.{i + 1}")
    path.replace(f"{path}.1")


def _open_private(path: Path) -> int:
    """Open ``path`` for appending, creating it with mode 0600 (a file left by an older version is narrowed)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    if os.fstat(fd).st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def append(path: str | Path, record: dict) -> None:
    """Append ``record`` as one JSON line, rotating first if the line would pass the size limit."""
    path = Path(path)
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    limit, n_keep = max_bytes(), keep()
    with _LOCK:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with dir_lock(path, timeout=-1):    # the worker processes of raglab serve --workers share the file
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                size = 0
            if size and size + len(line) > limit:
                rotate(path, n_keep)
            fd = _open_private(path)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)


def files(path: str | Path) -> list[Path]:
    """The trace file and its rotated predecessors that exist, oldest first.

    ``asks.jsonl.3, asks.jsonl.2, asks.jsonl.1, asks.jsonl``
    """
    path = Path(path)
    pattern = re.compile(re.escape(path.name) + r"\.(\d+)")
    rotated = [(int(m.group(1)), p) for p in path.parent.glob(path.name + ".*")
               if (m := pattern.fullmatch(p.name))] if path.parent.is_dir() else []
    return [p for _, p in sorted(rotated, reverse=True)] + ([path] if path.exists() else [])


def read(path: str | Path) -> list[dict]:
    """Every trace record of ``path`` and its rotated files, oldest first."""

    return [record for p in files(path) for record in read_jsonl(p)]


class Tracer:
    """Appends an assistant's records to one trace file (``append``); a failed write is logged once and never
    fails the answer. Hand it to ``Assistant(trace=Tracer(path))``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._warned = False

    def __call__(self, record: dict) -> None:
        try:
            append(self.path, record)
        except (OSError, ValueError, TypeError) as exc:
            if not self._warned:
                self._warned = True
                logging.getLogger("raglab.traces").warning(
                    "raglab: cannot write the trace %s (%s); answers go on without traces", self.path, exc)
