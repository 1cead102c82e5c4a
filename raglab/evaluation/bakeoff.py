"""The chunking x retriever bake-off: every chunker with every retriever on one golden set.

Each cell reports recall@3, recall@5 and MRR with bootstrap intervals, and latency. The winner is the
best row (recall@5, then MRR, then latency), with a paired test against the runner-up saying whether
the gap is more than noise. Whether it replaces the course's baseline cell is the course's one rule
(``keep_or_default``): only when its paired interval of gain on the same (dev) questions is above 0.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from raglab.book.chunking import ChunkSettings
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.infra.embedder import Embedder
from raglab.evaluation.golden import answerable_questions
from raglab.evaluation.scoreboard import evaluate
from raglab.evaluation.statistics import Choice, bootstrap_ci, choose, paired_test, paired_text
from raglab.book.rerank import SentenceMaxReranker
from raglab.book.retrieve import Retriever
from raglab.infra.assemble import get_index
from raglab.infra.corpora import save_choice

CHUNKERS = (ChunkSettings("words"), ChunkSettings("chars"), ChunkSettings("headings"),
            ChunkSettings("headings", prefix=True))
RETRIEVERS = ("dense", "bm25", "hybrid", "rerank")
BASELINE_CELL = ("words 150/30", "hybrid")      # the course's baseline (raglab.evaluation.baseline): the default


def run_bakeoff(corpus: str = "python-docs", profile: str | None = None, golden: str | Path | None = None,
                embedder=None, chunkers=CHUNKERS, retrievers=RETRIEVERS, k: int = 5, split: str | None = None):
    """Returns ``(table, per_question)``: a DataFrame with one row per (chunking, retriever), and the
    per-question recall@5 lists behind it (for paired comparisons). ``split`` keeps one split of a split
    golden set (``dev`` to choose on)."""
    import pandas as pd  # lazy: only for tables

    embedder = embedder or Embedder()
    questions = answerable_questions(corpus, profile, golden, split)
    tok = load_tokenizer()
    rows, per_question = [], {}
    for settings in chunkers:
        index = get_index(corpus, profile, settings, embedder)
        retriever = Retriever(index, embedder, SentenceMaxReranker(embedder))
        tokens = token_lengths([c.indexed_text for c in index.chunks], tok)
        for mode in retrievers:
            results = evaluate(retriever, questions, k=k, mode=mode)
            key = (settings.label(), mode)
            per_question[key] = [r.recall for r in results]
            row = {"chunking": settings.label(), "retriever": mode, "chunks": len(index.chunks),
                   "mean_tokens": round(float(np.mean(tokens)), 1), "over_256": round(float(np.mean(np.array(tokens) > 256)), 3)}
            for name, values in [("recall@3", [r.recall3 for r in results]), (f"recall@{k}", [r.recall for r in results]),
                                 ("mrr", [r.rr for r in results])]:
                ci = bootstrap_ci(values)
                row.update({name: ci["value"], f"{name}_lo": ci["ci_low"], f"{name}_hi": ci["ci_high"]})
            row["latency_p50_ms"] = round(float(np.median([r.retrieve_ms for r in results])), 1)
            rows.append(row)
    return pd.DataFrame(rows), per_question


def choose_winner(table, per_question: dict, k: int = 5, latency: bool = True) -> tuple[tuple[str, str], str]:
    """The best (chunking, retriever) and a rationale read from the numbers (``latency=False`` leaves
    the machine-dependent timing out of the text)."""
    metric = f"recall@{k}"
    ranked = table.sort_values([metric, "mrr", "latency_p50_ms"], ascending=[False, False, True]).reset_index(drop=True)
    best, runner = ranked.iloc[0], ranked.iloc[1]
    bkey, rkey = (best.chunking, best.retriever), (runner.chunking, runner.retriever)
    test = paired_test(per_question[rkey], per_question[bkey])
    worst = ranked.iloc[-1]
    spread = best[metric] - worst[metric]
    lines = [f"winner: {best.chunking} + {best.retriever}: {metric} {best[metric]:.3f} "
             f"[{best[f'{metric}_lo']:.3f}, {best[f'{metric}_hi']:.3f}], MRR {best.mrr:.3f}"
             + (f", {best.latency_p50_ms:.0f} ms per query" if latency else ""),
             f"runner-up: {runner.chunking} + {runner.retriever}: {metric} {runner[metric]:.3f}; paired difference "
             + paired_text(test) + " -> "
             + ("a real gain" if test["significant"] else "within noise on this many questions; MRR and latency break the tie"),
             f"the whole table spans {spread:.3f} in {metric} (worst: {worst.chunking} + {worst.retriever})"]
    return bkey, "\n".join(lines)


def keep_as_default(corpus: str, choice: Choice) -> Path | None:
    """Make the cell the rule kept a folder's default (``raglab.infra.corpora.save_choice``): its chunking, and
    reranking when its retriever is ``rerank`` (the assistant answers from hybrid search otherwise)."""
    chunking, retriever = choice.kept.split(" + ")
    settings = {s.label(): s for s in CHUNKERS}[chunking]
    return save_choice(corpus, settings.strategy, settings.prefix, retriever == "rerank",
                       f"kept by its bake-off on the dev split ({choice.kept})")


def keep_or_default(per_question: dict, candidate: tuple[str, str], default: tuple[str, str] = BASELINE_CELL,
                    k: int = 5, split: str = "dev") -> Choice:
    """The one rule on a bake-off: the candidate cell replaces the default only when the paired interval of
    its per-question recall@k gain is above 0 (``raglab.evaluation.statistics.choose``).

    >>> per_q = {("words 150/30", "hybrid"): [1, 0, 1, 0] * 4, ("headings", "rerank"): [1, 1, 1, 0] * 4}
    >>> keep_or_default(per_q, ("headings", "rerank")).kept
    'headings + rerank'
    """
    return choose(per_question[default], per_question[candidate], " + ".join(default), " + ".join(candidate),
                  metric=f"recall@{k}", split=split)
