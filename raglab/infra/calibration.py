"""Refusal on a folder the user brings: a threshold calibrated from the folder itself, without labels.

The bundled corpora carry thresholds chosen on their golden sets (``raglab.infra.corpora``). A folder of
the user's own has no golden set, so its threshold is read off two score distributions, each the
evidence strength the assistant would refuse on (the top dense cosine, minus 1 for a name no chunk
contains):

- **questions the folder answers**: a seeded sample of its own sentences (six to thirty words, one
  from each of up to ``SAMPLE`` chunks), asked as questions. On the bundled corpora their scores lie
  where real answerable questions' do (help center: 10th percentile 0.41 against 0.42; Python docs,
  small profile: 0.37 against 0.50).
- **questions it does not**: the questions of the bundled golden sets (Python docs and help center),
  which are about something else (a set whose evidence pages are in the folder is left out).

The threshold is ``max(P5(answered), P95(unrelated))``: the cut that keeps 95% of the folder's own
questions answerable, raised if needed above nearly every unrelated question. It was chosen on the
help center and the Python docs' small profile (both with their labels hidden from the rule), and
measured on three folders written for it before it ran on them (``evals/folders``). On-topic
questions the folder does not answer are left to the other gates: unknown names, and the extractive
generator's sentence floor.

The result is recorded in the index manifest (``refusal``: threshold, method, the two
distributions' sizes and percentiles), shown by ``raglab corpus info``, and replaced by a student's
golden set with ``raglab tune --golden FILE --corpus FOLDER --save`` (its dev split).
"""
from __future__ import annotations

import json
import random
from typing import Callable

import numpy as np

from raglab.base import config
from raglab.base.files import Busy, atomic_open, dir_lock, read_jsonl
from raglab.base.text import sentence_spans

SAMPLE = 80                     # chunks a folder's own questions are drawn from
SEED = 0
ANSWERED_PERCENTILE = 5         # the share of the folder's own questions allowed under the threshold
UNRELATED_PERCENTILE = 95       # the share of unrelated questions allowed under it
UNRELATED_SETS = ("python_docs_golden.jsonl", "helpcenter_golden.jsonl")
METHOD = (f"label-free: max(P{ANSWERED_PERCENTILE} of {SAMPLE} of the folder's own sentences asked as questions, "
          f"P{UNRELATED_PERCENTILE} of the bundled golden sets' questions)")


def own_questions(chunks, n: int = SAMPLE, seed: int = SEED) -> list[str]:
    """One sentence of six to thirty words from each of up to ``n`` chunks (seeded), asked as a question."""
    rng = random.Random(seed)
    picked = rng.sample(list(chunks), min(n, len(chunks)))
    out = []
    for chunk in picked:
        spans = [chunk.text[a:b] for a, b in sentence_spans(chunk.text)]
        usable = [" ".join(s.split()) for s in spans if 6 <= len(s.split()) <= 30]
        if usable:
            out.append(rng.choice(usable))
    return out


def unrelated_questions(doc_ids: set[str] = frozenset()) -> list[str]:
    """The questions of the bundled golden sets, except a set whose evidence pages are among ``doc_ids``
    (the folder is that corpus, or holds some of it: its questions are not unrelated)."""
    out = []
    for name in UNRELATED_SETS:
        path = config.PROJECT_ROOT / "evals" / name
        rows = read_jsonl(path)
        if not any(e["doc"] in doc_ids for r in rows for e in r.get("evidence", [])):
            out += [r["question"] for r in rows]
    return out


def label_free_threshold(answered: list[float], unrelated: list[float]) -> float:
    """``max(P5(answered), P95(unrelated))``, rounded to four decimals.

    Not the labelled rule: ``raglab.book.refusal.choose_threshold`` (Youden's J on a golden set's dev
    questions, answerable against unanswerable, as ``raglab tune`` and the bundled corpora's thresholds
    use) needs questions someone labelled. This one reads two unlabelled distributions, the folder's own
    sentences asked as questions and the bundled sets' questions, and takes percentiles of each, not a
    cut that separates them best; a student's golden set replaces it (``raglab tune --golden FILE --save``).

    >>> label_free_threshold([0.3, 0.5, 0.6, 0.7] * 5, [0.1, 0.2] * 10)
    0.3
    >>> label_free_threshold([0.3, 0.5, 0.6, 0.7] * 5, [0.1, 0.45] * 10)
    0.45
    """
    return round(float(max(np.percentile(answered, ANSWERED_PERCENTILE), np.percentile(unrelated, UNRELATED_PERCENTILE))), 4)


def calibrate(chunks, strength: Callable[[str], float]) -> dict:
    """The refusal record for a folder: its threshold, how it was chosen, and the evidence behind it.
    ``strength(question)`` is the assistant's evidence strength (``Assistant.retrieve(q)[1]``)."""
    own = [strength(q) for q in own_questions(chunks)]
    other = [strength(q) for q in unrelated_questions({c.doc for c in chunks})]
    if not own:
        raise ValueError("the folder has no sentence of six to thirty words to calibrate the refusal threshold on")

    def summary(values):
        return {"n": len(values), **{f"p{p}": round(float(np.percentile(values, p)), 4) for p in (5, 50, 95)}}

    return {"threshold": label_free_threshold(own, other), "method": METHOD,
            "answered": summary(own), "unrelated": summary(other)}


LOCK_WAIT_RECORD = 2.0   # seconds an answer waits for a folder's index lock before leaving the record to later


def record(index, refusal: dict) -> bool:
    """Write ``refusal`` into the index's manifest and its copy in memory. On disk, under the index
    folder's write lock, ``manifest.json`` is re-read and replaced atomically with only ``refusal``
    changed, and only if it is still the build this index was loaded from (same ``version_id`` and
    chunk count): an index rebuilt meanwhile keeps its own manifest and calibrates itself when first
    used; one being rebuilt right now (its lock held past ``LOCK_WAIT_RECORD`` seconds) is left alone.
    Returns whether the file was written."""
    index.manifest["refusal"] = refusal
    path = getattr(index, "path", None)
    if path is None:
        return False
    try:
        with dir_lock(path, LOCK_WAIT_RECORD):
            try:
                on_disk = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return False
            if any(on_disk.get(k) != index.manifest.get(k) for k in ("version_id", "n_chunks")):
                return False
            on_disk["refusal"] = refusal
            with atomic_open(path / "manifest.json") as fh:
                json.dump(on_disk, fh, indent=2)
    except Busy:
        return False
    return True
