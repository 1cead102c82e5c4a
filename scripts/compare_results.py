"""Compare two runs' results files number by number, timings aside.

    python scripts/compare_results.py BEFORE/results.json AFTER/results.json

Used to show that a change of structure changed no result: every number (and every string) in
the two files must be equal, except values whose key has a word naming a timing (latency, ms,
seconds, time, p50, throughput, load), a path or a date. Prints each difference with its JSON path and exits 1 if any.
"""
from __future__ import annotations

import json
import math
import re
import sys

VOLATILE = {"latency", "ms", "s", "seconds", "elapsed", "time", "timings", "throughput", "load", "loadavg", "path",
            "dir", "folder", "date", "machine", "when", "p50", "p95", "per", "sec", "speed", "pid", "url", "port"}
# inside prose: a duration ("384 ms", "63.08 s", "[65.02, 212.19]" after one) or a speed ratio ("5.6x")
TIMING = re.compile(r"\d[\d.]* vs \d[\d.]* ?ms\b|\d[\d,.]*\s?(?:ms|s)\b|\[\d[\d,. ]*\](?=,? (?:extractive|gpt|\d))|\d[\d.]*x\b")


def leaves(obj, path: str = ""):
    """``(json path, value)`` for every scalar in a JSON tree."""
    if isinstance(obj, dict):
        for key in sorted(obj):
            yield from leaves(obj[key], f"{path}.{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from leaves(value, f"{path}[{i}]")
    else:
        yield path, obj


def volatile(path: str) -> bool:
    """A key on the path names a timing, a path or a date: not a result."""
    keys = [part for part in re.split(r"[.\[\]]", path) if part and not part.isdigit()]
    return any(word in VOLATILE for key in keys for word in re.split(r"[^a-z0-9]+", key.lower()))


def same(a, b) -> bool:
    """Equal values; floats equal to 12 significant digits (JSON round trips); in strings, durations and
    speed ratios are masked, and a path to a file compares by its name."""
    if isinstance(a, str) and isinstance(b, str):
        if "/" in a and "/" in b and " " not in a + b:
            return a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]
        return TIMING.sub("#", a) == TIMING.sub("#", b)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) or (math.isnan(a) and math.isnan(b))
    return a == b


def compare(before: dict, after: dict) -> tuple[list[str], int]:
    """The differences (one line each) and how many result values were compared."""
    a, b = dict(leaves(before)), dict(leaves(after))
    diffs, compared = [], 0
    for path in sorted(set(a) | set(b)):
        if volatile(path):
            continue
        if path not in a or path not in b:
            diffs.append(f"{path}: only in {'after' if path in b else 'before'}")
            continue
        compared += 1
        if not same(a[path], b[path]):
            diffs.append(f"{path}: {a[path]!r} -> {b[path]!r}")
    return diffs, compared


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[1])
        return 2
    with open(argv[0], encoding="utf-8") as fa, open(argv[1], encoding="utf-8") as fb:
        diffs, compared = compare(json.load(fa), json.load(fb))
    for line in diffs:
        print(line)
    print(f"{compared} result values compared (timings, paths and dates aside): {len(diffs)} differ")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
