"""A cold `raglab ask` for a question never asked before, on the full docs, against the path of the last
release in the same run.

Each ask is a new process (`python -m raglab ask QUESTION --profile full`), timed from start to exit; the
question is a numbered variant of a dev question, so no cache holds its vector. Today's path embeds it with
the packaged MiniLM in plain torch (``raglab.infra.minilm``) and hashes the injection detector's n-grams with
``mmh3``; the last release's path imported sentence-transformers (and transformers) to embed and
scikit-learn to hash. That path is measured by the same command with those three imported first and the
model loaded through sentence-transformers, which is what it cost (the answers are the same: the vectors
and the features are identical, as tests/stages/test_minilm.py and test_injection_detector.py check).
The two paths alternate, so the page cache favours neither. Target: at most 3 s.

    python bench/cold_ask.py [--asks 5]
"""
from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from raglab.evaluation.golden import golden_file, load_golden

ROOT = Path(__file__).resolve().parents[1]
EARLIER = ("import sys, sentence_transformers, sklearn.feature_extraction.text; "
           "import raglab.infra.embedder as e; e.Embedder.model.fget(e.Embedder()); "   # as the last release loaded it
           "from raglab.surfaces.cli import main; sys.exit(main(sys.argv[1:]))")


def one(question: str, earlier: bool) -> float:
    cmd = ([sys.executable, "-c", EARLIER] if earlier else [sys.executable, "-m", "raglab"]) + [
        "ask", question, "--profile", "full"]
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed ({done.returncode}): {done.stderr[-800:]}")
    return time.perf_counter() - t


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--asks", type=int, default=5, help="cold asks on each path (default 5)")
    args = p.parse_args()
    questions = [q.question for q in load_golden(golden_file("python-docs", "full"), None, split="dev")]
    rng = random.Random(20261203)
    times = {"today": [], "last release": []}
    for i in range(args.asks):
        for path in ("today", "last release"):
            q = f"{rng.choice(questions).rstrip('?')} (cold ask {rng.randrange(10**9)})?"
            times[path].append(one(q, path == "last release"))
    for path, ts in times.items():
        print(f"{path:13} median {statistics.median(ts):.2f} s, max {max(ts):.2f} s over {len(ts)} cold asks")
    ratio = statistics.median(times["today"]) / statistics.median(times["last release"])
    print(f"today / last release: {ratio:.2f}x (target: today at most 3 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
