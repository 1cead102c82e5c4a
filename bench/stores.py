"""Vector stores on real embeddings: FAISS exact against pgvector exact and pgvector HNSW, in the same run.

    python bench/stores.py                  # full corpus (497 pages, about 11,900 chunks)
    python bench/stores.py --profile small

Chunks are the course's 150/30-word windows, embedded with the packaged MiniLM (cached by content:
the first full run embeds for several minutes). Queries: ``--queries`` (200) chunks drawn at random,
at most a tenth of the corpus, are held out of every index, and each query is such a chunk's vector
plus Gaussian noise, renormalized (cosine about 0.9 to its chunk; on the small profile each held-out
chunk gives several queries), so every query has a close but not identical neighbourhood.
The filter: every tenth document (sorted ids) becomes ``premium`` only, and queries run as a
public user (``groups=["public"]``, about 90% of rows allowed); FAISS gets the same rows as a
boolean mask. Build time is loading the rows (FAISS ``add``; pgvector COPY + upsert with its
primary key, doc and GIN indexes) plus, for HNSW, ``CREATE INDEX ... USING hnsw`` (m=16,
ef_construction=64). Latencies are per query, one at a time, after 10 warm-up queries; pgvector
times include the round trip over the Unix socket. Recall@10 is measured against FAISS exact.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.infra.stores.faiss_store import FaissStore
from raglab.infra.stores.pgvector_store import PgVectorStore, database, stop_embedded

K, PUBLIC = 10, ["public"]


def timed(fn) -> tuple[float, object]:
    """Seconds taken by ``fn()`` and its result."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def run_queries(search, queries: np.ndarray, warmup: int = 10) -> tuple[list[float], list[list[str]]]:
    """Per-query seconds and result ids of ``search(q)`` over ``queries`` (after ``warmup`` untimed calls)."""
    for q in queries[:warmup]:
        search(q)
    secs, ids = [], []
    for q in queries:
        s, hits = timed(lambda: search(q))
        secs.append(s)
        ids.append([i for i, _ in hits])
    return secs, ids


def recall(got: list[list[str]], ref: list[list[str]]) -> float:
    """Mean share of the reference top-k found in ``got``."""
    return float(np.mean([len(set(g) & set(r)) / max(len(r), 1) for g, r in zip(got, ref)]))


def noisy(vectors: np.ndarray, cos: float, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors at about cosine ``cos`` from each row: the row plus isotropic Gaussian noise."""
    sigma = np.sqrt((1 / cos ** 2 - 1) / vectors.shape[1])
    q = vectors + sigma * rng.normal(size=vectors.shape).astype(np.float32)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def ratio(x: float, ref: float) -> str:
    """``x / ref`` as ``1.2x`` (``350x`` when large)."""
    r = x / ref
    return f"{r:.1f}x" if r < 100 else f"{r:.0f}x"


def main() -> None:
    """Build the three stores, time them, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="full", choices=["small", "full"])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ef-search", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    docs = load_corpus("python-docs", args.profile)
    premium = {d.id for n, d in enumerate(sorted(docs, key=lambda d: d.id)) if n % 10 == 0}
    chunks = [replace(c, access=("premium",)) if c.doc in premium else c
              for c in chunk_corpus(docs, ChunkSettings("words"))]
    print(f"{len(chunks)} chunks from {len(docs)} pages ({args.profile}); {len(premium)} pages premium-only")
    embedder = Embedder()
    secs, vectors = timed(lambda: embedder.encode([c.indexed_text for c in chunks], progress=True))
    print(f"embedded in {secs:.1f} s ({embedder.last_stats['misses']} new, {embedder.last_stats['hits']} cached)")

    held = rng.choice(len(chunks), min(args.queries, len(chunks) // 10), replace=False)
    keep = np.setdiff1d(np.arange(len(chunks)), held)
    queries = noisy(vectors[np.resize(held, args.queries)], 0.9, rng)   # small corpora: a few queries a chunk
    chunks, vectors = [chunks[i] for i in keep], vectors[keep]
    ids = [c.id for c in chunks]
    mask = np.array([bool(set(PUBLIC) & set(c.access)) for c in chunks])
    dim = vectors.shape[1]
    print(f"{len(chunks)} rows indexed ({mask.mean():.0%} public); {len(queries)} noisy queries from {len(held)} "
          f"held-out chunks; k={K}, HNSW ef_search={args.ef_search}")

    url = database()
    results = {}

    flat = FaissStore(dim, "flat")
    build, _ = timed(lambda: flat.add(vectors))
    faiss_search = {None: lambda q: [(ids[r], s) for r, s in flat.search(q, K)],
                    "public": lambda q: [(ids[r], s) for r, s in flat.search(q, K, mask)]}
    results["FAISS exact (flat)"] = (build, faiss_search)

    exact = PgVectorStore("bench_exact", dim, url=url)
    exact.drop()
    exact = PgVectorStore("bench_exact", dim, url=url)
    build, _ = timed(lambda: exact.upsert(chunks, vectors))
    results["pgvector exact"] = (build, {None: lambda q: exact.search(q, K),
                                         "public": lambda q: exact.search(q, K, PUBLIC)})

    loader = PgVectorStore("bench_hnsw", dim, url=url)
    loader.drop()
    loader = PgVectorStore("bench_hnsw", dim, url=url)
    load, _ = timed(lambda: loader.upsert(chunks, vectors))
    index, hnsw = timed(lambda: PgVectorStore("bench_hnsw", dim, url=url, hnsw=True, ef_search=args.ef_search))
    results["pgvector HNSW"] = (load + index, {None: lambda q: hnsw.search(q, K),
                                               "public": lambda q: hnsw.search(q, K, PUBLIC)})
    print(f"pgvector HNSW build: load {load:.2f} s + index {index:.2f} s")
    print(f"planner's choice for pgvector HNSW: HNSW index without filter {hnsw.uses_hnsw(queries[0], K)}, "
          f"with the public filter {hnsw.uses_hnsw(queries[0], K, PUBLIC)} (else an exact scan)")

    rows = {}
    for name, (build, searches) in results.items():
        rows[name] = {"build": build}
        for f, search in searches.items():
            secs, got = run_queries(search, queries)
            rows[name][f] = (np.percentile(secs, 50) * 1e3, np.percentile(secs, 95) * 1e3, got)
    ref = rows["FAISS exact (flat)"]
    head = (f"{'store':<20} {'build s':>8} {'x':>6} | {'p50 ms':>7} {'x':>6} {'p95 ms':>7} {'x':>6} {'R@10':>6} | "
            f"{'p50 ms':>7} {'x':>6} {'p95 ms':>7} {'x':>6} {'R@10':>6}")
    print(f"\n{'':<37}| {'no filter':^36} | {'public user (filter)':^36}")
    print(head)
    print("-" * len(head))
    for name, row in rows.items():
        cells = [f"{name:<20} {row['build']:>8.3f} {ratio(row['build'], ref['build']):>6}"]
        for f in (None, "public"):
            p50, p95, got = row[f]
            cells.append(f"{p50:>7.2f} {ratio(p50, ref[f][0]):>6} {p95:>7.2f} {ratio(p95, ref[f][1]):>6} "
                         f"{recall(got, ref[f][2]):>6.3f}")
        print(" | ".join(cells))
    allowed = {i for i, ok in zip(ids, mask) if ok}
    leaked = sum(i not in allowed for row in rows.values() for got in row["public"][2] for i in got)
    print(f"\nrows outside the public user's groups returned by any filtered query: {leaked}")

    exact.drop()
    hnsw.drop()
    for store in (exact, loader, hnsw):
        store.close()
    stop_embedded()


if __name__ == "__main__":
    main()
