"""Golden sets: JSONL, one question a line, validated on load (an error names file, line and field).

    {"id", "type", "question", "answer", "facts": [...], "evidence": [{"doc": ..., "quote": ...}]}

The sets that ship are found by corpus name in ``raglab.infra.corpora``; ``$RAGLAB_GOLDEN`` names a file
used instead (a student's own set, checked by ``check_student_golden``: ``raglab golden check FILE``)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from raglab.base import config
from raglab.base.files import jsonl_records
from raglab.infra.corpora import REGISTRY, golden_path
from raglab.infra.corpus import load_corpus

SPLITS = ("dev", "test")
TYPES = ("fact", "multi", "identifier", "paraphrase", "unanswerable")
# The least a student's own golden set holds (evals/README.md, "A golden set of your own").
STUDENT_MIX = {"questions": 30, "fact": 15, "multi": 6, "identifier": 4, "unanswerable": 5}


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


def golden_file(corpus: str, profile: str | None = None) -> Path:
    """The golden set a corpus is scored on: the file ``$RAGLAB_GOLDEN`` names when it is set (a
    student's own set), else the set that ships for the corpus and profile (``corpora.golden_path``)."""
    return Path(config.get("RAGLAB_GOLDEN") or golden_path(corpus, profile))


def _line_problems(rec, seen: set, by_id: dict | None, folded: dict) -> tuple[list[str], bool]:
    """What is wrong with one golden line (messages without the ``file:line`` prefix), and whether
    it is a question (right fields and type, an id not seen before). ``by_id`` (the corpus's
    documents by id) adds the evidence checks; ``folded`` caches folded page texts."""
    if not isinstance(rec, dict):
        return ["not a JSON object"], False
    for key in ("id", "type", "question"):
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            return [f"field {key!r} is missing or empty"], False
    if rec["type"] not in TYPES:
        return [f"field 'type' is {rec['type']!r}, not one of {', '.join(TYPES)}"], False
    problems, fresh = [], rec["id"] not in seen
    if not fresh:
        problems.append(f"duplicate id {rec['id']!r}")
    seen.add(rec["id"])
    evidence = rec.get("evidence") or []
    if rec["type"] == "unanswerable" and evidence:
        problems.append("an unanswerable question must have an empty 'evidence' list")
    if rec["type"] != "unanswerable" and not evidence:
        problems.append("field 'evidence' is empty for an answerable question")
    for n, ev in enumerate(evidence):
        if not isinstance(ev, dict) or not ev.get("doc"):
            problems.append(f"evidence[{n}] has no 'doc'")
        elif by_id is not None and ev["doc"] not in by_id:
            problems.append(f"evidence[{n}] document {ev['doc']!r} is not in the corpus")
        elif by_id is not None and ev.get("quote"):
            if fold(ev["quote"]) not in folded.setdefault(ev["doc"], fold(by_id[ev["doc"]].text)):
                problems.append(f"evidence[{n}] quote not found in {ev['doc']}: {ev['quote'][:70]!r}")
    return problems, fresh


def _checked_lines(path: str | Path, docs=None) -> tuple[list[tuple[str, dict, Question]], list[tuple[str, str, str]]]:
    """Every line of a golden set checked, none skipped: ``(where, record, question)`` for each line
    that is a question and ``(where, id, message)`` for each problem, in file order (a line that is
    not JSON is a problem, its id empty)."""
    by_id = {d.id: d for d in docs} if docs is not None else None
    lines, problems, seen, folded, bad_json = [], [], set(), {}, []
    known = {"id", "type", "question", "answer", "facts", "evidence"}
    for where, rec in jsonl_records(path, bad_json):
        problems += [(w, "", message) for w, message in bad_json]
        bad_json.clear()
        found, is_question = _line_problems(rec, seen, by_id, folded)
        qid = rec["id"] if isinstance(rec, dict) and isinstance(rec.get("id"), str) else ""
        problems += [(where, qid, message) for message in found]
        if is_question:
            lines.append((where, rec, Question(rec["id"], rec["type"], rec["question"], rec.get("answer", ""),
                                               tuple(rec.get("facts") or ()), tuple(rec.get("evidence") or ()),
                                               {k: v for k, v in rec.items() if k not in known})))
    problems += [(w, "", message) for w, message in bad_json]
    return lines, problems


def load_golden(path: str | Path, docs=None, split: str | None = None) -> list[Question]:
    """Read and validate a golden set; an error names the file, line and field (the first problem).

    ``path`` is a JSONL file or the name of a bundled corpus (``"python-docs"``: its golden set
    for the current profile, from ``raglab.infra.corpora``, or the file ``$RAGLAB_GOLDEN`` names when it
    is set). With ``docs`` (the corpus), every evidence document must exist and contain its quote.
    ``split`` (``dev`` or ``test``) keeps that split's questions only; a file without splits is
    then an error.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if str(path) in REGISTRY:
        path = golden_file(str(path))
    lines, problems = _checked_lines(path, docs)
    if problems:
        where, _, message = problems[0]
        raise ValueError(f"{where}: {message}")
    questions = [q for _, _, q in lines]
    if split is not None:
        if not any(q.split for q in questions):
            raise ValueError(f"{path}: no question has a 'split' field, so there is no {split!r} split")
        questions = [q for q in questions if q.split == split]
    return questions


def golden_problems(path: str | Path, docs) -> tuple[list[tuple[str, dict, Question]], list[str]]:
    """Every problem of a golden set checked against its corpus, as ``file:line: id: message``, and
    its questions (``(where, record, question)``): what ``validate_golden`` reports.

    Besides ``load_golden``'s checks (fields, types, ids, evidence documents and quotes, whitespace
    folded), an unanswerable question's ``absent`` terms must occur in no document
    (case-insensitive) and ``split``, where given, is ``dev`` or ``test``.
    """
    docs = list(docs)
    lines, problems = _checked_lines(path, docs)
    lowered = [d.text.lower() for d in docs] if any(rec.get("absent") for _, rec, _ in lines) else []
    for where, rec, q in lines:
        for term in rec.get("absent") or ():
            if q.type != "unanswerable":
                problems.append((where, q.id, "'absent' is only for unanswerable questions"))
                break
            hits = [d.id for d, low in zip(docs, lowered) if term.lower() in low]
            if hits:
                problems.append((where, q.id, f"absent term {term!r} occurs in {', '.join(hits[:3])}"))
        if "split" in rec and rec["split"] not in SPLITS:
            problems.append((where, q.id, f"field 'split' is {rec['split']!r}, not one of {', '.join(SPLITS)}"))
    problems.sort(key=lambda p: int(p[0].rsplit(":", 1)[1]))           # file order (a stable sort)
    return lines, [f"{where}: {qid}: {message}" if qid else f"{where}: {message}" for where, qid, message in problems]


def validate_golden(path: str | Path, docs) -> list[Question]:
    """Load a golden set and check it against its corpus; one ``ValueError`` lists every problem as
    ``file:line: id: message`` (``golden_problems``). Opt-in, stricter than ``load_golden(path, docs)``.
    Returns the questions."""
    lines, problems = golden_problems(path, docs)
    if problems:
        raise ValueError(f"{len(problems)} problem(s) in {path}:\n" + "\n".join(problems))
    return [q for _, _, q in lines]


@dataclass
class StudentCheck:
    """What ``check_student_golden`` found: every problem (none: the set is usable), the questions
    by type, and each question that is also in one of the project's golden sets."""

    path: str
    counts: dict[str, int]
    copies: list[str]
    problems: list[str]

    @property
    def questions(self) -> int:
        return sum(self.counts.values())

    @property
    def share(self) -> float:
        """The fraction of the questions copied from the project's golden sets."""
        return len(self.copies) / self.questions if self.questions else 0.0

    def lines(self) -> list[str]:
        """The report as printed by ``raglab golden check``."""
        mix = ", ".join(f"{t} {self.counts.get(t, 0)}" for t in TYPES)
        head = (f"{self.path}: {self.questions} questions ({mix}); {len(self.copies)} also in the project's "
                f"golden sets ({self.share:.0%})")
        verdict = f"{len(self.problems)} problem(s)" if self.problems else "ok: usable as RAGLAB_GOLDEN"
        return [head, *self.copies, *self.problems, verdict]


def question_key(text: str) -> str:
    """A question as compared between sets: case and whitespace folded.

    >>> question_key("What  does\\nJSON do?") == question_key("what does json DO?")
    True
    """
    return fold(text).casefold()


def check_student_golden(path: str | Path, docs, minimum: dict[str, int] = STUDENT_MIX) -> StudentCheck:
    """Check a student's own golden set against the corpus and the required mix, collecting every problem.

    Everything ``validate_golden`` checks (bad JSON, fields, duplicate ids, evidence pages not in
    the corpus, quotes not found, as ``file:line: id: message``), then: at least
    ``minimum["questions"]`` questions and ``minimum[type]`` of each type; a ``multi`` question has
    two or more evidence items; in a split set every line has a split and the dev split holds
    answerable and unanswerable questions (``raglab tune`` chooses the refusal threshold on them).
    Questions also in the project's golden sets (case and whitespace folded) are listed in
    ``copies``; more than half copied is a problem.
    """
    unknown = set(minimum) - {"questions", *TYPES}
    if unknown:
        raise ValueError(f"minimum: unknown key(s) {', '.join(sorted(unknown))} (use 'questions' or {', '.join(TYPES)})")
    lines, line_problems = golden_problems(path, docs)
    counts = Counter(q.type for _, _, q in lines)
    n = len(lines)
    problems = []
    if n < minimum.get("questions", 0):
        problems.append(f"{path}: {n} questions, at least {minimum['questions']} needed")
    for kind in TYPES:
        have, need = counts[kind], minimum.get(kind, 0)
        if have < need:
            problems.append(f"{path}: {have or 'no'} {kind} question{'' if have == 1 else 's'}, at least {need} needed")
    project = {}
    for shipped in sorted({golden_path(name, profile) for name, e in REGISTRY.items() for profile in e.golden}):
        for q in load_golden(shipped):
            project.setdefault(question_key(q.question), f"{shipped.relative_to(config.PROJECT_ROOT)} {q.id}")
    copies = [f"{where}: {q.id}: the same question as {project[question_key(q.question)]}"
              for where, _, q in lines if question_key(q.question) in project]
    if 2 * len(copies) > n:
        problems.append(f"{path}: {len(copies)} of {n} questions ({len(copies) / n:.0%}) are copies of the project's "
                        f"golden sets, more than half: write your own")
    split = [q for _, _, q in lines if q.split]
    dev = [q for q in split if q.split == "dev"]
    if split and not (any(q.type == "unanswerable" for q in dev) and any(q.type != "unanswerable" for q in dev)):
        problems.append(f"{path}: the dev split needs answerable and unanswerable questions to tune the refusal "
                        f"threshold on (it has {sum(q.type != 'unanswerable' for q in dev)} answerable, "
                        f"{sum(q.type == 'unanswerable' for q in dev)} unanswerable)")
    for where, _, q in lines:
        if q.type == "multi" and len(q.evidence) < 2:
            line_problems.append(f"{where}: {q.id}: a multi question needs two or more evidence items, it has {len(q.evidence)}")
        if split and not q.split:
            line_problems.append(f"{where}: {q.id}: no 'split' while other lines have one (it would be in neither split)")
    after = len(f"{path}:")                                  # each line's problems start with file:line
    problems += sorted(line_problems, key=lambda p: int(p[after:].split(":", 1)[0]))
    return StudentCheck(str(path), {t: counts[t] for t in TYPES}, copies, problems)


def user_for(question: Question) -> tuple[str, ...] | None:
    """The access groups a golden question is asked with (``"access": "premium"`` questions as premium)."""
    access = question.extra.get("access")
    return (access,) if access and access != "public" else None


def answerable_questions(corpus: str, profile: str | None = None, golden: str | Path | None = None,
                         split: str | None = None):
    """The golden set's answerable questions (validated against the corpus): what retrieval is scored on;
    ``split`` keeps one split (``dev`` or ``test``) of a split set."""
    return [q for q in load_golden(golden or golden_file(corpus), load_corpus(corpus, profile), split)
            if q.type != "unanswerable"]
