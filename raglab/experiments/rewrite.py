"""Query rewriting for multi-part questions (a stretch experiment of the course): search with
sub-queries, and its measurement.

A question such as "How do I create a virtual environment, and how can my code check whether it
is running inside one?" needs two passages, and one query vector sits between them. Rewriting
splits it into standalone sub-queries (a rewriter of ``raglab.experiments.rewriters``: the rules of
``raglab.experiments.rewrite_rules`` or the configured model), retrieves for each (and for the
original question), and fuses the lists with RRF:

- ``rewrite_search``: retrieval for the question and each sub-query, fused with RRF.
- ``run_rewrite_experiment``: evidence recall@k on the golden set's multi-passage questions
  without and with rewriting, with bootstrap intervals and a paired test.
"""
from __future__ import annotations

from collections.abc import Callable

from raglab.base import config
from raglab.book.chunking import ChunkSettings
from raglab.infra.corpora import entry
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.evaluation.golden import golden_file, load_golden, user_for
from raglab.evaluation.metrics import evidence_recall
from raglab.evaluation.scoreboard import evaluate
from raglab.evaluation.statistics import bootstrap_ci, paired_test
from raglab.experiments.rewriters import make_rewriter
from raglab.book.fusion import RRF_K, rrf
from raglab.base.records import Hit
from raglab.book.rerank import SentenceMaxReranker
from raglab.book.retrieve import CANDIDATES, Retriever
from raglab.infra.assemble import get_index


def _rewrite_with(rewriter, question: str) -> list[str]:
    fn: Callable[[str], list[str]] = rewriter.rewrite if hasattr(rewriter, "rewrite") else rewriter
    return list(fn(question))


def _ran(rewriter) -> str:
    return getattr(rewriter, "last_ran", None) or getattr(rewriter, "name", None) or getattr(
        rewriter, "__name__", type(rewriter).__name__)


# ---------------------------------------------------------------- search with sub-queries

def rewrite_search(retriever, question: str, rewriter, mode: str = "hybrid", k: int = 5,
                   user: tuple[str, ...] | None = None, depth: int | None = None):
    """Retrieve for the original question and for each sub-query, fuse the lists with RRF (k=60), cut to ``k``.

    Each list is ``max(k, depth)`` deep (``depth`` defaults to the hybrid candidate depth, 20); a
    rewriter that returns only the question gives plain search. Each ``Hit.ranks`` maps the queries
    (``q0`` = the original) to the rank they gave the chunk.
    """

    queries = []
    for q in [question] + _rewrite_with(rewriter, question):
        q = " ".join(str(q).split())
        if q and q.lower() not in (x.lower() for x in queries):
            queries.append(q)
    deep = k if len(queries) == 1 else max(k, depth or CANDIDATES)
    lists, first = {}, {}
    for n, q in enumerate(queries):
        hits = retriever.search(q, mode, deep, user)
        lists[f"q{n}"] = [h.id for h in hits]
        for h in hits:
            first.setdefault(h.id, h)
    ranks = {i: {name: ids.index(i) + 1 for name, ids in lists.items() if i in ids} for i in first}
    return [Hit(i, first[i].doc, s, n, ranks[i]) for n, (i, s) in enumerate(rrf(lists, RRF_K)[:k], 1)]


# ---------------------------------------------------------------- the experiment

def _verdict(name: str, n: int, k: int, base: dict, rew: dict, paired: dict, better: int, worse: int) -> str:
    diff = paired["diff"]
    move = "raises" if diff > 0 else "lowers" if diff < 0 else "leaves"
    verdict = ("a real gain" if paired["significant"] and diff > 0 else "a real loss" if paired["significant"]
               else "within noise on this many questions")
    if base["value"] == 1.0 and diff == 0:
        verdict = "no room to gain: every question already finds all its evidence without rewriting"
    values = f"at {base['value']:.3f}" if diff == 0 else f"from {base['value']:.3f} to {rew['value']:.3f}"
    return (f"rewriting with {name} {move} evidence recall@{k} on the {n} multi-passage questions {values} "
            f"(better on {better}, worse on {worse}; paired difference {diff:+.3f} "
            f"[{paired['ci_low']:+.3f}, {paired['ci_high']:+.3f}]): {verdict}")


def run_rewrite_experiment(corpus: str = "python-docs", profile: str | None = None, rewriter=None,
                           mode: str = "hybrid", k: int = 5, golden=None, embedder=None) -> dict:
    """Evidence recall@k on the multi-passage golden questions (type ``multi``) without and with rewriting.

    The index uses the corpus's default chunking (``raglab.infra.corpora``); each question is
    asked with its access groups; the baseline is ``raglab.evaluation.evaluate``'s recall, the rewritten
    one ``evidence_recall`` of ``rewrite_search``'s top ``k``.

    Parameters:
        corpus, profile: the corpus and profile (None reads ``RAGLAB_PROFILE``).
        rewriter: a rewriter (``make_rewriter``); None picks the model when ``LLM_BASE_URL`` is set, else the rules.
        mode: the retrieval mode each (sub-)query runs.
        k: the cut-off of evidence recall.
        golden: a golden-set file; None takes the corpus's own.
        embedder: the ``Embedder`` (default: the packaged MiniLM).
    """

    profile = config.profile(profile)
    strategy, prefix = entry(corpus).chunking
    settings = ChunkSettings(strategy, prefix=prefix)
    embedder = embedder or Embedder()
    questions = [q for q in load_golden(golden or golden_file(corpus, profile), load_corpus(corpus, profile))
                 if q.type == "multi"]
    if not questions:
        raise ValueError(f"the golden set of {corpus!r} has no multi-passage (type 'multi') questions")
    index = get_index(corpus, profile, settings, embedder)
    reranker = None
    if mode == "rerank":
        reranker = SentenceMaxReranker(embedder)
    retriever = Retriever(index, embedder, reranker)
    rewriter = rewriter if rewriter is not None else make_rewriter("auto")
    baseline = evaluate(retriever, questions, k=k, mode=mode)
    rows = []
    for q, base in zip(questions, baseline):
        subs = _rewrite_with(rewriter, q.question)
        hits = rewrite_search(retriever, q.question, lambda _q, s=subs: s, mode, k, user_for(q))
        chunks = [index.chunk(h.id) for h in hits]
        rows.append({"id": q.id, "question": q.question, "sub_queries": subs, "rewriter": _ran(rewriter),
                     "recall_without": base.recall, "recall_with": evidence_recall(chunks, q, k),
                     "retrieved_without": base.retrieved[:k], "retrieved_with": [h.id for h in hits]})
    without, with_ = [r["recall_without"] for r in rows], [r["recall_with"] for r in rows]
    ran = list(dict.fromkeys(r["rewriter"] for r in rows))
    result = {"corpus": corpus, "profile": profile, "chunking": settings.label(), "mode": mode, "k": k,
              "n": len(rows), "rewriter": " + ".join(ran), "note": getattr(rewriter, "note", None),
              "questions": rows, "baseline": bootstrap_ci(without), "rewritten": bootstrap_ci(with_),
              "paired": paired_test(without, with_)}
    better = sum(b > a for a, b in zip(without, with_))
    worse = sum(b < a for a, b in zip(without, with_))
    result["verdict"] = _verdict(result["rewriter"], len(rows), k, result["baseline"], result["rewritten"],
                                 result["paired"], better, worse)
    return result


def format_rewrite(result: dict) -> str:
    """The experiment as a short plain-text table, the two intervals and the verdict."""
    k = result["k"]
    lines = [(f"query rewriting on {result['corpus']} ({result['profile']}, {result['chunking']}, {result['mode']}): "
              f"{result['n']} multi-passage questions, rewriter {result['rewriter']}"),
             f"{'id':<10}{'without':>9}{'with':>7}   sub-queries"]
    for r in result["questions"]:
        subs = " | ".join(r["sub_queries"])
        lines.append(f"{r['id']:<10}{r['recall_without']:>9.3f}{r['recall_with']:>7.3f}   "
                     + (subs if len(subs) <= 100 else subs[:97] + "..."))
    for key, label in (("baseline", "without rewriting"), ("rewritten", "with rewriting")):
        v = result[key]
        lines.append(f"recall@{k} {label:<18} {v['value']:.3f} [{v['ci_low']:.3f}, {v['ci_high']:.3f}]")
    if result.get("note"):
        lines.append(f"note: {result['note']}")
    lines.append(result["verdict"])
    return "\n".join(lines)
