"""How long the README's first command takes, as it measured itself: ``setup.sh`` writes its own seconds to
``build/setup.json`` (``python -m raglab.course.timings setup SECONDS ENVIRONMENT PIP_CACHE``); ``raglab workbook``
writes each notebook's seconds and the whole run's, with the set-up just before it, to ``build/timings.json``; a
copy committed as ``docs/timings.json`` fills the README's table (``python -m raglab.course.timings`` copies the
last run's and rewrites the table)."""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

from raglab.base import config
from raglab.base.files import atomic_open
from raglab.course.blocks import replace_block

FILE = "timings.json"
SETUP = "setup.json"
CHAINED = 120.0      # a set-up that ended at most this many seconds before the workbook began is the same command
COMMITTED = config.PROJECT_ROOT / "docs" / FILE
# each notebook's first run from a new install of the student bundle (scripts/bundle_timings.py); the bundle ships it
BUNDLE = config.PROJECT_ROOT / "config" / "bundle_timings.json"
README = config.PROJECT_ROOT / "README.md"
BEGIN = "<!-- timings: made by raglab.course.timings from docs/timings.json -->"
END = "<!-- end of the timings -->"


def record_setup(out: Path, seconds: float, environment: str, pip_cache: str) -> Path:
    """Write ``setup.sh``'s own time (``out/setup.json``): its seconds, whether the environment was ``new`` (the
    packages not yet installed) or ``installed``, and whether pip's cache was ``empty`` or ``filled`` when it
    began (an empty one downloads every package and builds the model server from source)."""
    data = {"seconds": round(float(seconds), 1), "environment": environment, "pip_cache": pip_cache,
            "ended": time.time()}
    Path(out).mkdir(parents=True, exist_ok=True)
    with atomic_open(Path(out) / SETUP) as fh:
        json.dump(data, fh, indent=2)
    return Path(out) / SETUP


def setup_before(out: Path, began: float) -> dict | None:
    """The set-up that ran just before a workbook that began at ``began`` (epoch seconds), as in
    ``./setup.sh && raglab workbook``; ``None`` if there was none or it ended earlier than that."""
    path = Path(out) / SETUP
    if not path.exists():
        return None
    setup = json.loads(path.read_text())
    return setup if 0 <= began - setup["ended"] <= CHAINED else None


def record(out: Path, seconds: dict[str, float], total: float, caches: str | None = None,
           setup: dict | None = None) -> Path:
    """Write one run's timings (``out/timings.json``): the machine, the profile, how the caches stood when the
    run began (``cold``: an empty working folder, so every model, index and embedding was built; ``warm``), each
    notebook, the whole run, and the set-up that ran just before it, if one did."""
    data = {"profile": config.profile(), "cores": os.cpu_count(), "python": platform.python_version(),
            **({"caches": caches} if caches else {}),
            "notebooks": {k: round(v, 1) for k, v in seconds.items()}, "total_s": round(total, 1),
            **({"setup": {k: setup[k] for k in ("seconds", "environment", "pip_cache")}} if setup else {})}
    with atomic_open(Path(out) / FILE) as fh:
        json.dump(data, fh, indent=2)
    return Path(out) / FILE


def load(path: Path = COMMITTED) -> dict:
    """A timings file, or ``{}`` when there is none (a bundle without the committed copy)."""
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}


def minutes(seconds: float) -> str:
    """Seconds as a reader says them.

    >>> minutes(42.04), minutes(161), minutes(3600)
    ('42 s', '2 min 41 s', '60 min 0 s')
    """
    s = round(seconds)
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60} s"


def table(t: dict) -> str:
    """The README's table: the set-up (when the run recorded one), each notebook, the whole main job, and both.

    >>> print(table({"cores": 2, "profile": "small", "caches": "cold", "notebooks": {"00_setup": 3.2}, "total_s": 70,
    ...              "setup": {"seconds": 200, "environment": "new", "pip_cache": "empty"}}))
    | step (small profile, 2 cores, cold caches) | time |
    | --- | --- |
    | `./setup.sh`: a new environment, pip's cache empty (every package downloaded, the model server built) | 3 min 20 s |
    | notebook `00_setup` | 3 s |
    | `raglab workbook`: every notebook, then the rubric, the report and the scoreboard | 1 min 10 s |
    | **`./setup.sh && raglab workbook`** | **4 min 30 s** |
    """
    setup = t.get("setup")
    caches = f", {t['caches']} caches" if t.get("caches") else ""
    rows = [f"| step ({t['profile']} profile, {t['cores']} cores{caches}) | time |", "| --- | --- |"]
    if setup:
        rows.append(f"| `./setup.sh`: {_setup_words(setup)} | {minutes(setup['seconds'])} |")
    rows += [f"| notebook `{name}` | {minutes(s)} |" for name, s in t["notebooks"].items()]
    rows.append(f"| `raglab workbook`: every notebook, then the rubric, the report and the scoreboard | "
                f"{minutes(t['total_s'])} |")
    if setup:
        rows.append(f"| **`./setup.sh && raglab workbook`** | **{minutes(setup['seconds'] + t['total_s'])}** |")
    return "\n".join(rows)


def _setup_words(setup: dict) -> str:
    environment = "a new environment" if setup["environment"] == "new" else "the packages already installed"
    cache = ("pip's cache empty (every package downloaded, the model server built)" if setup["pip_cache"] == "empty"
             else "pip's cache filled")
    return f"{environment}, {cache}"


def update(run: Path = Path("build") / FILE, readme: Path = README) -> None:
    """Commit a run's timings: copy them to ``docs/timings.json`` and rewrite the README's table."""
    t = load(run)
    COMMITTED.parent.mkdir(exist_ok=True)
    COMMITTED.write_text(json.dumps(t, indent=2) + "\n")
    readme.write_text(replace_block(readme.read_text(), BEGIN, END, table(t)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["setup"]:                 # setup.sh's last step: python -m raglab.course.timings setup ...
        seconds, environment, pip_cache = sys.argv[2:5]
        record_setup(Path("build"), float(seconds), environment, pip_cache)
    else:
        update()
        print(f"{COMMITTED} and the README's table now hold {Path('build') / FILE}'s timings")
