"""How long the main job takes, as the main job measured it: ``raglab workbook`` writes each notebook's
seconds and the whole run's to ``build/timings.json``; a copy committed as ``docs/timings.json`` fills the
README's table (``python -m raglab.course.timings`` copies the last run's and rewrites the table)."""
from __future__ import annotations

import json
import os
import platform
from pathlib import Path

from raglab.base import config
from raglab.base.files import atomic_open
from raglab.course.blocks import replace_block

FILE = "timings.json"
COMMITTED = config.PROJECT_ROOT / "docs" / FILE
README = config.PROJECT_ROOT / "README.md"
BEGIN = "<!-- timings: made by raglab.course.timings from docs/timings.json -->"
END = "<!-- end of the timings -->"


def record(out: Path, seconds: dict[str, float], total: float, caches: str | None = None) -> Path:
    """Write one run's timings (``out/timings.json``): the machine, the profile, how the caches stood when the
    run began (``cold``: an empty working folder, so every model, index and embedding was built; ``warm``), each
    notebook, the whole run."""
    data = {"profile": config.profile(), "cores": os.cpu_count(), "python": platform.python_version(),
            **({"caches": caches} if caches else {}),
            "notebooks": {k: round(v, 1) for k, v in seconds.items()}, "total_s": round(total, 1)}
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
    """The README's table: each notebook and the whole main job, as measured.

    >>> print(table({"cores": 2, "profile": "small", "caches": "cold", "notebooks": {"00_setup": 3.2}, "total_s": 70}))
    | step (small profile, 2 cores, cold caches) | time |
    | --- | --- |
    | notebook `00_setup` | 3 s |
    | `raglab workbook`: every notebook, then the rubric, the report and the scoreboard | 1 min 10 s |
    """
    rows = [f"| notebook `{name}` | {minutes(s)} |" for name, s in t["notebooks"].items()]
    caches = f", {t['caches']} caches" if t.get("caches") else ""
    return "\n".join([f"| step ({t['profile']} profile, {t['cores']} cores{caches}) | time |", "| --- | --- |", *rows,
                      f"| `raglab workbook`: every notebook, then the rubric, the report and the scoreboard | "
                      f"{minutes(t['total_s'])} |"])


def update(run: Path = Path("build") / FILE, readme: Path = README) -> None:
    """Commit a run's timings: copy them to ``docs/timings.json`` and rewrite the README's table."""
    t = load(run)
    COMMITTED.parent.mkdir(exist_ok=True)
    COMMITTED.write_text(json.dumps(t, indent=2) + "\n")
    readme.write_text(replace_block(readme.read_text(), BEGIN, END, table(t)))


if __name__ == "__main__":
    update()
    print(f"{COMMITTED} and the README's table now hold {Path('build') / FILE}'s timings")
