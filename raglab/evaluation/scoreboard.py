"""The scoreboard: run a golden set through an assistant, score retrieval, answers, citations and
abstention with bootstrap intervals, and trace each failure to the stage that caused it.

Metrics are computed from evidence matches (``raglab.evaluation.metrics``), so a golden set never
depends on one chunking.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from raglab.infra import traces as trace_files
from raglab.infra.corpus import load_corpus
from raglab.evaluation.golden import Question, load_golden, user_for
from raglab.evaluation.metrics import (
    answer_correct,
    doc_hit,
    evidence_recall,
    first_relevant_rr,
    ndcg,
    reciprocal_rank,
    relevant_ids,
    supports,
)
from raglab.evaluation.statistics import bootstrap_ci, percentile, quantile
from raglab.book.citations import check_citations
from raglab.book.prompt import Source

# Refusals before any citation check: weak evidence, a model that declined, or (no model) no sentence selected.
REFUSED_UNCHECKED = ("weak-evidence", "model-refused", "no-sentence-selected")

# ---------------------------------------------------------------- metrics on ranked id lists


# ---------------------------------------------------------------- answers


# ---------------------------------------------------------------- a run over a golden set

@dataclass
class Result:
    """One question's outcome: retrieval scores, and the answer's when an assistant was run."""

    id: str
    type: str
    recall: float
    recall3: float
    hit: float
    rr: float
    ndcg10: float
    retrieve_ms: float
    retrieved: list[str]
    answered: bool | None = None
    reason: str | None = None
    correct: float | None = None
    citation_valid: float | None = None
    citation_support: float | None = None
    abstention_ok: float | None = None
    evidence: float | None = None
    stage_ms: dict = field(default_factory=dict)
    failure: str | None = None


def evaluate(retriever, questions: list[Question], k: int = 5, mode: str = "rerank", assistant=None,
             depth: int = 10) -> list[Result]:
    """Run every question; retrieval metrics always, answer metrics when ``assistant`` is given.

    Every ranked list is cut to the same depth (``max(k, depth)``) before scoring.
    """
    index = retriever.index
    results = []
    for q in questions:
        user = user_for(q)
        t = time.perf_counter()
        hits = retriever.search(q.question, mode, max(k, depth), user)
        ms = (time.perf_counter() - t) * 1000
        ranked = [index.chunk(h.id) for h in hits]
        ids = [c.id for c in ranked]
        rel = relevant_ids(index.passages(), q)
        res = Result(q.id, q.type, evidence_recall(ranked, q, k), evidence_recall(ranked, q, 3),
                     doc_hit(ranked, q, k), reciprocal_rank(ids, rel, depth),
                     ndcg(ids, rel, 10), round(ms, 2), ids)
        if assistant is not None:
            score_answer(res, q, assistant.ask(q.question, user), index)
        res.failure = failure_stage(res, q, k)
        results.append(res)
    return results


def score_answer(res: Result, q: Question, answer, index) -> None:
    """Score one answer into ``res``; ``index`` holds the chunks (or parents) it retrieved and cited."""
    unanswerable = q.type == "unanswerable"
    res.answered, res.reason, res.stage_ms = not answer.refused, answer.reason, dict(answer.timings_ms)
    res.evidence = answer.evidence
    res.correct = answer_correct(q, answer)
    res.abstention_ok = float(answer.refused == unanswerable)
    if answer.reason not in REFUSED_UNCHECKED:
        sources = [Source(n, index.chunk(r["id"])) for n, r in enumerate(answer.retrieved, 1)]
        raw = check_citations(answer.raw, sources)
        res.citation_valid = float(raw.reason is None or (answer.attributed and not answer.refused))
    if not unanswerable and not answer.refused:
        res.citation_support = citation_support(q, [index.chunk(c.id) for c in answer.citations])


def citation_support(q: Question, cited: list) -> float:
    """1.0 when some cited chunk supports some evidence item of the question (``metrics.supports``:
    same document, and the quote when one is given), else 0.0; ``cited`` are the chunks an answer cites."""
    return float(any(supports(c, e) for c in cited for e in q.evidence))


def failure_stage(res: Result, q: Question, k: int) -> str | None:
    """Where a missed question failed: retrieval, ranking, generation or refusal (None if it did not fail)."""
    if q.type == "unanswerable":
        return "refusal" if res.answered else None
    if res.answered is False and res.reason in REFUSED_UNCHECKED:
        return "refusal" if res.recall > 0 else ("retrieval" if res.rr == 0 else "ranking")
    if res.recall == 0:
        return "retrieval" if res.rr == 0 else "ranking"
    if res.correct is not None and res.correct < 1:
        return "generation"
    return None


# ---------------------------------------------------------------- intervals and comparisons


def scoreboard(results: list[Result], k: int, reps: int = 2000, seed: int = 0) -> dict:
    """Every score family with a bootstrap interval, in the JSON shape of ``raglab eval``."""
    answerable = [r for r in results if r.type != "unanswerable"]
    board = {"n_questions": len(results), "k": k,
             "interval": {"level": 0.95, "reps": reps, "method": "percentile bootstrap over questions"},
             f"hit@{k}": bootstrap_ci([r.hit for r in answerable], reps, seed),
             f"recall@{k}": bootstrap_ci([r.recall for r in answerable], reps, seed),
             "mrr": bootstrap_ci([r.rr for r in answerable], reps, seed),
             "ndcg@10": bootstrap_ci([r.ndcg10 for r in answerable], reps, seed),
             "retrieval_latency_p50_ms": bootstrap_ci([r.retrieve_ms for r in results], reps, seed, stat=quantile(50)),
             "retrieval_latency_p95_ms": bootstrap_ci([r.retrieve_ms for r in results], reps, seed, stat=quantile(95))}
    if any(r.answered is not None for r in results):
        unanswerable = [r for r in results if r.type == "unanswerable"]
        total = [r.retrieve_ms + sum(v for s, v in r.stage_ms.items() if s not in ("retrieve", "rerank")) for r in results]
        board.update({
            "answer_correct": bootstrap_ci([r.correct for r in results], reps, seed),
            "citation_validity": bootstrap_ci([r.citation_valid for r in results], reps, seed),
            "citation_support": bootstrap_ci([r.citation_support for r in answerable], reps, seed),
            "abstention_accuracy": bootstrap_ci([r.abstention_ok for r in results], reps, seed),
            "unanswerable_refused": bootstrap_ci([float(not r.answered) for r in unanswerable], reps, seed),
            "answerable_answered": bootstrap_ci([float(bool(r.answered)) for r in answerable], reps, seed),
            "latency_p50_ms": bootstrap_ci(total, reps, seed, stat=quantile(50)),
            "latency_p95_ms": bootstrap_ci(total, reps, seed, stat=quantile(95)),
            "stage_latency_ms": {s: {"p50": percentile([r.stage_ms.get(s) for r in results], 50),
                                     "p95": percentile([r.stage_ms.get(s) for r in results], 95)}
                                 for s in ("retrieve", "rerank", "generate", "check")},
        })
    board["failures"] = {stage: [r.id for r in results if r.failure == stage]
                         for stage in ("retrieval", "ranking", "generation", "refusal")}
    return board


def run_golden(assistant, golden: str | Path, k: int = 5, mode: str | None = None, retrieval_only: bool = False,
               split: str | None = None) -> dict:
    """Evaluate an assistant on a golden set: the scoreboard dict (``raglab eval --json``), with run details.

    ``mode`` is the retrieval scored (default: the one the assistant answers from, ``assistant.mode``);
    ``split`` keeps one split (``dev`` or ``test``) of a split golden set.
    """
    mode = mode or assistant.mode

    index = assistant.retriever.index
    questions = load_golden(golden, _corpus_docs(index), split)
    results = evaluate(assistant.retriever, questions, k, mode, None if retrieval_only else assistant)
    m = index.manifest
    board = {"golden": str(golden), "corpus": m["corpus"], "profile": m["profile"], "chunking": m["chunking"],
             "split": split, "mode": mode, "generator": None if retrieval_only else assistant.generator.name,
             "threshold": None if retrieval_only else assistant.threshold, "index_version": index.version,
             **scoreboard(results, k)}
    board["recall@k"], board["hit@k"] = board[f"recall@{k}"], board[f"hit@{k}"]
    board["questions"] = [asdict(r) for r in results]
    return board


STAGE_EXPLAINED = {
    "retrieval": "no relevant chunk among the retrieved candidates",
    "ranking": "a relevant chunk was retrieved but ranked below the cut",
    "generation": "the evidence was in the sources, but the answer lacks the required fact",
    "refusal": "refused although answerable, or answered although unanswerable",
}


def failure_cases(board: dict, trace_path: str | Path, n: int = 5) -> list[dict]:
    """``n`` failures of a scored run, spread over the stages, each traced: what the question
    needed, what the trace of its answer shows (retrieved chunks, evidence strength, the answer
    or the refusal's reason) and the stage it failed at. The trace is read across its rotated files."""

    golden = {q.id: q for q in load_golden(board["golden"])}
    traces = {t["question"]: t for t in trace_files.read(trace_path)}   # the latest trace of each question
    queues = {stage: list(ids) for stage, ids in board["failures"].items() if ids}
    picked: list[tuple[str, str]] = []
    while len(picked) < n and any(queues.values()):
        for stage, ids in queues.items():
            if ids and len(picked) < n:
                picked.append((stage, ids.pop(0)))
    rows = {r["id"]: r for r in board["questions"]}
    cases = []
    for stage, qid in picked:
        q, r = golden[qid], rows[qid]
        t = traces.get(q.question, {})
        cases.append({"id": qid, "type": q.type, "question": q.question, "stage": stage,
                      "explained": STAGE_EXPLAINED[stage], "needs": sorted({e["doc"] for e in q.evidence}),
                      "facts": list(q.facts), "recall": r["recall"], "rr": r["rr"], "reason": r["reason"],
                      "evidence_strength": t.get("evidence"), "retrieved": [x["id"] for x in t.get("retrieved", [])[:3]],
                      "answer": (t.get("answer") or "")[:240], "traced": bool(t)})
    return cases


def _corpus_docs(index):
    return load_corpus(index.manifest["corpus"], index.manifest["profile"])


def format_scoreboard(board: dict) -> str:
    """The scoreboard as an aligned text table (value and 95% interval)."""
    lines = [f"scoreboard: {board['n_questions']} questions, k = {board['k']}",
             f"{'score':<26}{'value':>8}   95% interval"]
    for key, val in board.items():
        if isinstance(val, dict) and val.get("value") is not None and not key.endswith("@k"):
            unit = " ms" if key.endswith("_ms") else ""
            lines.append(f"{key:<26}{val['value']:>8.3f}   [{val['ci_low']:.3f}, {val['ci_high']:.3f}]{unit}")
    missed = {s: ids for s, ids in board["failures"].items() if ids}
    lines.append("failures by stage: " + (", ".join(f"{s} {len(ids)}" for s, ids in missed.items()) or "none"))
    return "\n".join(lines)


def results_table(results: list[Result] | list[dict]):
    """One row per question (a DataFrame), for failure analysis; takes ``Result`` records or their dicts."""
    import pandas as pd  # lazy: only for tables

    rows = [r if isinstance(r, dict) else asdict(r) for r in results]
    return pd.DataFrame([{k: v for k, v in r.items() if k not in ("retrieved", "stage_ms")} for r in rows]).set_index("id")


def per_question(retriever, questions: list[Question], modes=("dense", "bm25", "hybrid"), k: int = 5,
                 user: tuple[str, ...] | None = None, depth: int = 10):
    """One row per answerable question: recall@k and the first relevant rank within ``depth`` for
    each mode (a DataFrame; no relevant chunk in the top ``depth``: rank None)."""
    import pandas as pd  # lazy: only for tables

    rows = []
    for q in questions:
        if not q.evidence:
            continue
        row = {"id": q.id, "type": q.type, "question": q.question}
        for mode in modes:
            hits = retriever.search(q.question, mode, max(k, depth), user)
            chunks = [retriever.index.chunk(h.id) for h in hits]
            row[f"{mode} recall@{k}"] = evidence_recall(chunks, q, k)
            rr = first_relevant_rr(chunks, q, depth)
            row[f"{mode} rank"] = round(1 / rr) if rr else None
        rows.append(row)
    return pd.DataFrame(rows).set_index("id")


def scores_frame(board: dict, latency: bool = False):
    """The scoreboard's scores (or, with ``latency=True``, its timings) as a DataFrame with intervals."""
    import pandas as pd  # lazy: only for tables

    rows = [{"score": key, **val} for key, val in board.items()
            if isinstance(val, dict) and "value" in val and not key.endswith("@k") and key.endswith("_ms") == latency]
    return pd.DataFrame(rows).set_index("score")
