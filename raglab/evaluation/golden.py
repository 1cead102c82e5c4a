"""Golden sets: JSONL, one question a line, validated on load (an error names file, line and field).

    {"id", "type", "question", "answer", "facts": [...], "evidence": [{"doc": ..., "quote": ...}]}

The sets that ship are found by corpus name in ``raglab.corpora``."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from raglab.corpora import REGISTRY, golden_path
from raglab.corpus import load_corpus

SPLITS = ("dev", "test")
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

    @property
    def split(self) -> str | None:
        """``dev`` or ``test`` in a split golden set, else None."""
        return self.extra.get("split")


def fold(text: str) -> str:
    """Whitespace folded to single spaces, for quote matching.

    >>> fold("a  b\\n c")
    'a b c'
    """
    return " ".join(text.split())


def jsonl_records(path: str | Path):
    """Yield ``(where, record)`` for each non-blank line of a JSONL file, ``where`` being ``file:line``;
    a line that is not JSON is a ``ValueError`` naming it."""
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None


def load_golden(path: str | Path, docs=None, split: str | None = None) -> list[Question]:
    """Read and validate a golden set; an error names the file, line and field.

    ``path`` is a JSONL file or the name of a bundled corpus (``"python-docs"``: its golden set
    for the current profile, from ``raglab.corpora``). With ``docs`` (the corpus), every evidence
    document must exist and contain its quote. ``split`` (``dev`` or ``test``) keeps that split's
    questions only; a file without splits is then an error.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if str(path) in REGISTRY:
        path = golden_path(str(path))
    by_id = {d.id: d for d in docs} if docs is not None else None
    questions, seen = [], set()
    for where, rec in jsonl_records(path):
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
    if split is not None:
        if not any(q.split for q in questions):
            raise ValueError(f"{path}: no question has a 'split' field, so there is no {split!r} split")
        questions = [q for q in questions if q.split == split]
    return questions


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


def user_for(question: Question) -> tuple[str, ...] | None:
    """The access groups a golden question is asked with (``"access": "premium"`` questions as premium)."""
    access = question.extra.get("access")
    return (access,) if access and access != "public" else None


def answerable_questions(corpus: str, profile: str | None = None, golden: str | Path | None = None):
    """The golden set's answerable questions (validated against the corpus): what retrieval is scored on."""
    return [q for q in load_golden(golden or golden_path(corpus), load_corpus(corpus, profile))
            if q.type != "unanswerable"]
