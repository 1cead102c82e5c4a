"""bfloat16 against float32 embeddings on a golden set: evidence recall@5 and MRR@10 per question,
dense and hybrid, float32 minus bfloat16 with a paired bootstrap test (``paired_test``).

    python bench/embed_recall.py --profile small    # the small golden set; every vector both ways
    python bench/embed_recall.py --profile full     # the dev split of evals/python_docs_full.jsonl

Heading-aware chunks with prefixes by default (``--strategy``, ``--no-prefix`` to change).

On the full docs, float32 vectors for all 13,478 chunks would take over an hour on a loaded 2-core
machine (the bfloat16 ones are in the cache). So the float32 side is computed exactly on candidates:
for each question, the ``--depth`` chunks that the float32 query scores highest against the
bfloat16 vectors are re-embedded in float32, the others keep their bfloat16 vector. A chunk left out
cannot enter the float32 top 20 (the hybrid's depth) when its score is below the 20th float32 score
by more than ``||v_bf16 - v_fp32||``, bounded by the largest such distance among the re-embedded
chunks (the one assumption: the chunks not re-embedded deviate no more than the thousands that
were); the run prints how many questions pass that check, and a question failing it is re-done with
a deeper candidate set.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from raglab.book.bm25 import BM25
from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.base.config import PROJECT_ROOT
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.evaluation.golden import load_golden, user_for
from raglab.evaluation.metrics import evidence_recall, first_relevant_rr
from raglab.evaluation.statistics import bootstrap_ci, paired_test
from raglab.infra.index import Index
from raglab.book.retrieve import CANDIDATES, Retriever
from raglab.infra.stores.faiss_store import FaissStore
from raglab.infra.tokenizer import load_tokenizer

MODES = ("dense", "hybrid")


def questions_for(profile: str, docs) -> tuple[str, list]:
    """The answerable questions: the small golden set, or the full set's dev split (never test)."""
    if profile == "small":
        path = PROJECT_ROOT / "evals" / "python_docs_golden.jsonl"
        chosen = load_golden(path, docs)
    else:
        path = PROJECT_ROOT / "evals" / "python_docs_full.jsonl"
        chosen = [q for q in load_golden(path, docs) if q.extra.get("split") == "dev"]
    return f"{path.name}{'' if profile == 'small' else ' (dev split)'}", [q for q in chosen if q.evidence]


def in_memory_index(chunks, vectors: np.ndarray, bm25: BM25) -> Index:
    """An ``Index`` over these vectors (nothing written)."""
    dense = FaissStore(vectors.shape[1])
    dense.add(vectors)
    return Index(Path("."), {"version_id": "bench"}, chunks, dense, bm25)


def scores(retriever: Retriever, questions) -> dict:
    """Per mode, per question: recall@5, reciprocal rank within 10, and the top-10 ids."""
    out = {m: {"recall@5": [], "mrr@10": [], "top10": []} for m in MODES}
    for q in questions:
        for mode in MODES:
            hits = retriever.search(q.question, mode, 10, user_for(q))
            chunks = [retriever.index.chunks[retriever.index.row_of[h.id]] for h in hits]
            out[mode]["recall@5"].append(evidence_recall(chunks, q, 5))
            out[mode]["mrr@10"].append(first_relevant_rr(chunks, q, 10))
            out[mode]["top10"].append([h.id for h in hits])
    return out


def candidates_fp32(texts, v_bf: np.ndarray, q_fp: np.ndarray, fp: Embedder, depth: int, need: int = CANDIDATES):
    """Float32 vectors for each question's top ``depth`` chunks (the rest bfloat16), checked as the
    module docstring says; questions that fail the check get a deeper candidate set, up to 8x."""
    v_mix, done = v_bf.copy(), np.zeros(len(texts), dtype=bool)
    todo, d = list(range(len(q_fp))), depth
    while True:
        rows = sorted({int(r) for i in todo for r in np.argsort(-(v_bf @ q_fp[i]))[:d]} - set(np.flatnonzero(done)))
        if rows:
            v_mix[rows] = fp.encode([texts[r] for r in rows], progress=True)
            done[rows] = True
        bound = float(np.linalg.norm(v_mix[done] - v_bf[done], axis=1).max())
        margins = []
        for i in range(len(q_fp)):
            mixed = v_mix @ q_fp[i]
            nth = np.sort(mixed[done])[::-1][need - 1]
            outside = (v_bf[~done] @ q_fp[i]).max() if (~done).any() else -np.inf
            margins.append(float(nth - outside - bound))
        todo = [i for i, m in enumerate(margins) if m <= 0]
        if not todo or d >= 8 * depth:
            return v_mix, done, bound, margins
        d *= 2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", choices=("small", "full"), default="small")
    p.add_argument("--strategy", default="headings")
    p.add_argument("--no-prefix", action="store_true")
    p.add_argument("--depth", type=int, default=50, help="full profile: float32 candidates per question (default 50)")
    p.add_argument("--exact", action="store_true", help="full profile: embed every chunk in float32 (over an hour)")
    args = p.parse_args()

    docs = load_corpus("python-docs", args.profile)
    settings = ChunkSettings(args.strategy, prefix=not args.no_prefix)
    chunks = chunk_corpus(docs, settings, tokenizer=load_tokenizer())
    texts = [c.indexed_text for c in chunks]
    golden, questions = questions_for(args.profile, docs)
    print(f"python-docs ({args.profile}), {settings.label()}: {len(chunks):,} chunks; {golden}: "
          f"{len(questions)} answerable questions")
    bf, fp = Embedder(precision="bfloat16"), Embedder(precision="float32")
    t = time.perf_counter()
    v_bf = bf.encode(texts)
    print(f"bfloat16 vectors: {bf.last_stats['hits']:,} from the cache, {bf.last_stats['misses']:,} embedded "
          f"({time.perf_counter() - t:.0f} s)")
    q_fp = fp.encode([q.question for q in questions])
    t = time.perf_counter()
    if args.profile == "small" or args.exact:
        v_fp, how = fp.encode(texts), "every chunk"
        print(f"float32 vectors ({how}): {fp.last_stats['hits']:,} from the cache, {fp.last_stats['misses']:,} embedded "
              f"({time.perf_counter() - t:.0f} s)")
        exact = np.ones(len(texts), dtype=bool)
    else:
        v_fp, exact, bound, margins = candidates_fp32(texts, v_bf, q_fp, fp, args.depth)
        ok = sum(m > 0 for m in margins)
        print(f"float32 vectors for {exact.sum():,} candidate chunks ({time.perf_counter() - t:.0f} s); "
              f"largest ||v_bf16 - v_fp32|| among them {bound:.2e}; float32 top {CANDIDATES} provably exact for "
              f"{ok}/{len(margins)} questions (smallest margin {min(margins):.3f})")
    dev = 1 - (v_bf[exact] * v_fp[exact]).sum(axis=1)
    print(f"1 - cos(bfloat16, float32) over {exact.sum():,} chunks: max {dev.max():.1e}, mean {dev.mean():.1e}")

    bm25 = BM25(texts)
    runs = {"float32": scores(Retriever(in_memory_index(chunks, v_fp, bm25), fp), questions),
            "bfloat16": scores(Retriever(in_memory_index(chunks, v_bf, bm25), bf), questions)}
    print(f"\n{'mode':<8}{'metric':<10}{'float32':>24}{'bfloat16':>24}   bfloat16 - float32 (paired)")
    for mode in MODES:
        for metric in ("recall@5", "mrr@10"):
            a, b = runs["float32"][mode][metric], runs["bfloat16"][mode][metric]
            ca, cb, t = bootstrap_ci(a), bootstrap_ci(b), paired_test(a, b)
            better = sum(y > x for x, y in zip(a, b))
            worse = sum(y < x for x, y in zip(a, b))
            print(f"{mode:<8}{metric:<10}{_ci(ca):>24}{_ci(cb):>24}   {t['diff']:+.3f} [{t['ci_low']:+.3f}, "
                  f"{t['ci_high']:+.3f}], p = {t['p_value']:.2f}; better on {better}, worse on {worse}")
        same = sum(x == y for x, y in zip(runs["float32"][mode]["top10"], runs["bfloat16"][mode]["top10"]))
        print(f"{'':<8}identical top 10 on {same}/{len(questions)} questions")


def _ci(c: dict) -> str:
    return f"{c['value']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"


if __name__ == "__main__":
    main()
