"""The headline evaluation: the default assistant against the course baseline on a split golden set,
dev and test side by side, with bootstrap intervals and paired differences. Test is the headline.

    RAGLAB_PROFILE=full raglab eval --golden python-docs --headline --json evals/results/python-docs-full.json

Metrics (answerable questions unless said otherwise; the scoreboard's own functions, ``metrics``):

- ``doc_hit@5``: some chunk in the top 5 comes from an evidence document (``metrics.doc_hit``);
- ``recall@5``: share of evidence items supported in the top 5 (``metrics.evidence_recall``);
- ``mrr@10``: reciprocal rank of the first supporting chunk within 10 (``metrics.reciprocal_rank``);
- ``hit@1``: the first chunk supports an evidence item;
- ``abstention``: every question: answered when answerable, refused when not;
- ``facts``: the offline answer contains every required fact (``metrics.answer_correct``).
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from raglab.base import config
from raglab.infra.assemble import build_assistant, describe
from raglab.infra.corpora import entry, golden_path, registered
from raglab.infra.corpus import load_corpus
from raglab.evaluation.baseline import CourseBaseline
from raglab.evaluation.golden import SPLITS, Question, load_golden
from raglab.evaluation.scoreboard import Result, evaluate
from raglab.evaluation.statistics import bootstrap_ci, interval_text, paired_test, paired_text, percentile
from raglab.infra.packaged_models import TRAINED_PREFIX
from raglab.infra.model_store import cached_model

RETRIEVAL = ("doc_hit@5", "recall@5", "mrr@10", "hit@1")
ANSWERS = ("abstention", "facts")
LABELS = {"doc_hit@5": "doc hit@5", "recall@5": "evidence recall@5", "mrr@10": "MRR@10", "hit@1": "hit@1",
          "abstention": "abstention accuracy", "facts": "answer has the facts"}
TARGETS = {"doc_hit@5": 0.95, "recall@5": 0.85, "mrr@10": 0.85, "abstention": 0.95, "facts": 0.75}
CEILING_DEPTH = 20     # the candidates a reranker could reorder: evidence not among them is out of any ranker's reach
RESULTS = config.PROJECT_ROOT / "evals" / "results" / "python-docs-full.json"


def _shown(path) -> str:
    """A path as the results file records it: relative to the project when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(config.PROJECT_ROOT)) if path.is_relative_to(config.PROJECT_ROOT) else str(path)


def machine() -> str:
    """Where a run ran: architecture, cores, CPU model and Python version."""
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{platform.machine()}, {os.cpu_count()} cores{', ' + model if model else ''}, Python {platform.python_version()}"


def retrieval_values(r: Result) -> dict[str, float]:
    """One answerable question's retrieval metrics from its scoreboard result (k = 5, depth 10)."""
    return {"doc_hit@5": r.hit, "recall@5": r.recall, "mrr@10": r.rr, "hit@1": float(r.rr == 1.0)}


def per_question(results: list[Result], questions: list[Question]) -> dict[str, dict[str, float]]:
    """``{question id: {metric: value}}``: retrieval metrics for answerable questions, and the
    answer metrics when the results carry answers."""
    by_id = {q.id: q for q in questions}
    out = {}
    for r in results:
        row = {} if by_id[r.id].type == "unanswerable" else retrieval_values(r)
        if r.abstention_ok is not None:
            row["abstention"] = r.abstention_ok
            if by_id[r.id].type != "unanswerable":
                row["facts"] = r.correct
        out[r.id] = row
    return out


def summarize(rows: dict[str, dict[str, float]], ids: list[str]) -> dict[str, dict]:
    """Each metric's mean over the questions ``ids`` that have it, with a bootstrap 95% interval and n."""
    out = {}
    for metric in RETRIEVAL + ANSWERS:
        values = [rows[i][metric] for i in ids if metric in rows.get(i, {})]
        if values:
            out[metric] = {**bootstrap_ci(values), "n": len(values)}
    return out


def paired(a: dict, b: dict, ids: list[str]) -> dict[str, dict]:
    """``b − a`` per metric on the questions both have (paired bootstrap interval, sign-flip p)."""
    out = {}
    for metric in RETRIEVAL + ANSWERS:
        both = [i for i in ids if metric in a.get(i, {}) and metric in b.get(i, {})]
        if both:
            out[metric] = {**paired_test([a[i][metric] for i in both], [b[i][metric] for i in both]), "n": len(both)}
    return out


def run_headline(corpus: str = "python-docs", profile: str = "full", golden=None,
                 modes: tuple[str, ...] = ("dense", "bm25", "hybrid"), model: str | None = None) -> dict:
    """Score the default assistant (answers and its own retrieval, plus each of ``modes``) and the
    course baseline (its dense, BM25 and hybrid) on every question of a split golden set, and the
    ceiling: the share of answerable questions with no evidence among the default's top
    ``CEILING_DEPTH`` candidates. ``model``: a trained bi-encoder (``trained/bi-<hash>``) scored the
    same way in the default's place (answers and dense), with its paired differences from the
    default and from the course baseline (``trained``)."""
    golden = golden or golden_path(corpus, profile)
    questions = load_golden(golden, load_corpus(corpus, profile))
    if not all(q.split in SPLITS for q in questions):
        raise ValueError(f"{golden}: the headline needs a split golden set (every line with 'split': dev or test)")
    answerable = [q for q in questions if q.type != "unanswerable"]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    assistant = build_assistant(corpus, profile)
    default = evaluate(assistant.retriever, questions, 5, assistant.mode, assistant)
    systems = {f"default ({assistant.mode} + answers)": per_question(default, questions)}
    latency = {"default": [r.retrieve_ms for r in default]}
    for mode in modes:
        if mode != assistant.mode:
            systems[f"default {mode}"] = per_question(evaluate(assistant.retriever, answerable, 5, mode), questions)
    baseline = CourseBaseline(corpus, profile)
    for mode in ("dense", "bm25", "hybrid"):
        results = evaluate(baseline, answerable, 5, mode)
        systems[f"course baseline {mode}"] = per_question(results, questions)
        if mode == "hybrid":
            latency["course baseline"] = [r.retrieve_ms for r in results]
    head, base = next(iter(systems)), "course baseline hybrid"
    splits = {s: [q.id for q in questions if q.split == s] for s in SPLITS}
    deep = {r.id: r.recall for r in evaluate(assistant.retriever, answerable, CEILING_DEPTH, assistant.mode, depth=CEILING_DEPTH)}
    ceiling = {}
    for s, ids in splits.items():
        held = [deep[i] for i in ids if i in deep]          # the split's answerable questions
        ceiling[s] = {"depth": CEILING_DEPTH, "answerable": len(held),
                      "missing": round(sum(r == 0 for r in held) / max(1, len(held)), 4)}
    trained = None
    if model:
        tuned = build_assistant(corpus, profile, model=model)
        name = f"trained bi-encoder ({tuned.mode} + answers)"
        systems[name] = per_question(evaluate(tuned.retriever, questions, 5, tuned.mode, tuned), questions)
        systems["trained bi-encoder dense"] = per_question(evaluate(tuned.retriever, answerable, 5, "dense"), questions)
        record = cached_model(model.removeprefix(TRAINED_PREFIX))
        trained = {"model": model, "system": name,
                   "training": {k: record.record[k] for k in ("pairs", "pairs_by_kind", "settings", "seconds", "date")} if record else None,
                   "vs_default": {s: paired(systems[head], systems[name], ids) for s, ids in splits.items()},
                   "vs_baseline": {s: paired(systems[base], systems[name], ids) for s, ids in splits.items()},
                   "dense_vs_default_dense": {s: paired(systems["default dense"], systems["trained bi-encoder dense"], ids)
                                              for s, ids in splits.items()} if "default dense" in systems else None}
    return {
        "corpus": corpus, "profile": profile, "golden": _shown(golden), "date": started,
        "machine": machine(),
        "default": describe(assistant) | {"prompt": None}, "baseline": baseline.name,
        "questions": {s: len(ids) for s, ids in splits.items()},
        "scores": {s: {name: summarize(rows, ids) for name, rows in systems.items()} for s, ids in splits.items()},
        "vs_baseline": {s: paired(systems[base], systems[head], ids) for s, ids in splits.items()},
        "latency_ms": {name: {"p50": percentile(v, 50), "p95": percentile(v, 95)} for name, v in latency.items()},
        "targets": TARGETS, "per_question": systems,
        "evidence_strength": {r.id: r.evidence for r in default},
        "ceiling": ceiling, "trained": trained,
    }


def tuned_on(corpus: str, golden: str | Path) -> str | None:
    """Which part of this golden set the corpus's defaults were chosen on (``CorpusEntry.tuned`` in
    ``raglab.infra.corpora``): ``dev``, ``all`` (in-sample: a threshold chosen on every question), or None
    for a set no default was chosen on (a student's own). ``golden`` is a path, relative to the project as a
    report records it, or absolute.

    >>> tuned_on("python-docs", golden_path("python-docs", "full")), tuned_on("python-docs", golden_path("python-docs", "small"))
    ('dev', 'all')
    >>> tuned_on("python-docs", "golden.jsonl") is None
    True
    """
    evals = (config.PROJECT_ROOT / "evals").resolve()
    where = (config.PROJECT_ROOT / golden).resolve()
    return entry(corpus).tuned.get(where.name) if where.parent == evals and registered(corpus) else None


DEV_LABELS = {"dev": "the defaults were tuned here",
              "all": "the refusal threshold was chosen on every question of this set: in-sample",
              None: "no default was chosen on this set"}
TEST_LABELS = {"dev": "the headline", "all": "in-sample: the refusal threshold was chosen here too",
               None: "the headline"}


def headline_table(report: dict, split: str = "test") -> str:
    """A Markdown table of one split: one row per system, one column per metric (value [95% CI])."""
    metrics = RETRIEVAL + ANSWERS
    lines = ["| system | " + " | ".join(LABELS[m] for m in metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
    for name, scores in report["scores"][split].items():
        lines.append(f"| {name} | " + " | ".join(interval_text(scores.get(m), missing='') for m in metrics) + " |")
    return "\n".join(lines)


def difference_table(report: dict) -> str:
    """Default − course baseline (hybrid), per metric, on dev and on test."""
    lines = ["| metric | target (test) | " + " | ".join(f"default − baseline, {s}" for s in SPLITS)
             + " | detectable on test (80% power) |", "|---|---|" + "---|" * (len(SPLITS) + 1)]
    for m in RETRIEVAL:
        cells = []
        for s in SPLITS:
            d = report["vs_baseline"][s].get(m)
            cells.append(paired_text(d) if d else "")
        mde = report["vs_baseline"]["test"].get(m, {}).get("mde")
        cells.append(f"±{mde:.3f}" if mde is not None else "")
        lines.append(f"| {LABELS[m]} | {report['targets'].get(m, '')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_headline(report: dict) -> str:
    """The printed report: test first (the headline), then dev, then the paired differences."""
    out = [f"{report['corpus']} ({report['profile']} profile), {report['golden']}, {report['date']}, {report['machine']}",
           "questions: " + ", ".join(f"{s} {n}" for s, n in report["questions"].items()), ""]
    tuned = tuned_on(report["corpus"], report["golden"])
    for split in ("test", "dev"):
        out += [f"{split} split (" + (TEST_LABELS if split == "test" else DEV_LABELS)[tuned] + ")",
                headline_table(report, split), ""]
    out += ["paired differences, default minus course baseline (hybrid)", difference_table(report), "",
            "retrieval latency ms: " + ", ".join(f"{k} p50 {v['p50']} / p95 {v['p95']}" for k, v in report["latency_ms"].items())]
    if report.get("ceiling"):
        out += ["", "ceiling:", ceiling_text(report)]
    if report.get("trained"):
        out += ["", f"paired differences, {report['trained']['model']} in the default's place", trained_table(report)]
    return "\n".join(out)


def trained_table(report: dict) -> str:
    """The trained bi-encoder's system minus the default, and minus the course baseline, per metric and split."""
    t = report["trained"]
    cols = [(f"trained − default, {s}", t["vs_default"][s]) for s in SPLITS] + \
           [(f"trained − baseline, {s}", t["vs_baseline"][s]) for s in SPLITS]
    lines = ["| metric | target (test) | " + " | ".join(c for c, _ in cols) + " |", "|---|---|" + "---|" * len(cols)]
    for m in RETRIEVAL + ANSWERS:
        lines.append(f"| {LABELS[m]} | {report['targets'].get(m, '')} | "
                     + " | ".join(paired_text(d[m]) if d.get(m) else "" for _, d in cols) + " |")
    return "\n".join(lines)


def load_headline(path: str | Path = RESULTS) -> dict:
    """The committed headline results (made by the command in this module's docstring)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def headline_frame(report: dict, split: str = "test"):
    """One split's scores as a table: one row per system, ``value [low, high]`` per metric."""
    import pandas as pd  # lazy: pandas is for notebooks

    return pd.DataFrame({LABELS[m]: {name: interval_text(scores.get(m), missing='') for name, scores in report["scores"][split].items()}
                         for m in RETRIEVAL + ANSWERS})


def difference_frame(report: dict):
    """Default − course baseline (hybrid) per retrieval metric, dev and test side by side, and the
    smallest difference the test split detects with 80% power (when the report records it)."""
    import pandas as pd  # lazy: pandas is for notebooks

    frame = pd.DataFrame({split: {LABELS[m]: paired_text(d) for m, d in report["vs_baseline"][split].items()}
                          for split in SPLITS})
    mde = {LABELS[m]: f"±{d['mde']:.3f}" for m, d in report["vs_baseline"]["test"].items() if "mde" in d}
    if mde:
        frame["detectable on test"] = pd.Series(mde)
    return frame


def trained_frame(report: dict):
    """The trained bi-encoder in the default's place: its test scores, and its paired differences from
    the default and from the course baseline, per metric (dev beside test); None when the headline has none."""
    import pandas as pd  # lazy: pandas is for notebooks

    t = report.get("trained")
    if not t:
        return None
    scores = report["scores"]["test"][t["system"]]
    rows = {LABELS[m]: {"target": report["targets"].get(m, ""), "trained, test": interval_text(scores.get(m), missing=""),
                        **{f"trained − {ref}, {s}": paired_text(t[key][s][m]) if m in t[key][s] else ""
                           for ref, key in (("default", "vs_default"), ("baseline", "vs_baseline")) for s in SPLITS}}
            for m in RETRIEVAL + ANSWERS}
    return pd.DataFrame(rows).T


def ceiling_text(report: dict) -> str:
    """One line per split: the share of answerable questions with no evidence among the default's top candidates."""
    return "\n".join(f"{s}: {c['missing']:.1%} of {c['answerable']} answerable questions have no evidence in the "
                     f"default's top {c['depth']}" for s, c in (report.get("ceiling") or {}).items())


def summary_for_report(report: dict) -> dict:
    """What the write-up prints of the headline (``raglab report``): test scores of the default and
    the course baseline, their paired differences, the targets, where the numbers come from, the
    ceiling, and the trained bi-encoder's test scores and differences when the headline has one."""
    scores = report["scores"]["test"]
    default = next(iter(scores))
    return {"date": report["date"], "machine": report["machine"], "golden": Path(report["golden"]).name,
            "questions": report["questions"], "default": scores[default],
            "baseline": scores["course baseline hybrid"], "vs_baseline": report["vs_baseline"]["test"],
            "targets": report["targets"], "chunks": report["default"]["chunks"],
            "ceiling": (report.get("ceiling") or {}).get("test"),
            "trained": ({"model": t["model"], "scores": scores[t["system"]], "vs_default": t["vs_default"]["test"],
                         "vs_baseline": t["vs_baseline"]["test"]} if (t := report.get("trained")) else None)}
