"""The chunking lab: every chunking strategy with dense, BM25 and hybrid retrieval on one split of a
golden set, with what each strategy costs.

``run_race`` builds (or loads) one index per chunking and scores every answerable question of the
split with each retriever, plain (no levers, no reranker), so the chunking is the only thing that
changes between rows. Each row has:

- quality: evidence recall@5 and hit@5 (some evidence in the top 5) and MRR@10, each with a 95%
  bootstrap interval, and recall@5's paired difference from the default chunking with the same
  retriever (``vs_default``: difference and paired 95% interval, which decides; a p-value for information);
- cost: chunks, mean and p95 tokens a chunk (the model's word pieces, [CLS] and [SEP] included), the
  share over the model's 256 tokens (what it truncates), the index's build time (recorded when it was
  built, with the embedding cache's misses beside it: a warm cache builds fast) and size on disk, and
  the tokens the top 5 hand the generator (``context_tokens``: the parents, for the parent strategy).

A learner's chunker enters the same race: ``register_chunker("mine", fn)`` and add
``ChunkSettings("mine")`` to ``chunkers``. ``save_race`` and ``load_race`` keep a run as JSON
(``evals/results/chunking-lab.json`` is the whole docs' dev split, made by ``raglab race``).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from raglab.book.chunking import ChunkSettings
from raglab.evaluation.chunk_checks import check_chunks
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.base.config import PROJECT_ROOT
from raglab.infra.corpora import entry
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.evaluation.golden import golden_file, load_golden
from raglab.evaluation.scoreboard import evaluate
from raglab.evaluation.statistics import bootstrap_ci, interval_text, paired_test
from raglab.base.files import atomic_open
from raglab.infra.packaged_models import MINILM_MAX_TOKENS
from raglab.book.retrieve import Retriever
from raglab.infra.assemble import get_index

RACE = (ChunkSettings("words"), ChunkSettings("chars"), ChunkSettings("large"), ChunkSettings("headings"),
        ChunkSettings("headings", prefix=True), ChunkSettings("recursive"), ChunkSettings("tokens"),
        ChunkSettings("semantic"), ChunkSettings("parent"))
RACE_RETRIEVERS = ("dense", "bm25", "hybrid")
K = 5
# the committed races on the whole docs (``scripts/chunking_lab.py``): the dev split, and the test split read once
RESULTS = {"dev": PROJECT_ROOT / "evals" / "results" / "chunking-lab.json",
           "test": PROJECT_ROOT / "evals" / "results" / "chunking-lab-test.json"}


def default_chunking(corpus: str = "python-docs") -> ChunkSettings:
    """The chunking the corpus's assistant uses (``raglab.infra.corpora``): the race's reference row."""
    strategy, prefix = entry(corpus).chunking if entry(corpus) else ("words", False)
    return ChunkSettings(strategy, prefix=prefix)


def race_questions(corpus: str, profile: str | None, split: str | None, golden=None):
    """The answerable questions of one split (``None``: all of them) of the corpus's golden set."""
    path = golden or golden_file(corpus, profile)
    return [q for q in load_golden(path, load_corpus(corpus, profile), split) if q.type != "unanswerable"]


def index_costs(index, tokens: list[int]) -> dict:
    """What an index costs: chunks, tokens a chunk (``tokens``: each chunk's count; mean, p95, share over
    the model's limit), build seconds and embedding-cache misses as recorded when it was built, and
    megabytes on disk."""
    tokens = np.asarray(tokens)
    size = sum(f.stat().st_size for f in Path(index.path).iterdir()) if index.path else 0
    stats = index.manifest.get("embed_stats") or {}
    return {"chunks": len(index.chunks), "mean_tokens": round(float(tokens.mean()), 1),
            "p95_tokens": int(np.percentile(tokens, 95)),
            "over_limit": round(float((tokens > MINILM_MAX_TOKENS).mean()), 4),
            "index_seconds": index.manifest.get("build_seconds"), "embed_misses": stats.get("misses"),
            "index_mb": round(size / 1e6, 1)}


def run_race(corpus: str = "python-docs", profile: str | None = None, split: str | None = "dev",
             chunkers=RACE, retrievers=RACE_RETRIEVERS, embedder=None, golden=None, default: ChunkSettings | None = None,
             progress=None):
    """Returns ``(table, per_question)``: a DataFrame with one row per (chunking, retriever) and one
    with a row per (chunking, retriever, question) (its type, recall@5, hit@5, reciprocal rank, and
    the tokens its top 5 hand the generator). ``default`` (the corpus's chunking when None) is the
    reference of the paired differences; it is raced even when ``chunkers`` leaves it out."""
    import pandas as pd  # lazy: only for tables

    embedder = embedder or Embedder()
    default = default or default_chunking(corpus)
    chunkers = list(dict.fromkeys([*chunkers, default]))    # the default raced once, last when not listed
    questions = race_questions(corpus, profile, split, golden)
    docs = load_corpus(corpus, profile)
    tok = load_tokenizer()
    rows, per_q = [], []
    for settings in chunkers:
        started = time.perf_counter()
        index = get_index(corpus, profile, settings, embedder)
        tokens = token_lengths([c.indexed_text for c in index.chunks], tok)    # counted once a chunking
        costs = index_costs(index, tokens)
        checks = check_chunks(docs, index.chunks, tokens=tokens)
        passages = index.passages()
        passage_tokens = dict(zip([c.id for c in passages], tokens if passages is index.chunks else
                                  token_lengths([c.indexed_text for c in passages], tok)))
        retriever = Retriever(index, embedder)
        for mode in retrievers:
            results = evaluate(retriever, questions, k=K, mode=mode)
            for q, r in zip(questions, results):
                per_q.append({"chunking": settings.label(), "retriever": mode, "id": q.id, "type": q.type,
                              f"recall@{K}": r.recall, f"hit@{K}": float(r.recall > 0), "rr": r.rr,
                              "context_tokens": sum(passage_tokens[i] for i in r.retrieved[:K])})
            row = {"chunking": settings.label(), "strategy": settings.strategy, "retriever": mode,
                   "questions": len(results), **costs, "uncovered_words": checks["uncovered"],
                   "overlapped_words": round(checks["overlapped"] / max(checks["words"], 1), 4),
                   "context_tokens": round(float(np.mean([p["context_tokens"] for p in per_q[-len(results):]])), 1)}
            for name, values in ((f"recall@{K}", [r.recall for r in results]),
                                 (f"hit@{K}", [float(r.recall > 0) for r in results]), ("mrr", [r.rr for r in results])):
                ci = bootstrap_ci(values)
                row.update({name: ci["value"], f"{name}_lo": ci["ci_low"], f"{name}_hi": ci["ci_high"]})
            rows.append(row)
        if progress:
            progress(f"{settings.label()}: {costs['chunks']} chunks, {time.perf_counter() - started:.0f} s")
    table, per_question = pd.DataFrame(rows), pd.DataFrame(per_q)
    return with_differences(table, per_question, default.label()), per_question


def with_differences(table, per_question, default: str, metric: str = f"recall@{K}"):
    """``table`` with each row's paired difference in ``metric`` from the default chunking's row with the
    same retriever, on the same questions: ``diff``, ``diff_lo``, ``diff_hi``, ``p_value``."""
    table = table.copy()
    for col in ("diff", "diff_lo", "diff_hi", "p_value"):
        table[col] = np.nan
    for i, row in table.iterrows():
        mine = per_question[(per_question.chunking == row.chunking) & (per_question.retriever == row.retriever)]
        base = per_question[(per_question.chunking == default) & (per_question.retriever == row.retriever)]
        if base.empty:
            continue
        base = base.set_index("id").loc[mine["id"], metric]
        test = paired_test(base.to_numpy(), mine[metric].to_numpy())
        table.loc[i, ["diff", "diff_lo", "diff_hi", "p_value"]] = [test["diff"], test["ci_low"], test["ci_high"], test["p_value"]]
    return table


def save_race(path: str | Path, table, per_question, meta: dict) -> Path:
    """Write a race as JSON (``meta``: corpus, profile, split, when, how long), atomically."""
    path = Path(path)
    record = {**meta, "table": json.loads(table.to_json(orient="records")),
              "per_question": json.loads(per_question.to_json(orient="records"))}
    with atomic_open(path) as fh:
        json.dump(record, fh, indent=1)
    return path


def load_race(path: str | Path = RESULTS["dev"]):
    """``(table, per_question, meta)`` of a saved race (default: the whole docs' dev split, committed)."""
    import pandas as pd

    record = json.loads(Path(path).read_text(encoding="utf-8"))
    table, per_question = pd.DataFrame(record.pop("table")), pd.DataFrame(record.pop("per_question"))
    return table, per_question, record


def race_frame(table, retriever: str = "hybrid"):
    """One retriever's rows as a learner reads them: cost, then quality as ``value [low, high]``, then
    the paired difference from the default, best recall@5 first."""
    rows = table[table.retriever == retriever].sort_values(["recall@5", "mrr"], ascending=False)

    def interval(row, name):
        return interval_text({"value": row[name], "ci_low": row[name + "_lo"], "ci_high": row[name + "_hi"]})

    out = rows[["chunking", "chunks", "mean_tokens", "p95_tokens", "over_limit", "index_seconds", "index_mb",
                "context_tokens"]].copy()
    out["over_limit"] = (out["over_limit"] * 100).round(1).astype(str) + "%"
    out["recall@5"] = [interval(r, "recall@5") for _, r in rows.iterrows()]
    out["hit@5"] = [interval(r, "hit@5") for _, r in rows.iterrows()]
    out["MRR@10"] = [interval(r, "mrr") for _, r in rows.iterrows()]
    out["recall@5 vs default"] = [f"{r['diff']:+.3f} [{r['diff_lo']:+.3f}, {r['diff_hi']:+.3f}]" for _, r in rows.iterrows()]
    return out.rename(columns={"mean_tokens": "tokens (mean)", "p95_tokens": "tokens (p95)", "over_limit": "over 256",
                               "index_seconds": "index s", "index_mb": "index MB",
                               "context_tokens": "tokens to the generator"}).set_index("chunking")


def race_summary(dev, test, retriever: str = "hybrid", metric: str = f"recall@{K}", default: str | None = None) -> str:
    """One sentence on a race: the best chunking on dev besides the default, and how its difference from
    the default read on test (the committed whole-docs runs in notebook 07's summary)."""
    default = default or default_chunking().label()
    rows = dev[(dev.retriever == retriever) & (dev.chunking != default)].sort_values([metric, "mrr"], ascending=False)
    best = rows.iloc[0]
    on_test = test[(test.retriever == retriever) & (test.chunking == best.chunking)]
    read = (f"on test {on_test['diff'].iloc[0]:+.3f} [{on_test['diff_lo'].iloc[0]:+.3f}, {on_test['diff_hi'].iloc[0]:+.3f}]"
            if len(on_test) else "not read on test")
    return (f"Of {dev.chunking.nunique()} chunkings raced on the whole docs' dev split ({retriever}), the best besides "
            f"the default is {best.chunking}: {metric} {best[metric]:.3f}, {best['diff']:+.3f} "
            f"[{best['diff_lo']:+.3f}, {best['diff_hi']:+.3f}] from the default on dev, {read}.")
