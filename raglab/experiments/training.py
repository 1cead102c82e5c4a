"""Training on a corpus's own text (``raglab train``): the pairs from its default chunking with every
golden question kept out, both models trained (cached by content), and the base and trained
retrievers compared on the golden set's dev split (or, where a set has no split, on all of it).

The settings per profile are in ``PROFILE_SETTINGS``: the small profile trains in about three
minutes on a 2-core CPU (what CI and notebook 08 run), the full docs within an hour.
"""
from __future__ import annotations

import time
from dataclasses import replace

from raglab.assistant import build_assistant
from raglab.chunking import ChunkSettings, chunk_corpus
from raglab.corpora import entry, golden_path, registered
from raglab.corpus import load_corpus
from raglab.evaluation.golden import SPLITS, load_golden
from raglab.evaluation.headline import paired, per_question, summarize
from raglab.evaluation.scoreboard import evaluate
from raglab.evaluation.statistics import interval_text, paired_text
from raglab.training import (
    Pair,
    TrainSettings,
    Trained,
    describe,
    mine_pairs,
    train_bi_encoder,
    train_cross_encoder,
)

PROFILE_SETTINGS = {
    "small": TrainSettings(pairs=192, batch_size=16, max_length=96, cross_max_length=192),
    "full": TrainSettings(),
}
WHICH = ("bi", "cross")


def settings_for(profile: str, **changes) -> TrainSettings:
    """The profile's training settings with ``changes`` applied (e.g. ``pairs=400``)."""
    return replace(PROFILE_SETTINGS.get(profile, PROFILE_SETTINGS["small"]), **changes).check()


def golden_questions(corpus: str, profile: str, golden=None) -> list:
    """The golden set's questions (none for a corpus without one)."""
    if golden is None and not registered(corpus):
        return []
    try:
        path = golden or golden_path(corpus, profile)
    except ValueError:
        return []
    return load_golden(path, load_corpus(corpus, profile))


def corpus_pairs(corpus: str, profile: str, settings: TrainSettings, golden=None) -> list[Pair]:
    """The training triples of a corpus: its default chunking, ``settings.pairs`` of them, no golden
    question among the queries."""
    strategy, prefix = entry(corpus).chunking
    chunks = chunk_corpus(load_corpus(corpus, profile), ChunkSettings(strategy, prefix=prefix))
    forbidden = [q.question for q in golden_questions(corpus, profile, golden)]
    return mine_pairs(chunks, settings.pairs, settings.kinds, settings.seed, forbidden=forbidden)


def train(corpus: str = "python-docs", profile: str = "small", settings: TrainSettings | None = None,
          which: tuple[str, ...] = WHICH, progress: bool = True, golden=None) -> dict:
    """Mine the pairs and train the models named in ``which`` (``bi``, ``cross``); each is cached by
    the hash of its pairs, base model and settings. Returns ``{"pairs": [...], "bi": Trained, ...}``."""
    settings = (settings or settings_for(profile)).check()
    unknown = [w for w in which if w not in WHICH]
    if unknown:
        raise ValueError(f"unknown model {unknown[0]!r}: choose bi, cross or both")
    start = time.perf_counter()
    out: dict = {"pairs": corpus_pairs(corpus, profile, settings, golden), "settings": settings}
    out["mined_s"] = round(time.perf_counter() - start, 1)
    if "bi" in which:
        out["bi"] = train_bi_encoder(out["pairs"], settings, progress)
    if "cross" in which:
        out["cross"] = train_cross_encoder(out["pairs"], settings, progress)
    return out


def compare(corpus: str = "python-docs", profile: str = "small", bi: Trained | None = None,
            cross: Trained | None = None, split: str | None = "dev", golden=None) -> dict:
    """The base assistant's hybrid retrieval against the trained models on the golden set's
    answerable questions of ``split`` (all of them for a set without splits): per-question metrics,
    each system's means with intervals, and each trained system's paired difference from the base."""
    questions = [q for q in golden_questions(corpus, profile, golden) if q.type != "unanswerable"]
    if split in SPLITS and any(q.split for q in questions):
        questions = [q for q in questions if q.split == split]
    if not questions:
        raise ValueError(f"no golden questions to compare on for {corpus!r} ({profile})")
    base = build_assistant(corpus, profile)
    systems = {"base hybrid": per_question(evaluate(base.retriever, questions, 5, "hybrid"), questions)}
    if bi is not None:
        tuned = build_assistant(corpus, profile, model=bi.model_id)
        systems["trained bi-encoder, dense"] = per_question(evaluate(tuned.retriever, questions, 5, "dense"), questions)
        systems["trained bi-encoder, hybrid"] = per_question(evaluate(tuned.retriever, questions, 5, "hybrid"), questions)
    if cross is not None:
        reranked = build_assistant(corpus, profile, reranker=cross.model_id)
        systems["base hybrid + trained cross-encoder"] = per_question(
            evaluate(reranked.retriever, questions, 5, "rerank"), questions)
    ids = [q.id for q in questions]
    return {"corpus": corpus, "profile": profile, "split": split if any(q.split for q in questions) else "all",
            "questions": len(ids), "per_question": systems,
            "scores": {name: summarize(rows, ids) for name, rows in systems.items()},
            "vs_base": {name: paired(systems["base hybrid"], rows, ids) for name, rows in systems.items()
                        if name != "base hybrid"}}


def format_training(run: dict) -> str:
    """What ``raglab train`` prints: the pairs by kind and each model's line."""
    pairs = run["pairs"]
    kinds = {k: sum(p.kind == k for p in pairs) for k in dict.fromkeys(p.kind for p in pairs)}
    lines = [f"{len(pairs)} training pairs mined in {run['mined_s']:.0f} s ("
             + ", ".join(f"{k} {n}" for k, n in kinds.items()) + "); no golden question among the queries"]
    for key in WHICH:
        if key in run:
            lines.append(describe(run[key]))
            lines.append(f"  use it: {use_hint(run[key])}")
    return "\n".join(lines)


def use_hint(trained: Trained) -> str:
    """The command line that puts a trained model to work."""
    if trained.record["kind"] == "bi":
        return f"raglab index --model {trained.model_id}   (then search/ask/eval with --model {trained.model_id})"
    return f"raglab search \"...\" --mode rerank --reranker {trained.model_id}"


def format_compare(result: dict) -> str:
    """The comparison as text: each system's means with intervals, then paired differences."""
    metrics = ("doc_hit@5", "recall@5", "mrr@10", "hit@1")
    lines = [f"{result['corpus']} ({result['profile']}), {result['split']} split, {result['questions']} answerable questions"]
    for name, scores in result["scores"].items():
        lines.append(f"  {name:38s} " + "  ".join(f"{m} {interval_text(scores.get(m))}" for m in metrics))
    for name, diff in result["vs_base"].items():
        lines.append(f"  {name} − base: " + "; ".join(f"{m} {paired_text(diff[m])}" for m in metrics if m in diff))
    return "\n".join(lines)
