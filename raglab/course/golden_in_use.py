"""What the course runs on: the corpus (the Python docs, or a folder of your own) and whose golden set.

The corpus, in this order (``corpus_in_use``):

1. the folder ``$RAGLAB_CORPUS`` names (``raglab workbook --corpus DIR`` sets it);
2. else ``corpus`` in ``settings.toml`` beside the notebooks (``use_settings`` writes it; notebook 00 shows how);
3. else the Python docs (``python-docs``).

Milestone 2 asks you to write a golden set of your own in ``golden.jsonl``, beside the notebooks. From then
on every milestone measures with the set ``golden_in_use`` picks, and prints which one in a line near its top:

1. the file ``$RAGLAB_GOLDEN`` names, when it is set (``raglab workbook --golden FILE`` sets it);
2. else ``golden`` in ``settings.toml`` beside the notebooks;
3. else ``golden.jsonl`` in the notebook's folder, when it passes ``raglab golden check`` for the corpus
   (``check_student_golden``) and every line carries a ``split`` (``dev`` or ``test``);
4. else the course's set for the corpus and profile (``evals/python_docs_golden.jsonl`` on the small
   profile), which carries a split of its own. The line then says why yours is not used yet. A folder of
   your own has no course set: it needs one of the first three.

Every choice is made on the ``dev`` split; milestone 6 reads ``test`` once, to report what was chosen.
"""
from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from raglab.base import config
from raglab.evaluation.golden import SPLITS, Question, check_student_golden, load_golden
from raglab.infra.corpora import golden_path, registered
from raglab.infra.corpus import corpus_stats, load_corpus

STUDENT_FILE = "golden.jsonl"
SETTINGS_FILE = "settings.toml"
DEFAULT_CORPUS = "python-docs"


def read_settings(folder: str | Path = ".") -> dict[str, str]:
    """``corpus`` and ``golden`` from ``settings.toml`` in ``folder`` (paths in it are relative to it), or {}.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / SETTINGS_FILE).write_text('corpus = "python-docs"\\ngolden = "mine.jsonl"\\n')
    ...     s = read_settings(d)
    >>> s["corpus"], Path(s["golden"]).name
    ('python-docs', 'mine.jsonl')
    """
    path = Path(folder) / SETTINGS_FILE
    if not path.is_file():
        return {}
    try:
        found = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not TOML ({exc}); it holds two lines, corpus = \"DIR\" and golden = \"FILE\"") from None
    unknown = sorted(set(found) - {"corpus", "golden"})
    if unknown or not all(isinstance(v, str) for v in found.values()):
        raise ValueError(f"{path}: expected only corpus = \"DIR\" and golden = \"FILE\" (text), found {sorted(found)}")
    def where(key: str, value: str) -> str:     # a bundled corpus by name; any other value is a path
        return value if key == "corpus" and registered(value) else str((path.parent / value).resolve())
    return {key: where(key, value) for key, value in found.items()}


def use_settings(corpus: str | Path | None = None, golden: str | Path | None = None, folder: str | Path = ".") -> Path:
    """Write ``settings.toml`` in ``folder``: every notebook there then runs on ``corpus`` (a folder of
    ``.md``/``.txt`` pages, or a bundled name) and measures with ``golden`` (a split golden set). Both are
    checked first; ``use_settings()`` with neither removes the file (back to the Python docs)."""
    path = Path(folder) / SETTINGS_FILE
    if corpus is None and golden is None:
        path.unlink(missing_ok=True)
        return path
    lines = []
    if corpus is not None:
        docs = load_corpus(corpus)                    # an error names what is wrong with the folder
        lines.append(f"corpus = {_toml(corpus)}   # {len(docs)} pages")
    if golden is not None:
        if not Path(golden).is_file():
            raise ValueError(f"golden = {golden}: no such file")
        lines.append(f"golden = {_toml(golden)}")
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _toml(value: str | Path) -> str:
    text = str(value) if registered(str(value)) else str(Path(value).resolve())
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def corpus_in_use(folder: str | Path = ".") -> str:
    """The corpus the notebooks in ``folder`` run on: ``$RAGLAB_CORPUS``, else ``settings.toml``'s ``corpus``,
    else ``python-docs``. A folder comes back as its absolute path.

    >>> corpus_in_use("no/such/folder")
    'python-docs'
    """
    named = config.get("RAGLAB_CORPUS") or read_settings(folder).get("corpus") or DEFAULT_CORPUS
    if registered(named):
        return named
    if not Path(named).is_dir():
        raise ValueError(f"corpus {named!r} (RAGLAB_CORPUS or {SETTINGS_FILE}): no such folder")
    return str(Path(named).resolve())


@dataclass(frozen=True)
class GoldenInUse:
    """A golden set, whose it is, and why a student's set beside the notebooks was passed over (if it was)."""

    corpus: str
    path: Path
    whose: str                          # "yours", "RAGLAB_GOLDEN's", "settings.toml's" or "the course's"
    questions: tuple[Question, ...]
    passed_over: str = ""               # why golden.jsonl beside the notebooks is not the set
    corpus_sha256: str = ""             # of the corpus's pages (``corpus_stats``): which folder content was read

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
        return {"corpus": self.corpus, "corpus_sha256": self.corpus_sha256, "golden": self.path.name,
                "golden_path": str(self.path.resolve()), "whose": self.whose,
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


def golden_in_use(corpus: str | None = None, folder: str | Path = ".", profile: str | None = None) -> GoldenInUse:
    """The golden set the course measures ``corpus`` with (the module's docstring says which, in what order).

    ``corpus`` None is the corpus in use (``corpus_in_use(folder)``). ``folder`` is where ``settings.toml``
    and ``golden.jsonl`` are looked for: the notebook's own folder. The set's questions are checked against
    the corpus; the one picked must be split, every line ``dev`` or ``test``.
    """
    corpus = corpus or corpus_in_use(folder)
    docs = load_corpus(corpus, profile)
    sha = corpus_stats(docs)["sha256"][:16]
    named = config.get("RAGLAB_GOLDEN")
    if named:
        return _split_set(corpus, Path(named), "RAGLAB_GOLDEN's", docs, sha=sha)
    settings = read_settings(folder)
    if "golden" in settings:
        return _split_set(corpus, Path(settings["golden"]), f"{SETTINGS_FILE}'s", docs, sha=sha)
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
            return GoldenInUse(corpus, mine, "yours", questions, corpus_sha256=sha)
    if not registered(corpus):
        raise ValueError(f"corpus {corpus}: a folder of your own has no course golden set; write yours in "
                         f"{Path(folder).resolve() / STUDENT_FILE} (notebook 02 shows how; "
                         f"{passed_over or 'there is none yet'}), or name one: golden in {SETTINGS_FILE}, "
                         "or raglab workbook --golden FILE")
    return _split_set(corpus, golden_path(corpus, profile), "the course's", docs, passed_over, sha)


def _split_set(corpus: str, path: Path, whose: str, docs, passed_over: str = "", sha: str = "") -> GoldenInUse:
    if not path.is_file():
        raise ValueError(f"golden set {path} ({whose}): no such file")
    questions = tuple(load_golden(path, docs))
    unsplit = [q.id for q in questions if q.split not in SPLITS]
    if unsplit:
        raise ValueError(f"{path}: {len(unsplit)} question(s) have no 'split' (dev or test), the first {unsplit[0]}: "
                         "the course chooses on dev and reports test")
    return GoldenInUse(corpus, path, whose, questions, passed_over, sha)
