"""Milestone artifacts: what each notebook leaves behind for the instructor's checker and the report.

Every notebook saves what its milestone produced (chunks, retrieval tables, answers, scores,
plots) into one folder: ``RAGLAB_ARTIFACTS``, or ``build/artifacts`` in the project. Numbers go
into one results file, ``results.json``, one section per milestone; bulky records (chunks,
answers) go into their own JSONL files and charts into PNG files beside it. Every write goes
to a temporary name first, then is renamed, so a crashed notebook never leaves half a file.

``raglab check DIR`` reads them back (``raglab.course.rubric``) and ``raglab report`` turns them into
the course's write-up (``raglab.course.report``).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, is_dataclass
from pathlib import Path

from raglab.base import config
from raglab.base.files import atomic_open, read_jsonl, write_jsonl

ENV = "RAGLAB_ARTIFACTS"
RESULTS = "results.json"


def folder() -> Path:
    """The artifacts folder: ``$RAGLAB_ARTIFACTS`` or ``build/artifacts`` in the project."""
    return config.artifacts_dir()


def jsonable(obj):
    """Plain JSON values from numpy scalars, DataFrames, dataclasses, tuples and paths (NaN -> None)."""
    import numpy as np

    if is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(asdict(obj))
    if hasattr(obj, "to_dict") and hasattr(obj, "columns"):          # a DataFrame: its rows
        return jsonable(obj.reset_index().to_dict(orient="records"))
    if hasattr(obj, "to_dict") and hasattr(obj, "index") and not isinstance(obj, dict):   # a Series
        return jsonable(obj.to_dict())
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def save_json(name: str, obj, where: Path | None = None) -> Path:
    """Write one JSON artifact (atomically)."""
    path = Path(where or folder()) / name
    with atomic_open(path) as fh:
        json.dump(jsonable(obj), fh, indent=1, ensure_ascii=False)
    return path


def load_json(name: str, where: Path | None = None):
    """Read one JSON artifact; a missing or broken file is an error that names it."""
    path = Path(where or folder()) / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: artifact missing (run the notebook that saves it)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None


def save_jsonl(name: str, rows, where: Path | None = None) -> Path:
    """Write records, one JSON object a line (atomically)."""
    path = Path(where or folder()) / name
    write_jsonl(path, (jsonable(r) for r in rows))
    return path


def load_jsonl(name: str, where: Path | None = None) -> list[dict]:
    """Read a JSONL artifact (errors name the file and line)."""
    return list(read_jsonl(Path(where or folder()) / name))


def save_figure(name: str, fig, where: Path | None = None) -> Path:
    """Save a matplotlib figure as ``NAME.png`` (atomically), for the report."""
    path = Path(where or folder()) / f"{name}.png"
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=90, bbox_inches="tight")
    return path


def record(section: str, data, where: Path | None = None) -> Path:
    """Put one section of numbers into the results file (other sections are kept)."""
    where = Path(where or folder())
    results = load_results(where) if (where / RESULTS).exists() else {}
    results[section] = jsonable(data)
    return save_json(RESULTS, results, where)


def load_results(where: Path | None = None) -> dict:
    """The results file: every section the notebooks recorded."""
    return load_json(RESULTS, where)


# A sentence ends at its punctuation (closing quotes and brackets allowed) before a space; a paragraph
# or block ends at a blank line. Looser than raglab.base.text.sentence_ends on purpose: a chunk may end
# at a colon or semicolon, and after an abbreviation, without being counted as cut mid-sentence.
SENTENCE_BOUNDARY = re.compile(r"[.!?:;][\"')\]]*(?=\s)|\n[ \t]*\n")
FOLLOWING_MAX = 5000


def following(text: str, end: int) -> str:
    r"""The text after offset ``end`` up to its first sentence end or blank line, at most ``FOLLOWING_MAX``
    characters (so the checker can see whether a chunk ends mid-sentence, even in hard-wrapped text).

    >>> following("One two\nthree. Four.", 3)
    ' two\nthree.'
    """
    stop = min(len(text), end + FOLLOWING_MAX)
    m = SENTENCE_BOUNDARY.search(text, end, stop)
    return text[end:m.end() if m else stop]


def save_chunks(chunks_by: dict, docs, name: str = "m1_chunks.jsonl", where: Path | None = None) -> Path:
    """Every chunk of every chunking, with its id, its source document and the text that follows it
    up to the next sentence end or blank line (``following``)."""
    text = {d.id: d.text for d in docs}
    source = {d.id: d.source for d in docs}
    return save_jsonl(name, ({"chunking": label, "id": c.id, "doc": c.doc, "source": source.get(c.doc),
                              "heading": list(c.heading), "start": c.start, "end": c.end, "text": c.text,
                              "following": following(text[c.doc], c.end)}
                             for label, chunks in chunks_by.items() for c in chunks), where)


def save_answers(answers: list[tuple[str, object]], name: str = "m4_answers.jsonl", where: Path | None = None) -> Path:
    """Answers tagged by what they test: ``answer``, ``invented-id``, ``out-of-corpus``."""
    return save_jsonl(name, ({"kind": kind, **answer.to_dict()} for kind, answer in answers), where)
