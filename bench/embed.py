"""Embedding speed: raglab's Embedder (cold and warm cache) in its default precision (bfloat16 on a
CPU with native bfloat16, else float32; ``bench/precision.py`` compares it with float64) and in float32, against the course's plain
``SentenceTransformer(path).encode(texts, batch_size=64, normalize_embeddings=True)`` in float32,
and against the previous default path (token-sorted batches of 32 padded to their longest text, which
made a text's vector depend on its batch), measured in the same run, and against the machine's
arithmetic limits (matrix multiplies).

    python bench/embed.py              # the first 500 'words' chunks of the small profile
    python bench/embed.py --n 200 --repeat 1 --no-trials

The machine's load average is printed before and after: on a shared machine every rate moves, the
ratios (runs interleaved, best of each kept) much less.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.infra.embedding_cache import EmbeddingCache
from raglab.infra.precision import native_bf16
from raglab.infra.packaged_models import minilm_path, quiet_loading
from raglab.infra.tokenizer import load_tokenizer, token_lengths


def timed(fn) -> tuple[float, object]:
    """Seconds taken by ``fn()`` and its result."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def max_deviation(a: np.ndarray, b: np.ndarray) -> float:
    """The largest ``1 - cosine`` between matching rows of two unit-length matrices."""
    return float(1 - (a * b).sum(axis=1).min())


def matmul_gflops(torch, dtype, size: int = 2048, reps: int = 5, rounds: int = 5) -> float:
    """Best GFLOP/s of ``size x size @ size x size`` in ``dtype`` (torch's current thread count)."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(rounds):
        secs, _ = timed(lambda: [a @ b for _ in range(reps)])
        best = min(best, secs)
    return reps * 2 * size ** 3 / best / 1e9


def flops_per_chunk(model, tokens: np.ndarray) -> tuple[int, np.ndarray]:
    """Encoder Linear weights ``P`` and FLOPs per chunk: ``2 P T + 2 * layers * T^2 * hidden * 2``.

    ``P`` counts the weights of every Linear layer in the transformer's encoder (the work done
    per token); the embedding tables (lookups) and the pooler (once per text, unused by mean
    pooling) are left out. The attention term is QK^T plus attention @ V in each layer.
    """
    import torch

    bert = model[0].auto_model
    encoder = bert.encoder
    p = sum(m.weight.numel() for m in encoder.modules() if isinstance(m, torch.nn.Linear))
    layers, hidden = bert.config.num_hidden_layers, bert.config.hidden_size
    t = tokens.astype(np.float64)
    return p, 2 * p * t + 2 * layers * t ** 2 * hidden * 2


def previous_path(model, texts: list[str], precision: str, batch_size: int = 32) -> np.ndarray:
    """The embedder's path before one text, one vector: misses sorted by token count, longest first,
    ``model.encode`` on each batch (padded to its longest text), bfloat16 under autocast."""
    import torch

    lengths = token_lengths(texts, load_tokenizer())
    order = np.argsort([-n for n in lengths], kind="stable")
    out = np.empty((len(texts), 384), dtype=np.float32)
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bfloat16" else contextlib.nullcontext()
    for i in range(0, len(order), batch_size):
        rows = order[i:i + batch_size]
        with ctx:
            v = model.encode([texts[j] for j in rows], batch_size=len(rows), normalize_embeddings=True)
        out[rows] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


def batch_invariant(embedder: Embedder, texts: list[str]) -> bool:
    """Whether each of a few texts gets the same bytes alone as inside ``texts`` (no cache)."""
    inside = embedder.encode(texts, progress=False)
    return all(embedder.encode([texts[i]], progress=False).tobytes() == inside[i].tobytes()
               for i in range(0, len(texts), max(1, len(texts) // 8)))


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages (the machine has ``os.cpu_count()`` cores)."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=500, help="chunks to embed (default 500)")
    p.add_argument("--repeat", type=int, default=2, help="runs of the plain call and of each cold embedder; best kept")
    p.add_argument("--no-trials", action="store_true", help="skip the batch-size / thread / precision trials")
    p.add_argument("--trial-n", type=int, default=128, help="chunks per trial run (default 128)")
    args = p.parse_args()

    chunks = chunk_corpus(load_corpus("python-docs", "small"), ChunkSettings("words"))
    texts = [c.indexed_text for c in chunks[:args.n]]
    warmup = [c.indexed_text for c in chunks[args.n:args.n + 16]]
    tokens = np.minimum(token_lengths(texts, load_tokenizer()), 256)
    print(f"texts: the first {len(texts)} 'words 150/30' chunks of python-docs (small); "
          f"{len(set(texts))} distinct; tokens per chunk (capped at 256): mean {tokens.mean():.1f}, "
          f"{(tokens == 256).mean():.0%} at the cap")
    print(f"load average before: {load_average()}")

    quiet_loading()
    secs, _ = timed(lambda: __import__("sentence_transformers"))
    import torch
    from sentence_transformers import SentenceTransformer

    embedder = Embedder(cache=False)                                   # the default precision
    fp32_embedder = Embedder(cache=False, precision="float32")
    print(f"import sentence_transformers: {secs:.1f} s; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads (torch default), CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"native bfloat16 {native_bf16()} -> default precision {embedder.precision}")
    path = str(minilm_path())
    plain_model = SentenceTransformer(path, device="cpu")
    plain_model.encode(warmup, batch_size=64, normalize_embeddings=True)      # warm-up: first-call costs
    embedder.encode(warmup)
    fp32_embedder.encode(warmup)

    def plain():
        return plain_model.encode(texts, batch_size=64, normalize_embeddings=True)

    tmp = Path(tempfile.mkdtemp(prefix="raglab-bench-"))
    previous_path(plain_model, warmup, embedder.precision)
    plain_s, cold_s, fp32_s, prev_s, ref, cold, cold32, prev = [], [], [], [], None, None, None, None
    for r in range(args.repeat):                  # interleaved, best of each kept
        secs, ref = timed(plain)
        plain_s.append(secs)
        secs, prev = timed(lambda: previous_path(plain_model, texts, embedder.precision))
        prev_s.append(secs)
        embedder.cache = EmbeddingCache(tmp / f"cold{r}.sqlite")
        secs, cold = timed(lambda: embedder.encode(texts, progress=False))
        assert embedder.last_stats["hits"] == 0, embedder.last_stats
        cold_s.append(secs)
        secs, cold32 = timed(lambda: fp32_embedder.encode(texts, progress=False))
        fp32_s.append(secs)
    cold_stats = embedder.last_stats
    warm_embedder = Embedder(cache=EmbeddingCache(embedder.cache.path))   # a new embedder: model never loaded
    warm_s = min(timed(lambda: warm_embedder.encode(texts, progress=False))[0] for _ in range(3))
    warm = warm_embedder.encode(texts)
    assert warm_embedder.last_stats["misses"] == 0 and warm_embedder._model is None
    shutil.rmtree(tmp, ignore_errors=True)

    fp32 = matmul_gflops(torch, torch.float32)
    bf16 = matmul_gflops(torch, torch.bfloat16)
    params, flops = flops_per_chunk(plain_model, tokens)
    gflop = flops.mean() / 1e9
    limits = {"float32": fp32 / gflop, "bfloat16": bf16 / gflop}

    n = len(texts)
    plain_rate, cold_rate, fp32_rate, warm_rate = n / min(plain_s), n / min(cold_s), n / min(fp32_s), n / warm_s
    prev_rate = n / min(prev_s)
    print(f"\narithmetic: float32 matmul {fp32:.0f} GFLOP/s (2048^3, best of 5), bfloat16 {bf16:.0f} GFLOP/s; "
          f"encoder Linear weights P = {params:,} (embedding tables and pooler excluded)")
    print(f"  FLOPs per chunk = 2 P T + 2 * 6 layers * T^2 * 384 * 2, averaged over the chunks' own T: "
          f"{gflop:.2f} GFLOP -> float32 limit {limits['float32']:.1f} chunks/s, bfloat16 limit {limits['bfloat16']:.1f}")
    print(f"\n{'run':<60}{'seconds':>8}{'chunks/s':>10}{'vs plain':>10}{'of limit':>10}{'max 1-cos':>11}")
    rows = [("(a) plain encode(batch_size=64), float32", min(plain_s), plain_rate, 0.0, "float32"),
            (f"(b) Embedder cold, default {embedder.precision} ({cold_stats['misses']} embedded, bs {embedder.batch_size})",
             min(cold_s), cold_rate, max_deviation(cold, ref), embedder.precision),
            (f"(c) Embedder cold, float32 (bs {fp32_embedder.batch_size})", min(fp32_s), fp32_rate,
             max_deviation(cold32, ref), "float32"),
            ("(d) Embedder warm (new Embedder, same cache)", warm_s, warm_rate, max_deviation(warm, ref), None),
            (f"(e) previous path, {embedder.precision}, batch-dependent (bs 32)", min(prev_s), prev_rate, max_deviation(prev, ref),
             embedder.precision)]
    for label, secs, rate, dev, precision in rows:
        ratio = rate / plain_rate
        ratio_s = f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.2f}x"
        of_limit = f"{rate / limits[precision]:.0%}" if precision else "-"   # a cache lookup is no arithmetic
        print(f"{label:<60}{secs:>8.2f}{rate:>10,.1f}{ratio_s:>10}{of_limit:>10}{dev:>11.1e}")
    print(f"    (runs: plain {', '.join(f'{s:.1f}' for s in plain_s)} s; default {', '.join(f'{s:.1f}' for s in cold_s)} s; "
          f"float32 {', '.join(f'{s:.1f}' for s in fp32_s)} s; previous {', '.join(f'{s:.1f}' for s in prev_s)} s)")
    print(f"    default {embedder.precision} vs Embedder float32: {cold_rate / fp32_rate:.2f}x; "
          f"vs the previous batch-dependent path: {cold_rate / prev_rate:.2f}x")
    invariant = batch_invariant(Embedder(cache=False), texts[:64])
    print(f"load average after: {load_average()}")

    target = 1.8 if embedder.precision == "bfloat16" else 1.0
    dev = max(rows[1][3], rows[3][3])
    checks = [(f"cold default >= {target:.1f}x the plain float32 call", cold_rate >= target * plain_rate,
               f"{cold_rate / plain_rate:.2f}x"),
              ("cold float32 >= 1.0x the plain call", fp32_rate >= plain_rate, f"{fp32_rate / plain_rate:.2f}x"),
              ("cold default at most 1.3x slower than the previous batch-dependent path", cold_rate * 1.3 >= prev_rate,
               f"{prev_rate / cold_rate:.2f}x the time"),
              ("each text the same bytes alone and in a batch of 64", invariant, "identical" if invariant else "differs"),
              ("cold float32 >= 70% of the float32 arithmetic limit", fp32_rate >= 0.7 * limits["float32"],
               f"{fp32_rate / limits['float32']:.0%}"),
              ("warm >= 50x the plain call", warm_rate >= 50 * plain_rate, f"{warm_rate / plain_rate:,.0f}x"),
              ("default vectors within 1 - cos 1e-4 of the plain float32 call", dev <= 1e-4, f"max 1-cos {dev:.1e}")]
    print()
    for label, ok, value in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {label}: {value}")

    if not args.no_trials:
        trials(args, texts[:args.trial_n], torch, plain_model, ref[:args.trial_n], plain_rate, limits["float32"],
               limits["bfloat16"])


def trials(args, texts, torch, plain_model, ref, plain_rate, limit, bf16_limit) -> None:
    """What was tried: batch size, token-length sorting, threads, bfloat16 (best of ``--repeat`` rounds)."""
    threads = torch.get_num_threads()

    @contextlib.contextmanager
    def num_threads(k):
        torch.set_num_threads(k)
        try:
            yield
        finally:
            torch.set_num_threads(threads)

    embedders = {}                                # built and warmed up before any timing
    for bs, precision in [(b, p) for p in ("float32", "bfloat16") for b in (8, 16, 32, 64)]:
        embedders[bs, precision] = e = Embedder(cache=False, batch_size=bs, precision=precision)
        e.encode(texts[:8])

    def embedder(bs, precision="float32"):
        return embedders[bs, precision]

    configs = {
        "plain encode, batch_size=64 (ST sorts by characters)": lambda: plain_model.encode(
            texts, batch_size=64, normalize_embeddings=True),
        "plain encode, batch_size=16": lambda: plain_model.encode(texts, batch_size=16, normalize_embeddings=True),
    }
    for bs in (8, 16, 32, 64):
        configs[f"Embedder bs {bs}, sorted by tokens"] = lambda bs=bs: embedder(bs).encode(texts, progress=False)
    configs[f"Embedder bs 16, 1 thread (default {threads})"] = lambda: _with(num_threads(1), embedder(16).encode, texts)
    for bs in (8, 16, 32, 64):
        configs[f"Embedder bs {bs}, precision='bfloat16'"] = lambda bs=bs: embedder(bs, "bfloat16").encode(
            texts, progress=False)
    best = {k: float("inf") for k in configs}
    devs = {}
    for _ in range(args.repeat):
        for label, fn in configs.items():
            secs, out = timed(fn)
            best[label] = min(best[label], secs)
            devs[label] = max_deviation(out, ref)
    print(f"\ntrials on the first {len(texts)} chunks (best of {args.repeat}; 'vs plain' against plain bs 64 here):")
    base = len(texts) / best["plain encode, batch_size=64 (ST sorts by characters)"]
    for label in configs:
        rate = len(texts) / best[label]
        print(f"  {label:<52}{rate:>8.1f} chunks/s{rate / base:>7.2f}x{rate / limit:>6.0%} of limit  1-cos {devs[label]:.0e}")
    sizes = {bs: len(texts) / best[f"Embedder bs {bs}, sorted by tokens"] for bs in (8, 16, 32, 64)}
    top = max(sizes, key=sizes.get)
    sort_gain = best["plain encode, batch_size=16"] / best["Embedder bs 16, sorted by tokens"]
    print(f"  -> fastest float32 batch size here: {top} ({sizes[top]:.1f}/s; the default 16 makes {sizes[16]:.1f}/s); "
          f"token sorting vs ST's character sort at bs 16: {sort_gain:.2f}x; "
          f"1 thread: {best['Embedder bs 16, sorted by tokens'] / best[f'Embedder bs 16, 1 thread (default {threads})']:.2f}x")
    bf_sizes = {bs: len(texts) / best[f"Embedder bs {bs}, precision='bfloat16'"] for bs in (8, 16, 32, 64)}
    bf_top = max(bf_sizes, key=bf_sizes.get)
    print(f"  -> fastest bfloat16 batch size here: {bf_top} ({bf_sizes[bf_top]:.1f}/s; 16 makes {bf_sizes[16]:.1f}/s); "
          f"bfloat16 vs float32 at bs 16: {bf_sizes[16] / sizes[16]:.2f}x")
    print(f"  (bfloat16 has its own limit, {bf16_limit:.0f} chunks/s at the bfloat16 matmul rate: "
          f"bs 16 reached {bf_sizes[16] / bf16_limit:.0%})")


def _with(ctx, fn, *args):
    """``fn(*args)`` inside ``ctx``."""
    with ctx:
        return fn(*args, progress=False)


if __name__ == "__main__":
    main()
