"""The first question after start against the later ones, on the full docs: the default assistant
(no reranker: nothing is embedded on demand but the question) and the same assistant reranking
with the offline sentence reranker (which embeds the candidates' sentences on demand).

Each start is a fresh process, as `raglab serve` starts: the index is loaded, the embedding model is
loaded and run once (``raglab.surfaces.web.app.warm``, as the server does before it accepts requests), and the embedding cache is empty (a new
temporary file), so neither the question nor any sentence is cached. It then asks one dev question
(the first query) and five more (the later ones), timing `Assistant.retrieve` (retrieval, reranking
when on, and the evidence strength the refusal rule reads: what the issue's 300 ms target is about)
and, separately, the whole `Assistant.ask` (plus the extractive answer, which embeds the sources'
sentences to pick the one to quote, and the checks).

    RAGLAB_PROFILE=full python bench/first_query.py [--starts 8] [--reranker sentence]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from raglab.evaluation.statistics import percentile

CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
from raglab.book.assistant import Assistant
from raglab.infra.assemble import build_assistant
from raglab.infra.embedding_cache import EmbeddingCache
from raglab.evaluation.golden import load_golden
from raglab.infra.corpora import golden_path
from raglab.surfaces.web.app import embedders, warm

start, reranker = int(sys.argv[1]), sys.argv[2]
t0 = time.perf_counter()
a = build_assistant("python-docs", "full", reranker=None if reranker == "none" else reranker, build=False)
cache = EmbeddingCache(Path(tempfile.mkdtemp()) / "empty.sqlite")
for e in embedders(a):
    e.cache = cache
warm(a)   # as `raglab serve` does before it accepts requests
startup = time.perf_counter() - t0
questions = [q.question for q in load_golden(golden_path("python-docs", "full"), split="dev")]
asked = [questions[(start * 6 + i) % len(questions)] for i in range(6)]
times, asks = [], []
for q in asked:
    t = time.perf_counter()
    a.retrieve(q)
    times.append((time.perf_counter() - t) * 1000)
for q in asked:   # the answers: retrieval again (now cached question vector) plus the answer and checks
    a.retriever.embedder.cache = EmbeddingCache(Path(tempfile.mkdtemp()) / "empty.sqlite")
    t = time.perf_counter()
    a.ask(q)
    asks.append((time.perf_counter() - t) * 1000)
print(json.dumps({"startup_s": startup, "first_ms": times[0], "later_ms": times[1:], "ask_ms": asks}))
"""


def run(starts: int, reranker: str) -> dict:
    first, later, startup, asks = [], [], [], []
    for s in range(starts):
        out = subprocess.run([sys.executable, "-c", CHILD, str(s), reranker], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        first.append(r["first_ms"])
        later += r["later_ms"]
        startup.append(r["startup_s"])
        asks += r["ask_ms"]
    return {"reranker": reranker, "starts": starts,
            "first_ms": {"p50": percentile(first, 50), "p95": percentile(first, 95)},
            "later_ms": {"p50": percentile(later, 50), "p95": percentile(later, 95)},
            "ask_ms": {"p50": percentile(asks, 50), "p95": percentile(asks, 95)},
            "startup_s_p50": percentile(startup, 50)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--starts", type=int, default=8)
    p.add_argument("--reranker", action="append", help="none (the default) and/or sentence; repeatable")
    args = p.parse_args()
    with open("/proc/loadavg") as fh:
        print("load average before:", fh.read().split()[:3])
    t = time.perf_counter()
    for reranker in args.reranker or ["none", "sentence"]:
        r = run(args.starts, reranker)
        ratio = r["first_ms"]["p95"] / r["later_ms"]["p95"]
        print(f"reranker {reranker:<9} first query p50 {r['first_ms']['p50']:>8} ms  p95 {r['first_ms']['p95']:>8} ms | "
              f"later p50 {r['later_ms']['p50']:>8} ms  p95 {r['later_ms']['p95']:>8} ms | first/later p95 {ratio:.2f}x | "
              f"whole ask p50 {r['ask_ms']['p50']} / p95 {r['ask_ms']['p95']} ms | "
              f"start-up {r['startup_s_p50']} s ({r['starts']} starts)", flush=True)
    with open("/proc/loadavg") as fh:
        print("load average after:", fh.read().split()[:3], f"({time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
