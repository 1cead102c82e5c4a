"""Golden sets and retrieval metrics.

A golden set is JSONL, one question a line::

    {"id", "type", "question", "answer", "facts": [...], "evidence": [{"doc": ..., "quote": ...}]}

A retrieved chunk *supports* an evidence item when it comes from that ``doc`` and, where a
``quote`` is given, contains the quote with whitespace folded. Metrics are computed from
these matches, so a golden set never depends on one chunking.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

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


def supports(chunk: Chunk, evidence: dict) -> bool:
    """Does this chunk hold the evidence item (same document, and the quote if one is given)?"""
    if chunk.doc != evidence["doc"]:
        return False
    quote = evidence.get("quote")
    return not quote or fold(quote) in fold(chunk.text)


def evidence_found(chunks: list[Chunk], question: Question, k: int) -> list[bool]:
    """For each evidence item: is it supported by one of the first ``k`` chunks?"""
    top = chunks[:k]
    return [any(supports(c, ev) for c in top) for ev in question.evidence]


def recall_at_k(chunks: list[Chunk], question: Question, k: int) -> float:
    """Share of the question's evidence items supported within the top ``k`` (evidence level)."""
    found = evidence_found(chunks, question, k)
    return sum(found) / len(found) if found else 0.0


def reciprocal_rank(chunks: list[Chunk], question: Question, k: int = 10) -> float:
    """1 / rank of the first chunk that supports any evidence item (0 if none in the top ``k``)."""
    for rank, c in enumerate(chunks[:k], 1):
        if any(supports(c, ev) for ev in question.evidence):
            return 1.0 / rank
    return 0.0


def per_question(retriever, questions: list[Question], modes=("dense", "bm25", "hybrid"), k: int = 5,
                 user: tuple[str, ...] | None = None):
    """One row per answerable question: recall@k and first relevant rank for each mode (a DataFrame)."""
    import pandas as pd

    rows = []
    for q in questions:
        if not q.evidence:
            continue
        row = {"id": q.id, "type": q.type, "question": q.question}
        for mode in modes:
            hits = retriever.search(q.question, mode, max(k, 10), user)
            chunks = [retriever.index.chunks[retriever.index.row_of[h.id]] for h in hits]
            row[f"{mode} recall@{k}"] = recall_at_k(chunks, q, k)
            rr = reciprocal_rank(chunks, q, 10)
            row[f"{mode} rank"] = round(1 / rr) if rr else None
        rows.append(row)
    return pd.DataFrame(rows).set_index("id")
