"""A new worker's first answers: the injection detector's scores judged afresh (the last release) or read
from the shared cache another process filled (today), in the same run.

A served worker is a new process: its in-process memo of the detector's flags starts empty, so its first
answers judged every sentence of their sources again (``InjectionDetector.probabilities``: the n-gram hashing
and two regressions), while later answers over the same sentences cost a look-up. Today the scores are kept
in the embedding cache under the detector's fingerprint, so a worker reads what another worker, or an
earlier run, judged. Each row is a fresh process that loads the help-center assistant, warms it as
``raglab serve`` does, and times its first ``--questions`` distinct questions (then the same questions again,
the in-process figure for comparison). The last release's path is the same process with ``scores`` computing
every time; today's runs after one process has judged them. The two paths alternate ``--rounds`` times.

    python bench/worker_first.py [--questions 12] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys, time
from raglab.infra.assemble import build_assistant
from raglab.guards.detector import InjectionDetector
from raglab.surfaces.web.app import warm
if sys.argv[1] == "earlier":
    InjectionDetector.scores = InjectionDetector._scores          # every sentence judged afresh, nothing kept
questions = json.loads(sys.argv[2])
a = build_assistant("helpcenter", "small", generator="extractive")
warm(a)
times = {}
for when in ("first", "again"):
    ms = []
    for q in questions:
        t = time.perf_counter(); a.ask(q); ms.append((time.perf_counter() - t) * 1000)
    times[when] = ms
print(json.dumps(times))
"""


def child(path: str, questions: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, path, json.dumps(questions)], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"worker ({path}) failed: {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=int, default=12)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    golden = [json.loads(line)["question"] for line in (ROOT / "evals" / "helpcenter_golden.jsonl").read_text().splitlines()
              if line.strip()]
    questions = golden[: args.questions]
    child("today", questions)                       # one process judges them (and fills the other caches)
    runs = {"earlier": {"first": [], "again": []}, "today": {"first": [], "again": []}}
    for _ in range(args.rounds):
        for path in ("earlier", "today"):
            for when, ms in child(path, questions).items():
                runs[path][when] += ms
    print(f"{args.questions} help-center questions, {args.rounds} fresh processes a path, alternating")
    print("| path | first answers p50 ms | p95 ms | the same again p50 ms | p95 ms |")
    print("| --- | --- | --- | --- | --- |")
    for path, label in (("earlier", "last release: judged afresh"), ("today", "today: scores from the shared cache")):
        r = runs[path]
        print(f"| {label} | {statistics.median(r['first']):.1f} | {pct(r['first'], 0.95):.1f} | "
              f"{statistics.median(r['again']):.1f} | {pct(r['again'], 0.95):.1f} |")
    e, t = runs["earlier"]["first"], runs["today"]["first"]
    print(f"first answers, today against the last release: p50 {statistics.median(t) / statistics.median(e):.2f}x, "
          f"p95 {pct(t, 0.95) / pct(e, 0.95):.2f}x")


if __name__ == "__main__":
    main()
