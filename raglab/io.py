"""Atomic file writes: write to a temporary name in the same folder, then rename."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, TextIO


def _umask() -> int:
    """The process umask, read without changing it (os.umask would, for every thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[TextIO]:
    """Open a temporary file beside ``path``; on success it replaces ``path``, on error it vanishes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.chmod(tmp, 0o666 & ~_umask())     # the permissions a plain open() would give, not mkstemp's 0600
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: str | Path, records: Iterable[dict]) -> int:
    """Write one JSON object a line, atomically; returns the number of lines."""
    n = 0
    with atomic_open(path) as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a JSONL file; a bad line is an error naming the file and line."""
    records = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    return records


def crash_point(name: str) -> None:
    """Fault injection for the crash tests: with ``RAGLAB_CRASH_AT=name`` (or ``name:N`` for the N-th
    time this point is reached) the process kills itself with SIGKILL here. Inert otherwise."""
    want = os.environ.get("RAGLAB_CRASH_AT")
    if not want or want.split(":")[0] != name:
        return
    _CRASH_COUNTS[name] = _CRASH_COUNTS.get(name, 0) + 1
    if _CRASH_COUNTS[name] >= int(want.split(":")[1] if ":" in want else 1):
        os.kill(os.getpid(), signal.SIGKILL)


_CRASH_COUNTS: dict[str, int] = {}


def replace_dir(src: Path, dest: Path) -> None:
    """Move folder ``src`` to ``dest``; an old ``dest`` is set aside first and removed after."""
    old = dest.with_name(dest.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    src.rename(dest)
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_dir(dest: str | Path) -> Iterator[Path]:
    """Yield a temporary folder beside ``dest``; on success it becomes ``dest``, on error it vanishes."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in dest.parent.glob(f".{dest.name}.*"):  # left by a process that was killed mid-write
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        yield tmp
        replace_dir(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
