"""Training on a corpus's own text (``raglab train``): the pairs from its default chunking with every
golden question kept out, both models trained (cached by content), and the base and trained
retrievers compared on the golden set's dev split (or, where a set has no split, on all of it).

The settings per profile are in ``PROFILE_SETTINGS``: on a 2-core CPU the small profile's bi-encoder
trains in about 10 s (notebook 08 trains two), the full docs' in about 10 minutes; a cross-encoder
costs about 20 s a step of 32 pairs (about an hour for the full docs' 6,000).
"""
from __future__ import annotations

import time
from dataclasses import asdict, replace

from raglab.base import config
from raglab.infra.assemble import build_assistant
from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.corpora import entry, golden_path, registered
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.evaluation.golden import SPLITS, load_golden
from raglab.evaluation.headline import paired, per_question, summarize
from raglab.evaluation.scoreboard import evaluate
from raglab.evaluation.statistics import interval_text, paired_text
from raglab.experiments.recorded import recorded, recorded_note
from raglab.experiments.finetune import TrainSettings, train_bi_encoder, train_cross_encoder
from raglab.experiments.mining import KINDS, Pair, kind_counts, mine_pairs
from raglab.infra.model_store import Trained, describe
from raglab.infra.tokenizer import load_tokenizer

PROFILE_SETTINGS = {
    "small": TrainSettings(pairs=192, batch_size=16, max_length=96, cross_max_length=192),
    "full": TrainSettings(),
}
WHICH = ("bi", "cross")
# the cross-encoder reads a query and a passage together (about 20 s a batch of 32 pairs at 256 tokens here, an hour
# for 6,000 pairs): on the full docs it trains on the first 1,500 pairs at 128 tokens, so that both models fit the
# issue's hour
CROSS_BUDGET = {"full": {"pairs": 1500, "cross_max_length": 128}}
CURVE_SIZES = {"small": (64, 192), "full": (1500, 3000, 6000)}   # the learning curve's training pairs


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
    chunks = chunk_corpus(load_corpus(corpus, profile), ChunkSettings(strategy, prefix=prefix),
                          tokenizer=load_tokenizer())
    forbidden = [q.question for q in golden_questions(corpus, profile, golden)]
    return mine_pairs(chunks, settings.pairs, settings.kinds, settings.seed, forbidden=forbidden,
                      negatives=settings.negatives, embedder=Embedder() if settings.negatives == "dense" else None)


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
        cross = cross_settings(profile, settings)
        out["cross"] = train_cross_encoder(out["pairs"][:cross.pairs], cross, progress)
    return out


def cross_settings(profile: str, settings: TrainSettings) -> TrainSettings:
    """The cross-encoder's settings: the profile's budget (``CROSS_BUDGET``) within ``settings``."""
    budget = CROSS_BUDGET.get(profile, {})
    return replace(settings, pairs=min(settings.pairs, budget.get("pairs", settings.pairs)),
                   cross_max_length=min(settings.cross_max_length, budget.get("cross_max_length", settings.cross_max_length))).check()


def comparison_questions(corpus: str, profile: str, split: str | None = "dev", golden=None) -> tuple[list, str]:
    """The answerable golden questions a comparison scores, and the split's name: ``split`` of a split
    set, all of an unsplit one (``"all"``)."""
    questions = [q for q in golden_questions(corpus, profile, golden) if q.type != "unanswerable"]
    split_set = split in SPLITS and any(q.split for q in questions)
    if split_set:
        questions = [q for q in questions if q.split == split]
    if not questions:
        raise ValueError(f"no golden questions to compare on for {corpus!r} ({profile})")
    return questions, split if split_set else "all"


def compare(corpus: str = "python-docs", profile: str = "small", bi: Trained | None = None,
            cross: Trained | None = None, split: str | None = "dev", golden=None,
            modes: tuple[str, ...] = ("dense", "hybrid"), base=None) -> dict:
    """The base retrievers against the trained models on the golden set's answerable questions of
    ``split`` (all of them for a set without splits): per-question metrics, each system's means with
    intervals, and each trained system's paired difference from the base in the same mode (the
    reranked one from the base hybrid). ``base``: the base assistant, when the caller has built it."""
    questions, split_name = comparison_questions(corpus, profile, split, golden)
    base = base or build_assistant(corpus, profile)
    systems, reference = {}, {}
    for mode in modes:
        systems[f"base {mode}"] = per_question(evaluate(base.retriever, questions, 5, mode), questions)
    if bi is not None:
        tuned = build_assistant(corpus, profile, model=bi.model_id)
        for mode in modes:
            name = f"trained bi-encoder {mode}"
            systems[name] = per_question(evaluate(tuned.retriever, questions, 5, mode), questions)
            reference[name] = f"base {mode}"
    if cross is not None:
        if "base hybrid" not in systems:
            systems["base hybrid"] = per_question(evaluate(base.retriever, questions, 5, "hybrid"), questions)
        reranked = build_assistant(corpus, profile, reranker=cross.model_id)
        systems["base hybrid + trained cross-encoder"] = per_question(
            evaluate(reranked.retriever, questions, 5, "rerank"), questions)
        reference["base hybrid + trained cross-encoder"] = "base hybrid"
    ids = [q.id for q in questions]
    return {"corpus": corpus, "profile": profile, "split": split_name, "questions": len(ids), "per_question": systems,
            "scores": {name: summarize(rows, ids) for name, rows in systems.items()},
            "vs_base": {name: {"base": ref} | paired(systems[ref], systems[name], ids) for name, ref in reference.items()}}


def run_training_experiment(corpus: str = "python-docs", profile: str | None = None,
                            sizes: tuple[int, ...] | None = None, cross: bool = False, progress: bool = True) -> dict:
    """The lab of notebook 08: mine pairs, train the bi-encoder on growing prefixes of them (the
    learning curve: MRR@10 and hit@1 of dense retrieval against training pairs, 0 being the
    packaged model), and compare base and trained on the golden set (dev split, or all of an
    unsplit set); with ``cross`` also train the cross-encoder on all the pairs and rerank with it.
    Models are cached by content; with ``$RAGLAB_RECORDED`` (grading) the whole result is measured
    once (``raglab.experiments.recorded``)."""
    profile = config.profile(profile)
    sizes = tuple(sorted(sizes or CURVE_SIZES.get(profile, CURVE_SIZES["small"])))
    params = {"corpus": corpus, "profile": profile, "sizes": sizes, "cross": cross,
              "settings": asdict(settings_for(profile))}
    return recorded("training", params, lambda: _measure_training(corpus, profile, sizes, cross, progress))


def _measure_training(corpus: str, profile: str, sizes: tuple[int, ...], cross: bool, progress: bool) -> dict:
    settings = settings_for(profile, pairs=max(sizes))
    pairs = corpus_pairs(corpus, profile, settings)
    questions, _ = comparison_questions(corpus, profile)
    base = build_assistant(corpus, profile)
    curve = [{"pairs": 0, "seconds": 0.0, **_dense_point(base, questions)}]
    bi = None
    for n in sizes:
        bi = train_bi_encoder(pairs[:n], replace(settings, pairs=n), progress)
        curve.append({"pairs": n, "seconds": bi.record["seconds"], "loss_first": _mean(bi.record["loss"][:5]),
                      "loss_last": _mean(bi.record["loss"][-5:]),
                      **_dense_point(build_assistant(corpus, profile, model=bi.model_id), questions)})
    cross_only = cross_settings(profile, settings)
    reranker = train_cross_encoder(pairs[:cross_only.pairs], cross_only, progress) if cross else None
    final = compare(corpus, profile, bi=bi, cross=reranker, base=base)
    return {"corpus": corpus, "profile": profile, "settings": asdict(settings), "pairs": len(pairs),
            "pairs_by_kind": kind_counts(pairs),
            "examples": [{"kind": p.kind, "query": p.query, "positive": p.positive[:200], "negative": p.negative_chunk}
                         for p in _one_of_each(pairs)],
            "curve": curve, "bi": bi.model_id, "cross": reranker.model_id if reranker else None,
            "cross_seconds": reranker.record["seconds"] if reranker else None,
            "compare": {k: final[k] for k in ("corpus", "profile", "split", "questions", "scores", "vs_base")}}


def _dense_point(assistant, questions) -> dict:
    """MRR@10, hit@1 and recall@5 (with intervals) of an assistant's dense retrieval on the questions."""
    rows = per_question(evaluate(assistant.retriever, questions, 5, "dense"), questions)
    scores = summarize(rows, [q.id for q in questions])
    return {m: scores[m] for m in ("mrr@10", "hit@1", "recall@5")}


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else float("nan")


def _one_of_each(pairs: list[Pair], per_kind: int = 2) -> list[Pair]:
    """The first ``per_kind`` pairs of each kind, for showing."""
    out = []
    for kind in KINDS:
        out += [p for p in pairs if p.kind == kind][:per_kind]
    return out


def format_training_experiment(result: dict) -> str:
    """The lab as text: the pairs, the learning curve, and base against trained."""
    lines = [f"{result['pairs']} pairs mined from {result['corpus']} ({result['profile']}): "
             + ", ".join(f"{k} {n}" for k, n in result["pairs_by_kind"].items()),
             "learning curve (dense retrieval; 0 pairs = the packaged MiniLM):"]
    for c in result["curve"]:
        lines.append(f"  {c['pairs']:>6} pairs  MRR@10 {interval_text(c['mrr@10'])}  hit@1 {interval_text(c['hit@1'])}"
                     + (f"  trained in {c['seconds']:.0f} s, loss {c['loss_first']:.3f} -> {c['loss_last']:.3f}" if c["pairs"] else ""))
    if result.get("cross"):
        lines.append(f"cross-encoder: trained in {result['cross_seconds']:.0f} s")
    lines.append(format_compare(result["compare"]))
    return "\n".join(lines + recorded_note(result))


def plot_learning_curve(result: dict):
    """Dev MRR@10 and hit@1 (95% whiskers) of dense retrieval against the training pairs the
    bi-encoder saw; 0 pairs is the packaged MiniLM."""
    import matplotlib.pyplot as plt  # lazy: only when a chart is drawn

    curve = result["curve"]
    fig, ax = plt.subplots(figsize=(7, 4))
    x = [c["pairs"] for c in curve]
    for metric, marker in (("mrr@10", "o"), ("hit@1", "s")):
        v = [c[metric]["value"] for c in curve]
        err = [[vi - c[metric]["ci_low"] for vi, c in zip(v, curve)], [c[metric]["ci_high"] - vi for vi, c in zip(v, curve)]]
        ax.errorbar(x, v, yerr=err, marker=marker, capsize=3, label=metric, alpha=0.85)
    ax.set_xlabel("training pairs mined from the docs (0 = the packaged MiniLM)")
    ax.set_ylabel("dense retrieval, " + ("dev split" if result["compare"]["split"] == "dev" else "golden set"))
    ax.set_ylim(0, 1.05)
    ax.set_title(f"Learning curve ({result['corpus']}, {result['profile']} profile, "
                 f"{result['compare']['questions']} answerable questions)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def format_training(run: dict) -> str:
    """What ``raglab train`` prints: the pairs by kind and each model's line."""
    pairs = run["pairs"]
    lines = [f"{len(pairs)} training pairs mined in {run['mined_s']:.0f} s ("
             + ", ".join(f"{k} {n}" for k, n in kind_counts(pairs).items()) + "); no golden question among the queries"]
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
        lines.append(f"  {name} − {diff['base']}: " + "; ".join(f"{m} {paired_text(diff[m])}" for m in metrics if m in diff))
    return "\n".join(lines)
