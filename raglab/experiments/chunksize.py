"""Chunk size against the embedding model's limit (a stretch experiment of the course).

The course cuts 150-word chunks, but all-MiniLM-L6-v2 reads at most 256 word-piece tokens and
ignores the rest: on the Python docs, where code and identifiers split into many word pieces, a
150-word chunk is often longer than that. ``run_chunksize_experiment`` measures, for several
chunkers and sizes, how many chunks go over the limit and what recall@5 the dense and hybrid
retrievers reach on the answerable golden questions, each with a bootstrap interval, and says
from the numbers whether the default truncates and whether recall follows chunk size.

Word windows keep the course's overlap ratio (30 words for 150: 20%), character windows the
ratio of their own default (80 characters for 500: 16%).
"""
from __future__ import annotations

import time

import numpy as np

from raglab.base import config
from raglab.book.chunking import DEFAULTS, ChunkSettings
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.infra.embedder import Embedder
from raglab.evaluation.golden import answerable_questions
from raglab.evaluation.scoreboard import evaluate
from raglab.evaluation.statistics import bootstrap_ci, paired_test, paired_text
from raglab.infra.packaged_models import MINILM_MAX_TOKENS
from raglab.book.retrieve import Retriever
from raglab.infra.assemble import get_index

OVERLAP_RATIO = {s: DEFAULTS[s][1] / DEFAULTS[s][0] for s in DEFAULTS}   # words 0.2, chars 0.16
MODES = ("dense", "hybrid")
DEFAULT = ChunkSettings("words", 150, 30)   # the course's chunking


def scaled(strategy: str, size: int) -> ChunkSettings:
    """A chunking of ``size`` units whose overlap keeps the strategy's default ratio.

    >>> scaled("words", 300).label(), scaled("chars", 1000).label()
    ('words 300/60', 'chars 1000/160')
    """
    return ChunkSettings(strategy, size, round(size * OVERLAP_RATIO[strategy]))


# Three word windows around the course's 150, the character window that fits the model and the heading-aware
# chunker: five settings, three of them (150 words, 500 characters, headings) already embedded by the milestones.
SIZES = (scaled("words", 100), scaled("words", 150), scaled("words", 300), scaled("chars", 500),
         ChunkSettings("headings"))


def _spearman(x, y) -> float | None:
    """Rank correlation (None when either side is constant or there are fewer than three points)."""
    from scipy.stats import spearmanr

    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return round(float(spearmanr(x, y).statistic), 3)


def run_chunksize_experiment(corpus: str = "python-docs", profile: str | None = None, sizes=SIZES, k: int = 5,
                             modes=MODES, golden=None, embedder=None, limit: int | None = None) -> dict:
    """For each chunking in ``sizes``: chunks, mean and p95 tokens, share over the model's limit, and
    evidence recall@k (``raglab.evaluation.evaluate``) per retrieval mode with a bootstrap interval, beside
    hit@k (a chunk of an evidence page in the top k), on the golden set's answerable questions. Indexes come
    from ``get_index`` (built once, cached).

    Parameters:
        corpus, profile: the corpus and profile (None reads ``RAGLAB_PROFILE``).
        sizes: the ``ChunkSettings`` to compare.
        k: the cut-off of evidence recall.
        modes: the retrieval modes to score.
        golden: a golden-set file; None takes the corpus's own (``raglab.infra.corpora``).
        embedder: the ``Embedder`` (default: the packaged MiniLM).
        limit: the token limit counted against (default: MiniLM's 256).
    """

    started = time.perf_counter()
    profile = config.profile(profile)
    limit = limit or MINILM_MAX_TOKENS
    embedder = embedder or Embedder()
    questions = answerable_questions(corpus, profile, golden)
    tok = load_tokenizer()
    rows, per_question = [], {}
    for settings in sizes:
        t = time.perf_counter()
        embedder.last_stats = {}
        index = get_index(corpus, profile, settings, embedder)
        index_seconds = time.perf_counter() - t
        embedded = int(embedder.last_stats.get("misses", 0))   # 0 when the index was loaded from disk
        tokens = np.array(token_lengths([c.indexed_text for c in index.chunks], tok))
        retriever = Retriever(index, embedder)
        label = settings.label()
        row = {"setting": label, **{f: getattr(settings.resolved(), f) for f in ("strategy", "size", "overlap")},
               "chunks": len(index.chunks), "mean_tokens": round(float(tokens.mean()), 1),
               "p95_tokens": round(float(np.percentile(tokens, 95)), 1), "over_limit": int((tokens > limit).sum()),
               "over_limit_share": round(float((tokens > limit).mean()), 4), "recall": {}, "hit": {},
               "embedded": embedded, "index_seconds": round(index_seconds, 2)}
        per_question[label] = {}
        for mode in modes:
            results = evaluate(retriever, questions, k=k, mode=mode)
            per_question[label][mode] = [r.recall for r in results]
            row["recall"][mode] = bootstrap_ci(per_question[label][mode])
            row["hit"][mode] = round(float(np.mean([r.hit for r in results])), 4)   # the right page in the top k
        rows.append(row)
    result = {"corpus": corpus, "profile": profile, "k": k, "limit": limit, "modes": list(modes),
              "n_questions": len(questions), "question_ids": [q.id for q in questions],
              "settings": rows, "per_question": per_question}
    result["trend"] = {mode: {"all": _spearman([r["mean_tokens"] for r in rows], [r["recall"][mode]["value"] for r in rows]),
                              "words": _spearman([r["mean_tokens"] for r in rows if r["strategy"] == "words"],
                                                 [r["recall"][mode]["value"] for r in rows if r["strategy"] == "words"])}
                       for mode in modes}
    result["spread"] = {}
    for mode in modes:
        ranked = sorted(rows, key=lambda r: r["recall"][mode]["value"])
        worst, best = ranked[0], ranked[-1]
        result["spread"][mode] = {"best": best["setting"], "worst": worst["setting"],
                                  "paired": paired_test(per_question[worst["setting"]][mode],
                                                        per_question[best["setting"]][mode])}
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["embedded"] = sum(r["embedded"] for r in rows)
    result["verdict"] = _verdict(result)
    return result


def _verdict(result: dict) -> str:
    """Two sentences read from the numbers: does the default truncate, does recall follow chunk size?"""
    rows, k, limit = result["settings"], result["k"], result["limit"]
    default = next((r for r in rows if r["setting"] == DEFAULT.label()), None)
    lines = []
    if default is not None:
        share = default["over_limit_share"]
        state = ("truncates" if share >= 0.05 else "barely truncates" if share > 0 else "does not truncate")
        lines.append(f"the course's {default['setting']} default {state} on {result['corpus']}: {share:.0%} of its "
                     f"{default['chunks']} chunks are over {limit} tokens (mean {default['mean_tokens']:.0f}, p95 "
                     f"{default['p95_tokens']:.0f}), so the dense model never reads their ends")
    fits = [r for r in rows if r["over_limit_share"] < 0.05]
    if fits:
        lines[-1:] = [(lines[-1] + "; " if lines else "") + "settings that fit (under 5% over): "
                      + ", ".join(r["setting"] for r in fits)]
    for mode in result["modes"]:
        spread, trend = result["spread"][mode], result["trend"][mode]
        values = [r["recall"][mode]["value"] for r in rows]
        test = spread["paired"]
        rho = trend["all"]
        tracks = test["significant"] and rho is not None and abs(rho) >= 0.7
        rho_text = "n/a" if rho is None else f"{rho:+.2f}"
        words_rho = "" if trend["words"] is None else f", word windows only {trend['words']:+.2f}"
        lines.append(f"{mode} recall@{k} spans {min(values):.3f}-{max(values):.3f} across settings (Spearman rho "
                     f"with mean tokens {rho_text}{words_rho}); best {spread['best']} vs worst {spread['worst']}: "
                     + paired_text(test) + " -> "
                     + (("recall tracks chunk size: " + ("longer" if rho > 0 else "shorter") + " chunks retrieve better")
                        if tracks else
                        (f"a {'rising' if rho > 0 else 'falling'} trend that the noise of {result['n_questions']} "
                         "questions cannot confirm") if rho is not None and abs(rho) >= 0.5 else
                        f"recall does not track chunk size beyond the noise of {result['n_questions']} questions"))
    return "\n".join(lines)


def format_chunksize(result: dict, timing: bool = True) -> str:
    """The experiment as a plain-text table, then the verdict (``timing=False`` leaves out the run's
    time and how many chunks it embedded, which depend on the machine and the cache)."""
    k, limit, modes = result["k"], result["limit"], result["modes"]
    head = f"{'setting':<18}{'chunks':>7}{'mean tok':>9}{'p95 tok':>8}{'>' + str(limit):>7}"
    head += "".join(f"   {m + f' recall@{k}':<25}" for m in modes)
    lines = [(f"chunk size vs MiniLM's {limit}-token limit on {result['corpus']} ({result['profile']}): "
              f"{result['n_questions']} answerable questions"), head]
    for r in result["settings"]:
        line = (f"{r['setting']:<18}{r['chunks']:>7}{r['mean_tokens']:>9.1f}{r['p95_tokens']:>8.0f}"
                f"{r['over_limit_share']:>7.1%}")
        for m in modes:
            v = r["recall"][m]
            line += f"   {v['value']:.3f} [{v['ci_low']:.3f}, {v['ci_high']:.3f}]   "
        lines.append(line.rstrip())
    if timing:
        lines.append(f"run: {result['seconds']:.1f} s, {result['embedded']} chunks embedded")
    lines.append(result["verdict"])
    return "\n".join(lines)


def plot_chunksize(result: dict):
    """Left: share of chunks over the limit per setting. Right: recall@k (95% whiskers) against mean
    tokens per chunk, one marker per setting and mode, with the limit as a vertical line."""
    import matplotlib.pyplot as plt  # lazy: only when a chart is drawn

    rows, k, limit = result["settings"], result["k"], result["limit"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.0), gridspec_kw={"width_ratios": [1, 1.4]})
    labels = [r["setting"] for r in rows]
    shares = [r["over_limit_share"] for r in rows]
    y = np.arange(len(rows))
    left.barh(y, shares, color=["#C44E52" if s >= 0.05 else "#4C72B0" for s in shares])
    for yi, s in zip(y, shares):
        left.text(s + 0.01, yi, f"{s:.0%}", va="center", fontsize=8)
    left.set_yticks(y, labels)
    left.invert_yaxis()
    left.set_xlim(0, 1.1)
    left.set_xlabel(f"share of chunks over {limit} tokens")
    left.set_title(f"Chunks the model truncates ({result['corpus']})", fontsize=10)
    markers = ["o", "s", "^", "D"]
    for n, mode in enumerate(result["modes"]):
        x = [r["mean_tokens"] for r in rows]
        v = np.array([r["recall"][mode]["value"] for r in rows])
        err = [v - np.array([r["recall"][mode]["ci_low"] for r in rows]),
               np.array([r["recall"][mode]["ci_high"] for r in rows]) - v]
        right.errorbar(x, v, yerr=err, fmt=markers[n % len(markers)], capsize=3, label=mode, alpha=0.85)
        if n == 0:
            for xi, vi, name in zip(x, v, labels):
                right.annotate(name, (xi, vi), xytext=(4, 4), textcoords="offset points", fontsize=7, alpha=0.7)
    right.axvline(limit, color="#C44E52", linestyle="--", linewidth=1.2, label=f"{limit}-token limit")
    right.set_xlabel("mean tokens per chunk")
    right.set_ylabel(f"recall@{k}")
    right.set_ylim(0, 1.05)
    right.set_title(f"recall@{k} with 95% intervals ({result['n_questions']} questions)", fontsize=10)
    right.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig
