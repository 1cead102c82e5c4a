"""The training lab (issue 25): mine pairs from the full docs, train, and score on the dev split only.

    python scripts/train_lab.py --pairs 6000 --which cross [--kinds heading,cloze] [--lr 2e-5] ...

Prints dev MRR@10, hit@1, evidence recall@5 and doc hit@5 of the default (hybrid) and of the
trained variants, with paired differences against the default, and appends one JSON line per run
to evals/results/training-lab.jsonl. The test split is never read here.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from raglab import config
from raglab.assistant import build_assistant
from raglab.chunking import ChunkSettings, chunk_corpus
from raglab.corpora import entry, golden_path
from raglab.corpus import load_corpus
from raglab.evaluation.golden import load_golden
from raglab.evaluation.headline import paired, per_question, summarize
from raglab.evaluation.scoreboard import evaluate
from raglab.evaluation.statistics import interval_text, paired_text
from raglab.training import KINDS, TrainSettings, describe, mine_pairs, train_bi_encoder, train_cross_encoder

OUT = config.PROJECT_ROOT / "evals" / "results" / "training-lab.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=6000)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--which", default="cross", choices=("bi", "cross", "both"))
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--cross-max-length", type=int, default=256)
    ap.add_argument("--dense-negatives", action="store_true")
    ap.add_argument("--negatives", default="page", choices=("page", "bm25"))
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    corpus, profile = "python-docs", "full"
    docs = load_corpus(corpus, profile)
    strategy, prefix = entry(corpus).chunking
    chunks = chunk_corpus(docs, ChunkSettings(strategy, prefix=prefix))
    questions = load_golden(golden_path(corpus, profile), docs)
    dev = [q for q in questions if q.split == "dev" and q.type != "unanswerable"]
    settings = TrainSettings(pairs=a.pairs, kinds=tuple(a.kinds.split(",")), epochs=a.epochs, batch_size=a.batch,
                             learning_rate=a.lr, max_length=a.max_length, cross_max_length=a.cross_max_length,
                             negatives=a.negatives).check()
    t = time.perf_counter()
    default = build_assistant(corpus, profile)
    dense_negatives = None
    if a.dense_negatives:
        index, embedder = default.retriever.index, default.retriever.embedder
        dense_negatives = lambda qs: [[r for r, _ in index.dense_search(v, 20, None)] for v in embedder.encode(qs)]  # noqa: E731
    pairs = mine_pairs(chunks, settings.pairs, settings.kinds, settings.seed,
                       forbidden=[q.question for q in questions], dense_negatives=dense_negatives,
                       negatives=settings.negatives)
    mined = time.perf_counter() - t
    print(f"{len(pairs)} pairs mined in {mined:.0f} s")
    systems = {"default hybrid": per_question(evaluate(default.retriever, dev, 5, "hybrid"), dev)}
    models = {}
    if a.which in ("bi", "both"):
        bi = train_bi_encoder(pairs, settings)
        print(describe(bi))
        models["bi"] = bi.record
        trained = build_assistant(corpus, profile, model=bi.model_id)
        for mode in ("dense", "hybrid"):
            systems[f"trained bi {mode}"] = per_question(evaluate(trained.retriever, dev, 5, mode), dev)
    if a.which in ("cross", "both"):
        cross = train_cross_encoder(pairs, settings)
        print(describe(cross))
        models["cross"] = cross.record
        reranked = build_assistant(corpus, profile, reranker=f"trained/{cross.name}")
        systems["default hybrid + trained cross"] = per_question(evaluate(reranked.retriever, dev, 5, "rerank"), dev)
    ids = [q.id for q in dev]
    base = systems["default hybrid"]
    row = {"label": a.label, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "settings": asdict(settings),
           "dense_negatives": a.dense_negatives, "pairs": len(pairs),
           "models": {k: {f: v[f] for f in ("name", "seconds", "batches")} | {"loss_first10": sum(v["loss"][:10]) / 10,
                                                                             "loss_last10": sum(v["loss"][-10:]) / 10}
                      for k, v in models.items()},
           "dev": {}}
    for name, rows in systems.items():
        scores = summarize(rows, ids)
        diff = paired(base, rows, ids) if name != "default hybrid" else {}
        row["dev"][name] = {m: {"value": s["value"], "vs_default": diff.get(m)} for m, s in scores.items()}
        print(f"{name:36s} " + "  ".join(f"{m} {interval_text(s)}" for m, s in scores.items()))
        for m, d in diff.items():
            print(f"{'':36s}   {m}: {paired_text(d)}")
    with OUT.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
