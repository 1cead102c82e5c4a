"""Load on the HTTP API: concurrent clients asking mixed help-center questions with public and premium tokens.

Starts ``raglab serve`` (help-center corpus, small profile, extractive generator) in a
subprocess on a free port of 127.0.0.1, asks every question once to warm the caches, then runs
``--clients`` concurrent clients for ``--duration`` seconds or ``--max-requests`` requests, whichever
comes first, and stops the server by its PID.

    python bench/load.py [--clients 50] [--duration 20] [--max-requests 5000]

Prints requests, errors (anything but a 200; must be 0), throughput, latency percentiles, refusals,
and how many public answers contain a premium-only fact (must be 0).
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from raglab.llm import free_port

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_TOKEN, PREMIUM_TOKEN = "bench-public-token-0001", "bench-premium-token-0002"
PREMIUM_FACTS = ["555-0199", "plus-desk@parcelo.example", "NGA-PLUS-3", "1,800", "plus.api.parcelo.example"]


def workload(golden: Path) -> list[tuple[str, str]]:
    """(question, token) pairs: every golden question with the token it needs, and every one again as public."""
    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = []
    for r in rows:
        pairs.append((r["question"], PREMIUM_TOKEN if r.get("access") == "premium" else PUBLIC_TOKEN))
        pairs.append((r["question"], PUBLIC_TOKEN if r.get("access") == "premium" else PREMIUM_TOKEN))
    return pairs


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(q / 100 * len(s) + 0.5) - 1))]


async def wait_ready(base: str, proc: subprocess.Popen, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(base_url=base) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with code {proc.returncode}")
            try:
                r = await client.get("/health", timeout=2)
                if r.status_code == 200:
                    return r.json()
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise TimeoutError(f"the server was not ready after {timeout:.0f} s")


async def run(base: str, pairs: list[tuple[str, str]], clients: int, duration: float, max_requests: int) -> dict:
    latencies: list[float] = []
    statuses: Counter = Counter()
    refused, leaks = 0, 0
    jobs = itertools.cycle(pairs)
    issued = 0
    deadline = time.perf_counter() + duration

    async def client_loop(client: httpx.AsyncClient) -> None:
        nonlocal issued, refused, leaks
        while time.perf_counter() < deadline and issued < max_requests:
            issued += 1
            question, token = next(jobs)
            t = time.perf_counter()
            try:
                r = await client.post("/ask", json={"question": question}, headers={"Authorization": f"Bearer {token}"})
                status = r.status_code
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            latencies.append(time.perf_counter() - t)
            statuses[status] += 1
            if status == 200:
                data = r.json()
                refused += data["refused"]
                if token == PUBLIC_TOKEN and any(f in r.text for f in PREMIUM_FACTS):
                    leaks += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        started = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return {"latencies": latencies, "statuses": statuses, "refused": refused, "leaks": leaks, "elapsed": elapsed}


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server by its PID (uvicorn shuts down cleanly), SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--duration", type=float, default=20.0, help="seconds of load (default 20)")
    p.add_argument("--max-requests", type=int, default=5000)
    p.add_argument("--profile", default="small")
    p.add_argument("--ready-timeout", type=float, default=600, help="seconds to wait for start-up (an index build)")
    args = p.parse_args()

    pairs = workload(ROOT / "evals" / "helpcenter_golden.jsonl")
    with tempfile.TemporaryDirectory(prefix="raglab-load-") as tmp:
        tokens = Path(tmp) / "tokens.json"
        tokens.write_text(json.dumps({"tokens": {PUBLIC_TOKEN: ["public"], PREMIUM_TOKEN: ["premium"]}}))
        trace = Path(tmp) / "asks.jsonl"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        cmd = [sys.executable, "-m", "raglab", "serve", "--corpus", "helpcenter", "--profile", args.profile,
               "--generator", "extractive", "--port", str(port), "--tokens-file", str(tokens),
               "--trace", str(trace), "--log-level", "warning"]
        t = time.perf_counter()
        with open(Path(tmp) / "server.log", "w+") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
            try:
                health = asyncio.run(wait_ready(base, proc, args.ready_timeout))
                startup = time.perf_counter() - t
                t = time.perf_counter()
                warm = asyncio.run(run(base, pairs, 1, 3600, len(pairs)))
                warm_s = time.perf_counter() - t
                result = asyncio.run(run(base, pairs, args.clients, args.duration, args.max_requests))
            finally:
                stop(proc)
                log.seek(0)
                errors_text = log.read()
        traced = sum(1 for _ in trace.open()) if trace.exists() else 0

    lat = result["latencies"]
    n = len(lat)
    bad = {k: v for k, v in result["statuses"].items() if k != 200}
    warm_bad = {k: v for k, v in warm["statuses"].items() if k != 200}
    print(f"server: pid {proc.pid} on {base}, index {health['index_version']} ({health['chunks']} chunks), "
          f"generator {health['generator']}, ready in {startup:.1f} s; stopped by SIGTERM to its PID (exit code {proc.returncode})")
    print(f"warm-up: {len(warm['latencies'])} questions one at a time in {warm_s:.1f} s, errors {sum(warm_bad.values())}")
    print(f"load: {args.clients} clients, {len(pairs)} question/token pairs ({len(pairs) // 2} questions, "
          f"public and premium), {args.duration:.0f} s or {args.max_requests} requests")
    print(f"requests   {n}")
    print(f"errors     {sum(bad.values())}" + (f" {dict(bad)}" if bad else ""))
    print(f"throughput {n / result['elapsed']:.1f} req/s over {result['elapsed']:.1f} s")
    print(f"latency    p50 {percentile(lat, 50) * 1000:.0f} ms, p95 {percentile(lat, 95) * 1000:.0f} ms, "
          f"max {max(lat) * 1000:.0f} ms")
    print(f"refused    {result['refused']} of {n}; premium facts in public answers: {result['leaks']}")
    print(f"traces     {traced} lines (warm-up + load = {len(warm['latencies']) + n})")
    failed = bad or warm_bad or result["leaks"] or proc.returncode not in (0, -signal.SIGTERM)
    if failed and errors_text:
        print(errors_text[-3000:], file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
