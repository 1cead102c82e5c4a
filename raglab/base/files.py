"""Atomic writes: a file or a folder is written under a temporary name, synced, then renamed into place.

A folder is replaced with two renames (the old one set aside as ``NAME.old``, the new one moved
in) while its write lock is held; a writer killed between the two leaves only ``NAME.old``, which
``recover_dir`` (run by the next writer and by readers) puts back. Two writers of one folder take
turns: the second waits for the lock, then fails naming the holder's process id.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, TextIO

from raglab.base import config
LOCK_WAIT = 60.0     # seconds a writer waits for another writer of the same folder


class Busy(RuntimeError):
    """Another process holds a folder's write lock for longer than the caller would wait."""


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
        crash_point("file-written")
        os.replace(tmp, path)
        fsync_dir(path.parent)
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


def jsonl_records(path: str | Path, problems: list[tuple[str, str]] | None = None) -> Iterator[tuple[str, dict]]:
    """Yield ``(where, record)`` for each non-blank line of a JSONL file, ``where`` being ``file:line``.

    The one JSONL reader. A line that is not JSON is a ``ValueError`` naming the file and line, or,
    given a ``problems`` list, is skipped and noted there as ``(where, message)``.
    """
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                if problems is None:
                    raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
                problems.append((where, f"not valid JSON ({exc.msg})"))
                continue
            yield where, record


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a JSONL file; a bad line is an error naming the file and line (``jsonl_records``)."""
    return [record for _, record in jsonl_records(path)]


def crash_point(name: str) -> None:
    """Fault injection for the crash tests: with ``RAGLAB_CRASH_AT=name`` (or ``name:N`` for the N-th
    time this point is reached) the process kills itself with SIGKILL here. Inert otherwise."""
    want = config.get("RAGLAB_CRASH_AT")
    if not want or want.split(":")[0] != name:
        return
    _CRASH_COUNTS[name] = _CRASH_COUNTS.get(name, 0) + 1
    if _CRASH_COUNTS[name] >= int(want.split(":")[1] if ":" in want else 1):
        os.kill(os.getpid(), signal.SIGKILL)


_CRASH_COUNTS: dict[str, int] = {}


def fsync_dir(path: str | Path) -> None:
    """Flush a folder's entries (names created, renamed or removed in it) to disk."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: str | Path) -> None:
    """Flush every file under ``root``, then every folder, ``root`` last."""
    for dirpath, _, filenames in os.walk(root):
        for path in (os.path.join(dirpath, name) for name in filenames):
            if os.path.islink(path):       # a link's target is not ours to sync; the link is the folder's entry
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    for dirpath, _, _ in os.walk(root, topdown=False):
        fsync_dir(dirpath)


def lock_path(dest: str | Path) -> Path:
    """The lock file of ``dest`` (a folder or a file): kept in the temporary folder, so that ``dest``'s
    parent holds nothing but finished files and folders, and named after ``dest``'s absolute path."""
    dest = Path(dest)
    where = dest.parent.resolve() / dest.name
    digest = hashlib.sha256(str(where).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"raglab-locks-{os.getuid() if hasattr(os, 'getuid') else 0}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{dest.name}-{digest}.lock"


def _holder(lock: Path) -> str:
    """The process id the lock's holder wrote beside the lock (or 'unknown')."""
    try:
        return Path(f"{lock}.pid").read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def _write_pid(lock: Path) -> None:
    """Record this process as the holder of ``lock`` (a temporary name, then a rename)."""
    tmp = Path(f"{lock}.pid.{os.getpid()}")
    tmp.write_text(str(os.getpid()))
    os.replace(tmp, f"{lock}.pid")


@contextlib.contextmanager
def dir_lock(dest: str | Path, timeout: float = LOCK_WAIT) -> Iterator[Path]:
    """Hold ``dest``'s write lock, across threads and processes: the one file lock (a folder's for
    ``atomic_dir``; a trace file's, a recording's). Wait up to ``timeout`` seconds (for ever when it is
    negative), then raise ``Busy`` naming the holder."""
    from filelock import FileLock, Timeout

    path = lock_path(dest)
    lock = FileLock(str(path), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise Busy(f"{dest} is being written by process {_holder(path)}: gave up after waiting "
                   f"{timeout:g} s for its lock ({path})") from None
    try:
        _write_pid(path)
        yield path
    finally:
        lock.release()


def _is_temp_of(name: str, dest_name: str) -> bool:
    """Whether ``name`` is a temporary folder of ``dest_name`` (``.NAME.tmp-XXXXXXXX``; older
    versions wrote ``.NAME.XXXXXXXX``), and not one of a folder whose name merely starts alike.

    >>> _is_temp_of(".docs.tmp-ab_12xyz", "docs"), _is_temp_of(".docs.v2.tmp-ab_12xyz", "docs")
    (True, False)
    """
    prefix = f".{dest_name}."
    return name.startswith(prefix) and re.fullmatch(r"(tmp-)?[A-Za-z0-9_]{8}", name[len(prefix):]) is not None


def _old(dest: Path) -> Path:
    return dest.with_name(dest.name + ".old")


def _recover(dest: Path) -> bool:
    """With the lock held: put ``NAME.old`` back if ``NAME`` is missing, else drop it; True if put back."""
    old = _old(dest)
    if not old.is_dir():
        return False
    if dest.exists():
        shutil.rmtree(old)               # the new folder was renamed in before the old one was removed
        return False
    old.rename(dest)                     # the writer was killed between its two renames
    fsync_dir(dest.parent)
    return True


def recover_dir(dest: str | Path, timeout: float = LOCK_WAIT) -> bool:
    """Put back the previous ``dest`` if a writer was killed between its two renames; True if it did."""
    dest = Path(dest)
    if dest.exists() or not _old(dest).is_dir():
        return False
    with dir_lock(dest, timeout):
        return _recover(dest)


def replace_dir(src: Path, dest: Path) -> None:
    """Move folder ``src`` to ``dest`` (call with ``dest``'s lock held): ``src`` is synced, the old
    ``dest`` set aside as ``NAME.old``, ``src`` renamed in, then the old one removed."""
    old = _old(dest)
    shutil.rmtree(old, ignore_errors=True)
    fsync_tree(src)
    if dest.exists():
        dest.rename(old)
        fsync_dir(dest.parent)
        crash_point("dir-set-aside")     # only NAME.old exists now: recover_dir puts it back
    src.rename(dest)
    fsync_dir(dest.parent)
    crash_point("dir-renamed")
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_dir(dest: str | Path, timeout: float = LOCK_WAIT) -> Iterator[Path]:
    """Yield a temporary folder beside ``dest``; on success it replaces ``dest``, on error it vanishes.

    The folder's lock is held throughout: another writer of ``dest`` waits up to ``timeout``
    seconds, then gets ``Busy``. A previous writer's leftovers are cleaned up first (and a
    ``dest`` it left set aside is put back)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dir_lock(dest, timeout):
        _recover(dest)
        for stale in dest.parent.iterdir():  # left by a writer that was killed mid-write
            if _is_temp_of(stale.name, dest.name):
                shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
        try:
            yield tmp
            crash_point("dir-written")
            replace_dir(tmp, dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
