"""Reranking on the golden set: recall@5 and MRR@10 of hybrid search with and without the offline
sentence reranker, and the reranker's latency per query with a cold and a warm sentence cache.

    python bench/rerank.py [--profile small]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile

from raglab.base import config
from raglab.book.chunking import ChunkSettings
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.infra.embedding_cache import EmbeddingCache
from raglab.evaluation.golden import load_golden
from raglab.evaluation.scoreboard import per_question
from raglab.book.rerank import SentenceMaxReranker
from raglab.book.retrieve import Retriever
from raglab.infra.assemble import get_index


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="small")
    args = p.parse_args()
    embedder = Embedder()
    index = get_index("python-docs", args.profile, ChunkSettings("words"), embedder)
    golden = config.PROJECT_ROOT / "evals" / "python_docs_golden.jsonl"
    questions = load_golden(golden, load_corpus("python-docs", args.profile))
    with tempfile.TemporaryDirectory() as tmp:
        cold_embedder = Embedder(cache=EmbeddingCache(f"{tmp}/c.sqlite"))
        cold_embedder.encode([c.indexed_text for c in index.chunks[:1]])  # load the model outside the timing
        retriever = Retriever(index, embedder, SentenceMaxReranker(cold_embedder))
        timings = {"cold": [], "warm": []}
        for phase in ("cold", "warm"):
            for q in questions:
                retriever.search(q.question, "rerank", 5)
                timings[phase].append(retriever.timings_ms["rerank"])
    table = per_question(retriever, questions, ("hybrid", "rerank"), k=5)
    print(f"{len(table)} answerable questions, python-docs {args.profile}, words 150/30, hybrid top-20 -> top-5")
    for mode in ("hybrid", "rerank"):
        mrr = (1 / table[f"{mode} rank"]).fillna(0).mean()
        print(f"  {mode:<7} recall@5 {table[f'{mode} recall@5'].mean():.3f}   MRR@10 {mrr:.3f}")
    for phase, ms in timings.items():
        print(f"  rerank latency, {phase} sentence cache: p50 {statistics.median(ms):.0f} ms, "
              f"p95 {sorted(ms)[int(0.95 * (len(ms) - 1))]:.0f} ms per query")


if __name__ == "__main__":
    main()
