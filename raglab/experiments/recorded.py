"""Measurements recorded once and read by every later run: how a class is graded without running the
local model for every student.

With ``$RAGLAB_RECORDED`` set to a folder (``raglab grade`` sets it for the notebooks it re-runs), an
experiment whose measurements are the instructor's, not a student's work (``cost``, which runs the local model,
and ``longcontext``, which times whole documents against retrieval), looks for a recording made with the same
parameters;
the first run measures and records it, every later run reads it. The file's lock (``raglab.base.files.dir_lock``) makes a second
grader wait for the first one's measurement instead of starting the model too. Without the setting
nothing is recorded and every run measures.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable

from raglab.base import config
from raglab.base.files import atomic_open, dir_lock


def recording(name: str, params: dict) -> Path | None:
    """Where the recording of experiment ``name`` with ``params`` lives, or None without ``$RAGLAB_RECORDED``.

    >>> import os; os.environ["RAGLAB_RECORDED"] = "/tmp/rec"
    >>> recording("cost", {"n": 8}) == recording("cost", {"n": 8}), recording("cost", {"n": 8}) == recording("cost", {"n": 9})
    (True, False)
    >>> del os.environ["RAGLAB_RECORDED"]; recording("cost", {"n": 8}) is None
    True
    """
    folder = config.get("RAGLAB_RECORDED")
    if not folder:
        return None
    key = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return Path(folder) / f"{name}-{key}.json"


def recorded(name: str, params: dict, measure: Callable[[], dict]) -> dict:
    """``measure()``, or its recording (see the module docstring). A result read from a recording says so
    in ``result["recorded"]``: when and from which file."""
    path = recording(name, params)
    if path is None:
        return measure()
    path.parent.mkdir(parents=True, exist_ok=True)
    with dir_lock(path, timeout=-1):
        if not path.exists():
            result = measure()
            result["recorded"] = {"at": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "params": params}
            with atomic_open(path) as fh:     # numpy numbers as plain ones, as the results file keeps them
                json.dump(result, fh, default=lambda o: o.item() if hasattr(o, "item") else str(o))
        result = json.loads(path.read_text(encoding="utf-8"))
    result["recorded"]["file"] = path.name
    return result


def recorded_note(result: dict) -> list[str]:
    """The line an experiment's printout adds when its result was read from a recording (else nothing)."""
    r = result.get("recorded")
    return [f"recorded on {r['at']} and read back ({r['file']}): measured once, not in this run"] if r else []
