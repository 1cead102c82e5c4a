"""Whose questions the course measures with: your ``golden.jsonl`` when it passes the check, else the course's.

Milestone 2 asks you to write a golden set of your own in ``golden.jsonl``, beside the notebooks. From then
on every milestone measures with the set this module picks, and prints which one in a line near its top:

1. the file ``$RAGLAB_GOLDEN`` names, when it is set (``raglab workbook --golden FILE`` sets it);
2. else ``golden.jsonl`` in the notebook's folder, when it passes ``raglab golden check`` for the corpus
   (``check_student_golden``) and every line carries a ``split`` (``dev`` or ``test``);
3. else the course's set for the corpus and profile (``evals/python_docs_golden.jsonl`` on the small
   profile), which carries a split of its own. The line then says why yours is not used yet.

Every choice is made on the ``dev`` split; milestone 6 reads ``test`` once, to report what was chosen.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from raglab.base import config
from raglab.evaluation.golden import SPLITS, Question, check_student_golden, load_golden
from raglab.infra.corpora import golden_path
from raglab.infra.corpus import load_corpus

STUDENT_FILE = "golden.jsonl"


@dataclass(frozen=True)
class GoldenInUse:
    """A golden set, whose it is, and why a student's set beside the notebooks was passed over (if it was)."""

    corpus: str
    path: Path
    whose: str                          # "yours", "RAGLAB_GOLDEN's" or "the course's"
    questions: tuple[Question, ...]
    passed_over: str = ""               # why golden.jsonl beside the notebooks is not the set

    def split(self, name: str, answerable: bool = False) -> list[Question]:
        """The questions of one split (``dev`` or ``test``), in file order; only answerable ones if asked."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {name!r}")
        return [q for q in self.questions if q.split == name and not (answerable and q.type == "unanswerable")]

    @property
    def dev(self) -> list[Question]:
        return self.split("dev")

    @property
    def test(self) -> list[Question]:
        return self.split("test")

    def read(self, name: str) -> dict:
        """What a milestone records of the questions it read: the corpus, the set (its file, a hash of its
        content, whose it is), the split and the ids, so that a checker can tell whose questions, and which
        split, each artifact measured (``raglab.course.criteria.read_test_once``)."""
        return {"corpus": self.corpus, "golden": self.path.name, "whose": self.whose,
                "sha256": hashlib.sha256(self.path.read_bytes()).hexdigest()[:16],
                "split": name, "ids": [q.id for q in self.split(name)]}

    def line(self) -> str:
        """The one line a milestone prints near its top: the corpus, whose set, and the size of each split.

        >>> q = Question("q1", "fact", "What?", "", extra={"split": "dev"})
        >>> GoldenInUse("python-docs", Path("golden.jsonl"), "yours", (q,)).line()
        'corpus python-docs; golden set: yours (golden.jsonl), 1 dev and 0 test questions'
        """
        said = (f"corpus {self.corpus}; golden set: {self.whose} ({self.path.name}), "
                f"{len(self.dev)} dev and {len(self.test)} test questions")
        return said + (f"; {self.passed_over}" if self.passed_over else "")


def golden_in_use(corpus: str = "python-docs", folder: str | Path = ".", profile: str | None = None) -> GoldenInUse:
    """The golden set the course measures ``corpus`` with (the module's docstring says which, in what order).

    ``folder`` is where ``golden.jsonl`` is looked for: the notebook's own folder. The set's questions are
    checked against the corpus; the one picked must be split, every line ``dev`` or ``test``.
    """
    docs = load_corpus(corpus, profile)
    named = config.get("RAGLAB_GOLDEN")
    if named:
        return _split_set(corpus, Path(named), "RAGLAB_GOLDEN's", docs)
    mine, passed_over = Path(folder) / STUDENT_FILE, ""
    if mine.exists():
        problems = check_student_golden(mine, docs).problems
        questions = () if problems else tuple(load_golden(mine, docs))
        if problems:
            passed_over = (f"yours ({STUDENT_FILE}) is not used yet: {len(problems)} problem(s), "
                           f"`raglab golden check {STUDENT_FILE}` lists them")
        elif not all(q.split for q in questions):      # the check allows a split on all lines or none
            passed_over = f"yours ({STUDENT_FILE}) is not used yet: its questions have no 'split' (dev or test)"
        else:
            return GoldenInUse(corpus, mine, "yours", questions)
    return _split_set(corpus, golden_path(corpus, profile), "the course's", docs, passed_over)


def _split_set(corpus: str, path: Path, whose: str, docs, passed_over: str = "") -> GoldenInUse:
    questions = tuple(load_golden(path, docs))
    unsplit = [q.id for q in questions if q.split not in SPLITS]
    if unsplit:
        raise ValueError(f"{path}: {len(unsplit)} question(s) have no 'split' (dev or test), the first {unsplit[0]}: "
                         "the course chooses on dev and reports test")
    return GoldenInUse(corpus, path, whose, questions, passed_over)
