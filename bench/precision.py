"""The embedding precisions side by side: float64 (the default: the same vectors on every CPU), float32 and,
on a CPU with native bfloat16, bfloat16; their speed on the same chunks in one process, and how far their
vectors are from float64's.

    python bench/precision.py              # 128 'words 150/30' chunks of the small profile, best of 3
    python bench/precision.py --n 64 --repeat 2

Runs are interleaved (float64, float32, ... then again) and the best of each kept, so that a load from
elsewhere on the machine moves the ratios less than the rates.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.infra.precision import native_bf16


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=128, help="chunks to embed (default 128)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of each precision; the best is kept")
    args = p.parse_args()
    chunks = chunk_corpus(load_corpus("python-docs", "small"), ChunkSettings("words"))
    texts = [c.indexed_text for c in chunks[:args.n]]
    precisions = ["float64", "float32"] + (["bfloat16"] if native_bf16() else [])
    embedders = {name: Embedder(cache=False, precision=name) for name in precisions}
    for embedder in embedders.values():
        embedder.warm()
    best, vectors = {name: float("inf") for name in precisions}, {}
    print(f"{len(texts)} chunks, {os.cpu_count()} cores, load average before {os.getloadavg()[0]:.2f}")
    for _ in range(args.repeat):
        for name, embedder in embedders.items():
            start = time.perf_counter()
            vectors[name] = embedder.encode(texts, progress=False)
            best[name] = min(best[name], time.perf_counter() - start)
    print(f"{'precision':10} {'chunks/s':>9} {'time vs float32':>16} {'max 1 - cos vs float64':>23}")
    for name in precisions:
        a, b = vectors[name].astype(np.float64), vectors["float64"].astype(np.float64)
        cos = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        gap = float(1 - cos.min())
        print(f"{name:10} {len(texts) / best[name]:9.1f} {best[name] / best['float32']:15.2f}x {gap:23.1e}")
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
