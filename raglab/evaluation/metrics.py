"""Retrieval and answer metrics, each a small function with its formula: recall@k, hit@k, reciprocal
rank, nDCG@k over chunk ids; evidence recall (a chunk supports an evidence item when it comes from
its document and contains its quote); facts present in an answer."""
from __future__ import annotations

import math
import re

from raglab.book.chunking import Chunk
from raglab.evaluation.golden import Question, fold


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


def doc_hit(chunks: list[Chunk], question: Question, k: int) -> float:
    """1.0 when some chunk in the top ``k`` comes from a document named by an evidence item (document hit@k)."""
    docs = {ev["doc"] for ev in question.evidence}
    return float(any(c.doc in docs for c in chunks[:k]))


def first_relevant_rr(chunks: list[Chunk], question: Question, k: int = 10) -> float:
    """Reciprocal rank of the first chunk that supports any evidence item."""
    return reciprocal_rank([c.id for c in chunks], {c.id for c in chunks[:k] if any(supports(c, e) for e in question.evidence)}, k)


def normalize_answer(text: str) -> str:
    """Lowercase, quotes and backticks dropped, whitespace folded: the form facts are compared in.

    >>> normalize_answer('Use  "json.dumps()" ')
    'use json.dumps()'
    """
    return fold(re.sub(r"[\"'`*]", "", text.lower()))


def facts_present(answer: str, facts: tuple[str, ...]) -> bool:
    """Every required fact occurs in the answer (normalized)."""
    a = normalize_answer(answer)
    return all(normalize_answer(f) in a for f in facts)


def answer_correct(q: Question, answer) -> float:
    """1.0 when an unanswerable question was refused, or an answerable one answered with every required fact."""
    if q.type == "unanswerable":
        return float(answer.refused)
    return float(not answer.refused and facts_present(answer.answer, q.facts))
