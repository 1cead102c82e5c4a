"""Load on the HTTP API: concurrent clients asking mixed help-center questions with public and premium tokens.

Part ``load``: starts ``raglab serve`` (help-center corpus, small profile, extractive generator) in a
subprocess on a free port of 127.0.0.1, asks every question once to warm the caches, then runs
``--clients`` concurrent clients for ``--duration`` seconds or ``--max-requests`` requests, whichever
comes first, and stops the server by its PID. Four runs, each on a server of its own: one worker and
``--workers`` (default: the cores), each with a stream of distinct questions (numbered variants of the
golden ones: no answer-cache hit) and with the repeated mix. Prints, per run, requests, errors (anything but
a 200; must be 0), throughput, latency percentiles, refusals, how many public answers contain a
premium-only fact (must be 0), trace lines against requests (must be equal) and each process's resident
memory; then the N-worker figures over the one-worker ones.

Part ``model``: the same service with the OpenAI-compatible generator pointed at a stand-in model server
(``raglab.surfaces.fakemodel``, started here on 127.0.0.1 and stopped here) and ``--deadline`` / ``--queue-size``.
Only questions that reach the model (not refused for weak evidence) are asked. Four phases of
``--phase-seconds`` each (at most ``--phase-requests`` requests; a client pauses 0.2 s after a 503): a
slow model (``--slow`` s a call, within the deadline), a stalled one (``--stalled`` s, past it), a failing
one (HTTP 500), and the model recovered. Each prints requests served, 503s (deadline, queue full), 502s
and p95; it fails unless every request ended within the deadline plus a second and the recovered model
is served.

    python bench/load.py [--part load|model|both] [--clients 50] [--duration 20] [--max-requests 5000]
                         [--answer-cache N]   (0: the service without its answer cache, the baseline)
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

from raglab.infra import traces
from raglab.infra.packaged_models import free_port
from raglab.surfaces.fakemodel import FakeModel

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
                r = await client.get("/health", timeout=2, headers={"Authorization": f"Bearer {PUBLIC_TOKEN}"})
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
    p.add_argument("--part", choices=("load", "model", "both"), default="both")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--duration", type=float, default=20.0, help="seconds of load (default 20)")
    p.add_argument("--max-requests", type=int, default=5000)
    p.add_argument("--profile", default="small")
    p.add_argument("--answer-cache", type=int, default=1024, help="load part: the service's answer cache (0: none)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                   help="load part: the service's worker processes, measured beside one (default: the cores)")
    p.add_argument("--ready-timeout", type=float, default=600, help="seconds to wait for start-up (an index build)")
    p.add_argument("--model-clients", type=int, default=16, help="model part: concurrent clients (default 16)")
    p.add_argument("--deadline", type=float, default=2.0, help="model part: the service's deadline, s (default 2)")
    p.add_argument("--queue-size", type=int, default=8, help="model part: the service's queue (default 8)")
    p.add_argument("--slow", type=float, default=0.5, help="model part: seconds a slow call takes (default 0.5)")
    p.add_argument("--stalled", type=float, default=10.0, help="model part: seconds a stalled call takes (default 10)")
    p.add_argument("--phase-seconds", type=float, default=6.0, help="model part: seconds a phase (default 6)")
    p.add_argument("--phase-requests", type=int, default=1500, help="model part: requests a phase at most")
    args = p.parse_args()
    failed = False
    if args.part in ("load", "both"):
        failed |= load_part(args)
    if args.part in ("model", "both"):
        failed |= model_part(args)
    return 1 if failed else 0


def serve_command(tmp: Path, port: int, profile: str, generator: str, *extra: str) -> list[str]:
    """``raglab serve`` over the help center with the bench's two tokens and a private trace."""
    tokens = tmp / "tokens.json"
    tokens.write_text(json.dumps({"tokens": {PUBLIC_TOKEN: ["public"], PREMIUM_TOKEN: ["premium"]}}))
    return [sys.executable, "-m", "raglab", "serve", "--corpus", "helpcenter", "--profile", profile,
            "--generator", generator, "--port", str(port), "--tokens-file", str(tokens),
            "--trace", str(tmp / "asks.jsonl"), "--log-level", "warning", *extra]


def rss_mb(pid: int) -> float:
    """Resident memory of a process, MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    """The direct children of a process (Linux /proc)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(t) for t in text]
    return out


def distinct(pairs: list[tuple[str, str]], n: int) -> list[tuple[str, str]]:
    """``n`` questions no cache has seen: the golden ones, each asked as a numbered variant."""
    return [(f"{q.rstrip('?')} (variant {i // len(pairs) + 1})?", token)
            for i, (q, token) in zip(range(n), itertools.cycle(pairs))]


def load_part(args) -> bool:
    """The extractive generator under ``--clients`` clients, on one worker and on ``--workers``, for distinct
    questions and for the repeated mix; True when something failed."""
    pairs = workload(ROOT / "evals" / "helpcenter_golden.jsonl")
    fresh = distinct(pairs, args.max_requests + len(pairs))
    runs = [("distinct questions", 1, fresh), ("distinct questions", args.workers, fresh),
            ("repeated mix", 1, pairs), ("repeated mix", args.workers, pairs)]
    if args.workers == 1:
        runs = runs[::2]
    print(f"load: {args.clients} clients, {args.duration:.0f} s or {args.max_requests} requests a run; "
          f"{len(pairs)} question/token pairs ({len(pairs) // 2} questions, public and premium) in the repeated "
          f"mix (every one asked once first: the rest are answer-cache hits), numbered variants of them in "
          f"the distinct stream; answer cache {args.answer_cache}")
    print("| stream | workers | requests | errors | req/s | p50 ms | p95 ms | max ms | refused | premium leaks | "
          "traces | RSS MB (parent; workers) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    failed, figures = False, {}
    for stream, workers, questions in runs:
        one = load_run(args, workers, stream, pairs if stream == "repeated mix" else questions[len(pairs):],
                       warm=pairs if stream == "repeated mix" else questions[:len(pairs)])
        failed |= one["failed"]
        figures[(stream, workers)] = one
    for stream in ("distinct questions", "repeated mix"):
        if args.workers > 1:
            a, b = figures[(stream, 1)], figures[(stream, args.workers)]
            print(f"{stream}: {args.workers} workers / 1 worker: throughput {b['rps'] / a['rps']:.2f}x, "
                  f"p95 {b['p95'] / a['p95']:.2f}x")
    return failed


def load_run(args, workers: int, stream: str, questions, warm) -> dict:
    """One server (``workers`` processes), warmed with ``warm`` one at a time, then ``questions`` under load."""
    with tempfile.TemporaryDirectory(prefix="raglab-load-") as tmp:
        trace = Path(tmp) / "asks.jsonl"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        cmd = serve_command(Path(tmp), port, args.profile, "extractive", "--answer-cache", str(args.answer_cache),
                            "--workers", str(workers))
        t = time.perf_counter()
        with open(Path(tmp) / "server.log", "w+") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
            try:
                asyncio.run(wait_ready(base, proc, args.ready_timeout))
                startup = time.perf_counter() - t
                warmed = asyncio.run(run(base, warm, 1, 3600, len(warm)))
                memory = [rss_mb(proc.pid)] + [rss_mb(c) for c in children(proc.pid)]
                result = asyncio.run(run(base, questions, args.clients, args.duration, args.max_requests))
            finally:
                stop(proc)
                log.seek(0)
                errors_text = log.read()
        traced = sum(1 for f in traces.files(trace) for _ in f.open())   # across rotated files

    lat = result["latencies"]
    n = len(lat)
    bad = {k: v for k, v in result["statuses"].items() if k != 200}
    warm_bad = {k: v for k, v in warmed["statuses"].items() if k != 200}
    p50, p95 = percentile(lat, 50) * 1000, percentile(lat, 95) * 1000
    # with one worker the server process answers; with more, it is the front and its children (the workers) answer
    rss = f"{memory[0]:.0f}" if workers == 1 else f"{memory[0]:.0f}; " + ", ".join(f"{m:.0f}" for m in memory[1:])
    print(f"| {stream} | {workers} | {n} | {sum(bad.values())}{' ' + str(dict(bad)) if bad else ''} | "
          f"{n / result['elapsed']:.1f} | {p50:.0f} | {p95:.0f} | {max(lat) * 1000:.0f} | {result['refused']} | "
          f"{result['leaks']} | {traced} of {len(warmed['latencies']) + n} | {rss} |")
    failed = bool(bad or warm_bad or result["leaks"] or proc.returncode not in (0, -signal.SIGTERM)
                  or traced != len(warmed["latencies"]) + n)
    if failed and errors_text:
        print(f"(server ready in {startup:.1f} s, exit code {proc.returncode})\n" + errors_text[-3000:], file=sys.stderr)
    return {"failed": failed, "rps": n / result["elapsed"], "p95": p95}


# ---------------------------------------------------------------- a slow or failing model

async def model_questions(base: str, pairs: list[tuple[str, str]], model: FakeModel) -> list[tuple[str, str]]:
    """The pairs whose question reaches the model (the rest are refused before any model call)."""
    kept = []
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        for question, token in pairs:
            before = model.calls
            r = await client.post("/ask", json={"question": question}, headers={"Authorization": f"Bearer {token}"})
            if r.status_code == 200 and model.calls > before:
                kept.append((question, token))
    return kept


async def phase(base: str, pairs: list[tuple[str, str]], clients: int, seconds: float, max_requests: int) -> dict:
    """``clients`` clients for ``seconds`` or ``max_requests`` requests; statuses by kind and latencies."""
    latencies: list[float] = []
    kinds: Counter = Counter()
    jobs = itertools.cycle(pairs)
    issued, first_ok = 0, None
    started = time.perf_counter()
    stop_at = started + seconds

    async def client_loop(client: httpx.AsyncClient) -> None:
        nonlocal issued, first_ok
        while time.perf_counter() < stop_at and issued < max_requests:
            issued += 1
            question, token = next(jobs)
            t = time.perf_counter()
            try:
                r = await client.post("/ask", json={"question": question}, headers={"Authorization": f"Bearer {token}"})
                kind = r.status_code if r.status_code != 503 else f"503 {r.json().get('error')}"
            except httpx.HTTPError as exc:
                kind = type(exc).__name__
            latencies.append(time.perf_counter() - t)
            kinds[kind] += 1
            if kind == 200 and first_ok is None:
                first_ok = time.perf_counter() - started
            if kind != 200:
                await asyncio.sleep(0.2)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
    return {"latencies": latencies, "kinds": kinds, "elapsed": time.perf_counter() - started, "first_ok": first_ok}


def report_phase(name: str, result: dict) -> str:
    """One line: requests, served, 503s by kind, 502s, p50/p95/max."""
    lat, kinds = result["latencies"], result["kinds"]
    other = {k: v for k, v in kinds.items() if k not in (200, 502) and not str(k).startswith("503")}
    first = f", first 200 after {result['first_ok']:.2f} s" if result["first_ok"] is not None else ""
    return (f"{name:<22} requests {len(lat):>5}  served {kinds[200]:>4}  503 deadline {kinds['503 deadline']:>4}  "
            f"503 queue-full {kinds['503 queue-full']:>4}  502 {kinds[502]:>4}"
            + (f"  other {dict(other)}" if other else "")
            + f"  p50 {percentile(lat, 50) * 1000:.0f} ms  p95 {percentile(lat, 95) * 1000:.0f} ms  "
              f"max {max(lat) * 1000:.0f} ms{first}")


def model_part(args) -> bool:
    """The service in front of a slow, a stalled and a failing model, then the model recovered; True on failure."""
    pairs = workload(ROOT / "evals" / "helpcenter_golden.jsonl")
    results = {}
    with tempfile.TemporaryDirectory(prefix="raglab-load-model-") as tmp, FakeModel(mode="ok") as model:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        cmd = serve_command(Path(tmp), port, args.profile, "openai", "--deadline", str(args.deadline),
                            "--queue-size", str(args.queue_size), "--answer-cache", "0")   # every ask reaches the model
        env = {**os.environ, "LLM_BASE_URL": model.base_url, "LLM_MODEL": "fake", "LLM_API_KEY": "unused"}
        with open(Path(tmp) / "server.log", "w+") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
            try:
                asyncio.run(wait_ready(base, proc, args.ready_timeout))
                asyncio.run(model_questions(base, pairs, model))          # warms the caches (cold: past the deadline)
                asked = asyncio.run(model_questions(base, pairs, model))
                for name, mode, delay in [(f"slow ({args.slow:g} s a call)", "slow", args.slow),
                                          (f"stalled ({args.stalled:g} s a call)", "slow", args.stalled),
                                          ("failing (HTTP 500)", "error", 0.0), ("recovered", "ok", 0.0)]:
                    model.mode, model.delay = mode, delay
                    results[name] = asyncio.run(phase(base, asked, args.model_clients, args.phase_seconds,
                                                      args.phase_requests))
            finally:
                stop(proc)
                log.seek(0)
                server_log = log.read()
    print(f"\nmodel part: raglab serve --generator openai --deadline {args.deadline:g} --queue-size {args.queue_size} "
          f"(pid {proc.pid}, exit code {proc.returncode}) in front of a stand-in model on 127.0.0.1; "
          f"{len(asked)} of {len(pairs)} question/token pairs reach the model; {args.model_clients} clients, "
          f"{args.phase_seconds:g} s a phase")
    for name, result in results.items():
        print(report_phase(name, result))
    longest = max(max(r["latencies"]) for r in results.values())
    recovered = results["recovered"]
    served_share = recovered["kinds"][200] / max(1, len(recovered["latencies"]))
    print(f"longest request {longest:.2f} s (deadline {args.deadline:g} s)")
    late_or_failed = recovered["kinds"]["503 deadline"] + recovered["kinds"][502]
    print(f"after recovery: first 200 after {recovered['first_ok'] or float('nan'):.2f} s, {served_share:.0%} served, "
          f"{late_or_failed} late or failed (the rest of the 503s: {args.model_clients} clients for 1 + "
          f"{args.queue_size} places)")
    failed = (longest > args.deadline + 1 or recovered["first_ok"] is None or late_or_failed
              or results["failing (HTTP 500)"]["kinds"][502] == 0 or proc.returncode not in (0, -signal.SIGTERM))
    if failed:
        print(server_log[-3000:], file=sys.stderr)
    return failed


if __name__ == "__main__":
    sys.exit(main())
