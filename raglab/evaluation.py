"""Golden sets and retrieval metrics.

A golden set is JSONL, one question a line::

    {"id", "type", "question", "answer", "facts": [...], "evidence": [{"doc": ..., "quote": ...}]}

A retrieved chunk *supports* an evidence item when it comes from that ``doc`` and, where a
``quote`` is given, contains the quote with whitespace folded. Metrics are computed from
these matches, so a golden set never depends on one chunking.
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .chunking import Chunk

TYPES = ("fact", "multi", "identifier", "paraphrase", "unanswerable")


@dataclass(frozen=True)
class Question:
    """One golden-set line."""

    id: str
    type: str
    question: str
    answer: str
    facts: tuple[str, ...] = ()
    evidence: tuple[dict, ...] = ()
    extra: dict = field(default_factory=dict, compare=False)


def fold(text: str) -> str:
    """Whitespace folded to single spaces, for quote matching.

    >>> fold("a  b\\n c")
    'a b c'
    """
    return " ".join(text.split())


def load_golden(path: str | Path, docs=None) -> list[Question]:
    """Read and validate a golden set; an error names the file, line and field.

    With ``docs`` (the corpus), every evidence document must exist and contain its quote.
    """
    by_id = {d.id: d for d in docs} if docs is not None else None
    questions, seen = [], set()
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
        for key in ("id", "type", "question"):
            if not isinstance(rec.get(key), str) or not rec[key].strip():
                raise ValueError(f"{where}: field {key!r} is missing or empty")
        if rec["type"] not in TYPES:
            raise ValueError(f"{where}: field 'type' is {rec['type']!r}, not one of {', '.join(TYPES)}")
        if rec["id"] in seen:
            raise ValueError(f"{where}: duplicate id {rec['id']!r}")
        seen.add(rec["id"])
        evidence = rec.get("evidence") or []
        if rec["type"] == "unanswerable" and evidence:
            raise ValueError(f"{where}: an unanswerable question must have an empty 'evidence' list")
        if rec["type"] != "unanswerable" and not evidence:
            raise ValueError(f"{where}: field 'evidence' is empty for an answerable question")
        for n, ev in enumerate(evidence):
            if not isinstance(ev, dict) or not ev.get("doc"):
                raise ValueError(f"{where}: evidence[{n}] has no 'doc'")
            if by_id is not None:
                if ev["doc"] not in by_id:
                    raise ValueError(f"{where}: evidence[{n}] document {ev['doc']!r} is not in the corpus")
                if ev.get("quote") and fold(ev["quote"]) not in fold(by_id[ev["doc"]].text):
                    raise ValueError(f"{where}: evidence[{n}] quote not found in {ev['doc']}: {ev['quote'][:60]!r}")
        known = {"id", "type", "question", "answer", "facts", "evidence"}
        questions.append(Question(rec["id"], rec["type"], rec["question"], rec.get("answer", ""),
                                  tuple(rec.get("facts") or ()), tuple(evidence),
                                  {k: v for k, v in rec.items() if k not in known}))
    return questions


SPLITS = ("dev", "test")


def validate_golden(path: str | Path, docs) -> list[Question]:
    """Load a golden set and check it against its corpus; one ``ValueError`` lists every problem as ``file:line``.

    Opt-in, stricter than ``load_golden(path, docs)``: every evidence document exists and holds its
    quote (whitespace folded); an unanswerable question's ``absent`` terms occur in no document
    (case-insensitive); ``split``, where given, is ``dev`` or ``test``. Returns the questions.
    """
    questions = load_golden(path)                    # structure first: ids, types, evidence presence
    docs = list(docs)
    by_id = {d.id: d for d in docs}
    folded: dict[str, str] = {}
    lowered = [d.text.lower() for d in docs]
    problems = []
    lines = [(n, line) for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    for (lineno, line), q in zip(lines, questions):
        rec, where = json.loads(line), f"{path}:{lineno}: {q.id}"
        for n, ev in enumerate(q.evidence):
            doc = by_id.get(ev["doc"])
            if doc is None:
                problems.append(f"{where}: evidence[{n}] document {ev['doc']!r} is not in the corpus")
            elif ev.get("quote"):
                text = folded.setdefault(doc.id, fold(doc.text))
                if fold(ev["quote"]) not in text:
                    problems.append(f"{where}: evidence[{n}] quote not found in {doc.id}: {ev['quote'][:70]!r}")
        for term in rec.get("absent") or ():
            if q.type != "unanswerable":
                problems.append(f"{where}: 'absent' is only for unanswerable questions")
                break
            found = [d.id for d, low in zip(docs, lowered) if term.lower() in low]
            if found:
                problems.append(f"{where}: absent term {term!r} occurs in {', '.join(found[:3])}")
        if "split" in rec and rec["split"] not in SPLITS:
            problems.append(f"{where}: field 'split' is {rec['split']!r}, not one of {', '.join(SPLITS)}")
    if problems:
        raise ValueError(f"{len(problems)} problem(s) in {path}:\n" + "\n".join(problems))
    return questions


def supports(chunk: Chunk, evidence: dict) -> bool:
    """Does this chunk hold the evidence item (same document, and the quote if one is given)?"""
    if chunk.doc != evidence["doc"]:
        return False
    quote = evidence.get("quote")
    return not quote or fold(quote) in fold(chunk.text)


def relevant_ids(chunks: list[Chunk], question: Question) -> set[str]:
    """Ids of every chunk (of an index) that supports at least one evidence item."""
    return {c.id for c in chunks if c.doc in {e["doc"] for e in question.evidence}
            and any(supports(c, e) for e in question.evidence)}


# ---------------------------------------------------------------- metrics on ranked id lists

def recall(ranked: list[str], relevant: set[str], k: int) -> float:
    """|relevant in the top k| / |relevant| (0 when nothing is relevant).

    >>> recall(["x", "a", "y", "b"], {"a", "b"}, 3)
    0.5
    """
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def hit(ranked: list[str], relevant: set[str], k: int) -> float:
    """1 if any of the top k is relevant, else 0."""
    return float(bool(relevant.intersection(ranked[:k])))


def reciprocal_rank(ranked: list[str], relevant: set[str], k: int | None = None) -> float:
    """1 / rank of the first relevant item within the top k (0 if none).

    >>> reciprocal_rank(["x", "a", "y", "b"], {"a", "b"})
    0.5
    """
    for rank, item in enumerate(ranked[:k], 1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def ndcg(ranked: list[str], relevant: set[str], k: int = 10) -> float:
    """nDCG@k with binary gains: sum over hits of 1/log2(rank+1), over the ideal ordering's sum."""
    dcg = sum(1.0 / math.log2(r + 1) for r, item in enumerate(ranked[:k], 1) if item in relevant)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(relevant), k) + 1))
    return dcg / ideal if ideal else 0.0


def evidence_recall(chunks: list[Chunk], question: Question, k: int) -> float:
    """Share of the question's evidence items supported within the top ``k`` chunks (the design's recall@k)."""
    found = [any(supports(c, ev) for c in chunks[:k]) for ev in question.evidence]
    return sum(found) / len(found) if found else 0.0


def first_relevant_rr(chunks: list[Chunk], question: Question, k: int = 10) -> float:
    """Reciprocal rank of the first chunk that supports any evidence item."""
    return reciprocal_rank([c.id for c in chunks], {c.id for c in chunks[:k] if any(supports(c, e) for e in question.evidence)}, k)


# ---------------------------------------------------------------- answers

def normalize(text: str) -> str:
    """Lowercase, quotes and backticks dropped, whitespace folded: the form facts are compared in.

    >>> normalize('Use  "json.dumps()" ')
    'use json.dumps()'
    """
    return fold(re.sub(r"[\"'`*]", "", text.lower()))


def facts_present(answer: str, facts: tuple[str, ...]) -> bool:
    """Every required fact occurs in the answer (normalized)."""
    a = normalize(answer)
    return all(normalize(f) in a for f in facts)


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
    stage_ms: dict = field(default_factory=dict)
    failure: str | None = None


def user_for(question: Question) -> tuple[str, ...] | None:
    """The access groups a golden question is asked with (``"access": "premium"`` questions as premium)."""
    access = question.extra.get("access")
    return (access,) if access and access != "public" else None


def evaluate(retriever, questions: list[Question], k: int = 5, mode: str = "rerank", assistant=None,
             depth: int = 10) -> list[Result]:
    """Run every question; retrieval metrics always, answer metrics when ``assistant`` is given.

    Every ranked list is cut to the same depth (``max(k, depth)``) before scoring.
    """
    chunks_of = retriever.index.chunks
    row = retriever.index.row_of
    results = []
    for q in questions:
        user = user_for(q)
        t = time.perf_counter()
        hits = retriever.search(q.question, mode, max(k, depth), user)
        ms = (time.perf_counter() - t) * 1000
        ranked = [chunks_of[row[h.id]] for h in hits]
        ids = [c.id for c in ranked]
        rel = relevant_ids(chunks_of, q)
        docs = {e["doc"] for e in q.evidence}
        res = Result(q.id, q.type, evidence_recall(ranked, q, k), evidence_recall(ranked, q, 3),
                     float(any(c.doc in docs for c in ranked[:k])), reciprocal_rank(ids, rel, depth),
                     ndcg(ids, rel, 10), round(ms, 2), ids)
        if assistant is not None:
            _score_answer(res, q, assistant.ask(q.question, user), retrieved_chunks=chunks_of, row=row)
        res.failure = failure_stage(res, q, k)
        results.append(res)
    return results


def answer_correct(q: Question, answer) -> float:
    """1.0 when an unanswerable question was refused, or an answerable one answered with every required fact."""
    if q.type == "unanswerable":
        return float(answer.refused)
    return float(not answer.refused and facts_present(answer.answer, q.facts))


def _score_answer(res: Result, q: Question, answer, retrieved_chunks, row) -> None:
    from .generate import check_citations, Source

    unanswerable = q.type == "unanswerable"
    res.answered, res.reason, res.stage_ms = not answer.refused, answer.reason, dict(answer.timings_ms)
    res.correct = answer_correct(q, answer)
    res.abstention_ok = float(answer.refused == unanswerable)
    if answer.reason not in ("weak-evidence", "model-refused"):
        sources = [Source(n, retrieved_chunks[row[r["id"]]]) for n, r in enumerate(answer.retrieved, 1)]
        raw = check_citations(answer.raw, sources)
        res.citation_valid = float(raw.reason is None or (answer.attributed and not answer.refused))
    if not unanswerable and not answer.refused:
        cited = [retrieved_chunks[row[c.id]] for c in answer.citations]
        res.citation_support = float(any(supports(c, e) for c in cited for e in q.evidence))


def failure_stage(res: Result, q: Question, k: int) -> str | None:
    """Where a missed question failed: retrieval, ranking, generation or refusal (None if it did not fail)."""
    if q.type == "unanswerable":
        return "refusal" if res.answered else None
    if res.answered is False and res.reason in ("weak-evidence", "model-refused"):
        return "refusal" if res.recall > 0 else ("retrieval" if res.rr == 0 else "ranking")
    if res.recall == 0:
        return "retrieval" if res.rr == 0 else "ranking"
    if res.correct is not None and res.correct < 1:
        return "generation"
    return None


# ---------------------------------------------------------------- intervals and comparisons

def bootstrap_ci(values, reps: int = 2000, seed: int = 0, level: float = 0.95, stat=np.mean) -> dict:
    """A statistic (the mean by default) with a percentile bootstrap interval over questions:
    ``{"value", "ci_low", "ci_high"}``. Missing values (None) are left out."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if not len(v):
        return {"value": None, "ci_low": None, "ci_high": None}
    rng = np.random.default_rng(seed)
    samples = v[rng.integers(0, len(v), size=(reps, len(v)))]
    stats = stat(samples, axis=1)
    lo, hi = np.percentile(stats, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return {"value": round(float(stat(v)), 4), "ci_low": round(float(lo), 4), "ci_high": round(float(hi), 4)}


def _quantile(q: float):
    """A statistic for ``bootstrap_ci``: the q-th percentile."""
    return lambda a, axis=None: np.percentile(a, q, axis=axis)


def paired_test(a, b, reps: int = 10000, seed: int = 0) -> dict:
    """Is config B different from A on the same questions? Mean difference (B − A) with a paired
    bootstrap 95% interval, and a two-sided sign-flip randomization p-value."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    rng = np.random.default_rng(seed)
    boot = d[rng.integers(0, len(d), size=(reps, len(d)))].mean(axis=1)
    flips = rng.choice([-1.0, 1.0], size=(reps, len(d)))
    null = np.abs((flips * d).mean(axis=1))
    p = (1 + int((null >= abs(d.mean()) - 1e-12).sum())) / (reps + 1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"diff": round(float(d.mean()), 4), "ci_low": round(float(lo), 4), "ci_high": round(float(hi), 4),
            "p_value": round(p, 4), "significant": bool(p < 0.05 and (lo > 0 or hi < 0))}


def _pct(values, q):
    v = [x for x in values if x is not None]
    return round(float(np.percentile(v, q)), 1) if v else None


def scoreboard(results: list[Result], k: int, reps: int = 2000, seed: int = 0) -> dict:
    """Every score family with a bootstrap interval, in the JSON shape of ``raglab eval``."""
    answerable = [r for r in results if r.type != "unanswerable"]
    board = {"n_questions": len(results), "k": k,
             "interval": {"level": 0.95, "reps": reps, "method": "percentile bootstrap over questions"},
             f"hit@{k}": bootstrap_ci([r.hit for r in answerable], reps, seed),
             f"recall@{k}": bootstrap_ci([r.recall for r in answerable], reps, seed),
             "mrr": bootstrap_ci([r.rr for r in answerable], reps, seed),
             "ndcg@10": bootstrap_ci([r.ndcg10 for r in answerable], reps, seed),
             "retrieval_latency_p50_ms": bootstrap_ci([r.retrieve_ms for r in results], reps, seed, stat=_quantile(50)),
             "retrieval_latency_p95_ms": bootstrap_ci([r.retrieve_ms for r in results], reps, seed, stat=_quantile(95))}
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
            "latency_p50_ms": bootstrap_ci(total, reps, seed, stat=_quantile(50)),
            "latency_p95_ms": bootstrap_ci(total, reps, seed, stat=_quantile(95)),
            "stage_latency_ms": {s: {"p50": _pct([r.stage_ms.get(s) for r in results], 50),
                                     "p95": _pct([r.stage_ms.get(s) for r in results], 95)}
                                 for s in ("retrieve", "rerank", "generate", "check")},
        })
    board["failures"] = {stage: [r.id for r in results if r.failure == stage]
                         for stage in ("retrieval", "ranking", "generation", "refusal")}
    return board


def run_golden(assistant, golden: str | Path, k: int = 5, mode: str = "rerank", retrieval_only: bool = False) -> dict:
    """Evaluate an assistant on a golden set: the scoreboard dict (``raglab eval --json``), with run details."""

    index = assistant.retriever.index
    questions = load_golden(golden, _corpus_docs(index))
    results = evaluate(assistant.retriever, questions, k, mode, None if retrieval_only else assistant)
    m = index.manifest
    board = {"golden": str(golden), "corpus": m["corpus"], "profile": m["profile"], "chunking": m["chunking"],
             "mode": mode, "generator": None if retrieval_only else assistant.generator.name,
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
    from . import traces as trace_files

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
    from .corpus import load_corpus

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
    import pandas as pd

    rows = [r if isinstance(r, dict) else asdict(r) for r in results]
    return pd.DataFrame([{k: v for k, v in r.items() if k not in ("retrieved", "stage_ms")} for r in rows]).set_index("id")


def per_question(retriever, questions: list[Question], modes=("dense", "bm25", "hybrid"), k: int = 5,
                 user: tuple[str, ...] | None = None, depth: int = 10):
    """One row per answerable question: recall@k and the first relevant rank within ``depth`` for
    each mode (a DataFrame; no relevant chunk in the top ``depth``: rank None)."""
    import pandas as pd

    rows = []
    for q in questions:
        if not q.evidence:
            continue
        row = {"id": q.id, "type": q.type, "question": q.question}
        for mode in modes:
            hits = retriever.search(q.question, mode, max(k, depth), user)
            chunks = [retriever.index.chunks[retriever.index.row_of[h.id]] for h in hits]
            row[f"{mode} recall@{k}"] = evidence_recall(chunks, q, k)
            rr = first_relevant_rr(chunks, q, depth)
            row[f"{mode} rank"] = round(1 / rr) if rr else None
        rows.append(row)
    return pd.DataFrame(rows).set_index("id")


def scores_frame(board: dict, latency: bool = False):
    """The scoreboard's scores (or, with ``latency=True``, its timings) as a DataFrame with intervals."""
    import pandas as pd

    rows = [{"score": key, **val} for key, val in board.items()
            if isinstance(val, dict) and "value" in val and not key.endswith("@k") and key.endswith("_ms") == latency]
    return pd.DataFrame(rows).set_index("score")
