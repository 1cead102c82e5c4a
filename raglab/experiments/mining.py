"""Training pairs mined from the docs themselves, without labels: (query, positive, hard negative)
triples for fine-tuning the retriever (``raglab.experiments.finetune``).

What a training pair may use: the corpus's own text, nothing else. No question of a golden set
(dev or test) is ever a training query (``mine_pairs`` drops a candidate that is one), because a
model trained on the questions it is judged on scores the questions, not the retriever.

The pairs (``mine_pairs``), each a query, the chunk it came from, and one hard negative:

- ``heading``: a section's heading path (``Title > Section``) against the section's first chunk,
  read without its prefix (with it the match would be a string copy);
- ``signature``: an API entry's signature line (``json.dumps(obj, *, ...)``) against the rest of
  its chunk;
- ``cloze``: one sentence of a chunk against the rest of the chunk (inverse cloze).

The hard negative is another section of the positive's own page (``negatives="page"``, the
default), or BM25's best chunk for the query outside the positive's section (``"bm25"``); see
``mine_pairs`` for why BM25's is a trap.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from raglab.book.bm25 import BM25, top_k
from raglab.book.chunking import Chunk, prefix_for
from raglab.base.text import clean, sentence_spans

KINDS = ("heading", "signature", "cloze")
NEGATIVES = ("page", "bm25", "dense")
# an API entry's signature on a line of its own: json.dumps(obj, *, skipkeys=False, ...) or class json.JSONEncoder(...)
_SIGNATURE = re.compile(r"^\s*(?:(?:class|exception|async|await|abstractmethod|classmethod|staticmethod)\s+)*"
                        r"[A-Za-z_][\w.]*\([^\n]{0,300}\)(?:\s*->\s*[^\n]+)?\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Pair:
    """One training example: a query, the passage it came from, and a hard negative passage."""

    query: str
    positive: str
    negative: str
    kind: str
    chunk: str      # the id of the positive's chunk
    negative_chunk: str


# ---------------------------------------------------------------- mining pairs

def section_of(chunk: Chunk) -> tuple:
    """The section a chunk belongs to: its page and heading path."""
    return (chunk.doc, chunk.heading)


def signature_lines(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``text`` that is an API entry's signature.

    >>> text = "json.dumps(obj, *, indent=None)\\n   Serialize obj.\\nThe call f(x) inside prose is not one."
    >>> [text[a:b].strip() for a, b in signature_lines(text)]
    ['json.dumps(obj, *, indent=None)']
    """
    return [(m.start(), m.end()) for m in _SIGNATURE.finditer(text)]


def _without(chunk: Chunk, start: int, end: int) -> str:
    """The chunk as indexed (prefix and cleaned text) with ``text[start:end]`` left out."""
    prefix = prefix_for(chunk.heading) if chunk.indexed_text != clean(chunk.text) else ""
    return prefix + clean(chunk.text[:start] + "\n" + chunk.text[end:])


def candidates(chunks: Sequence[Chunk], kind: str) -> list[tuple[str, str, int]]:
    """Every ``(query, positive, chunk row)`` of one kind the chunks offer, in corpus order."""
    out = []
    if kind == "heading":
        seen = set()
        for row, c in enumerate(chunks):
            if len(c.heading) > 1 and section_of(c) not in seen:
                seen.add(section_of(c))
                text = clean(c.text)
                title = clean(c.heading[-1])
                out.append((" > ".join(c.heading), text[len(title):].strip() if text.startswith(title) else text, row))
    elif kind == "signature":
        for row, c in enumerate(chunks):
            for a, b in signature_lines(c.text):
                rest = _without(c, a, b)
                if len(rest.split()) >= 12:
                    out.append((clean(c.text[a:b]), rest, row))
    else:
        for row, c in enumerate(chunks):
            signatures = signature_lines(c.text)
            for a, b in sentence_spans(c.text):
                words = len(c.text[a:b].split())
                inside_signature = any(a < e and s < b for s, e in signatures)
                if 8 <= words <= 40 and not inside_signature:
                    rest = _without(c, a, b)
                    if len(rest.split()) >= 20:
                        out.append((clean(c.text[a:b]), rest, row))
    return out


def mine_pairs(chunks: Sequence[Chunk], n: int, kinds: Iterable[str] = KINDS, seed: int = 25,
               forbidden: Iterable[str] = (), negatives: str = "page", embedder=None) -> list[Pair]:
    """``n`` training triples from the chunks, drawn evenly over ``kinds`` with a seeded generator
    (a kind with too few candidates gives what it has; the others fill the rest).

    Parameters:
        chunks: the corpus's chunks, as the index holds them.
        n: how many triples to mine.
        kinds: which of ``KINDS`` to mine.
        seed: the generator's seed (the same seed and chunks give the same pairs).
        forbidden: the golden set's questions: a candidate query that is one of them, or contains
            one, is never drawn (the corpus's text may quote a question's words; the question
            itself is never a training query).
        negatives: where the hard negative comes from: ``page``, another section of the positive's
            own page, drawn at random (the retriever's weak spot is ranking within the right page;
            a page with one section falls back to BM25); ``bm25``, BM25's best chunk for the query
            outside the section. BM25 negatives share more words with the query than the positive
            (its query sentence was taken out), so a model can learn that overlap means "wrong": a
            cross-encoder trained on them ranked the small profile's answers below chance;
            ``dense``, the best chunk outside the section among the base model's dense top 20
            for the query (``embedder``: the packaged MiniLM's ``Embedder``, its cache reused).
    """
    if negatives not in NEGATIVES:
        raise ValueError(f"unknown negatives {negatives!r}: choose {', '.join(NEGATIVES)}")
    if negatives == "dense" and embedder is None:
        raise ValueError("dense negatives need the embedder whose top 20 they come from")
    kinds = list(dict.fromkeys(kinds))
    rng = random.Random(seed)
    questions = [" ".join(f.lower().split()) for f in forbidden if f and f.strip()]
    pools = {k: [c for c in candidates(chunks, k) if not _is_question(c[0], questions)] for k in kinds}
    for pool in pools.values():
        rng.shuffle(pool)
    picked, want = [], {k: 0 for k in kinds}
    left = n
    while left > 0 and any(want[k] < len(pools[k]) for k in kinds):      # even shares, refilled from the larger pools
        open_kinds = [k for k in kinds if want[k] < len(pools[k])]
        share = max(1, left // len(open_kinds))
        for k in open_kinds:
            take = min(share, len(pools[k]) - want[k], left)
            want[k] += take
            left -= take
    for k in kinds:
        picked += [(k, *item) for item in pools[k][:want[k]]]
    rng.shuffle(picked)
    sections_of_page: dict[str, dict[tuple, list[int]]] = {}
    for r, c in enumerate(chunks):
        sections_of_page.setdefault(c.doc, {}).setdefault(section_of(c), []).append(r)
    bm25 = None                        # built on first need: "page" negatives need it only for one-section pages
    dense = _dense_top(embedder, chunks, [item[1] for item in picked], DENSE_DEPTH) if negatives == "dense" else None
    pairs = []
    for i, (kind, query, positive, row) in enumerate(picked):
        others = [rows for sec, rows in sections_of_page[chunks[row].doc].items() if sec != section_of(chunks[row])]
        if negatives == "page" and others:
            ranked = [rng.choice(rng.choice(others))]
        elif dense is not None:
            ranked = list(dense[i])
        else:
            bm25 = bm25 or BM25([c.indexed_text for c in chunks])
            ranked = [r for r, _ in top_k(bm25.scores(query), 30)]
        negative = next((r for r in ranked if section_of(chunks[r]) != section_of(chunks[row])), None)
        if negative is None:
            continue
        pairs.append(Pair(query, positive, chunks[negative].indexed_text, kind, chunks[row].id, chunks[negative].id))
    return pairs


DENSE_DEPTH = 20      # the dense candidates a negative is drawn from


def _dense_top(embedder, chunks: Sequence[Chunk], queries: list[str], depth: int) -> np.ndarray:
    """The rows of each query's ``depth`` nearest chunks by the embedder's cosine (exact, best first)."""
    vectors = embedder.encode([c.indexed_text for c in chunks])
    out = np.empty((len(queries), min(depth, len(chunks))), dtype=np.int64)
    for start in range(0, len(queries), 512):
        sims = embedder.encode(queries[start:start + 512]) @ vectors.T
        top = np.argpartition(-sims, out.shape[1] - 1, axis=1)[:, :out.shape[1]]
        order = np.take_along_axis(sims, top, axis=1).argsort(axis=1, kind="stable")[:, ::-1]
        out[start:start + 512] = np.take_along_axis(top, order, axis=1)
    return out


def _is_question(query: str, questions: list[str]) -> bool:
    """Whether a query is, or contains, one of the (lowercased, whitespace-folded) questions."""
    folded = " ".join(query.lower().split())
    return any(q in folded for q in questions)


def kind_counts(pairs: Sequence[Pair]) -> dict[str, int]:
    """How many pairs of each kind, in ``KINDS`` order."""
    return {k: sum(p.kind == k for p in pairs) for k in KINDS}
