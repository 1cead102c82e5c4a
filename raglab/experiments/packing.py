"""Long context's packing: whole pages ranked and put in the prompt until the model's context budget is full.

``pack_documents`` ranks the corpus's documents with document-level BM25 (``raglab.book.bm25``, the same
scorer as the chunk index, one row a page) and puts whole pages in the prompt, most relevant first,
until the model's context budget is full: a page that does not fit is skipped and the next one
tried; when not even the top page fits, it is cut at the budget (on a line or word end) and the
info says so (``truncated``). The budget counts the sources block exactly as the prompt renders it
(``raglab.book.prompt.render_sources``: the ``<doc>`` tags and the escaped text) with SmolLM2's
tokenizer; by default it is the local server's window (4096 tokens) minus the answer (300 tokens,
``OpenAIGenerator``'s ``max_tokens``), minus the instructions and question rendered in the chat
template, minus a margin of 8 tokens for tokens that merge across the block's boundaries.

``PackedRetriever`` stands in for the retriever inside an ``Assistant``, so the packed pages go through
the same generation and checks as retrieved chunks (the experiment is ``raglab.experiments.longcontext``).
"""
from __future__ import annotations

import time
from dataclasses import replace
from hashlib import sha256

import numpy as np

from raglab.book.bm25 import BM25
from raglab.book.chunking import Chunk
from raglab.book.documents import PUBLIC
from raglab.infra.index import Index
from raglab.experiments.tokens import MAX_TOKENS, N_CTX, chat_prompt, count_tokens
from raglab.book.prompt import Source, build_messages, render_sources
from raglab.book.refusal import REFUSAL
from raglab.guards.widening import page_script
from raglab.base.records import Hit, Ranked
from raglab.guards.guard import Guard

MARGIN = 8          # tokens kept free for merges across the sources block's boundaries
_SLACK = 16         # a page whose own token count exceeds the room left by more than this cannot fit


# ---------------------------------------------------------------- ranking whole documents

_BM25_CACHE: dict = {}


def _doc_bm25(docs):
    """Document-level BM25 over these pages (title and text), built once per corpus content."""

    key = tuple((d.id, d.sha256) for d in docs)
    if key not in _BM25_CACHE:
        _BM25_CACHE.clear()
        _BM25_CACHE[key] = BM25(f"{d.title}\n{d.text}" for d in docs)
    return _BM25_CACHE[key]


def may_read(doc, user) -> bool:
    """Whether ``user`` (a list of groups, or None for the public) may read ``doc``: public pages, or a group in
    common."""
    return bool(set(doc.access) & ({PUBLIC} | set(user or ())))


def rank_documents(question: str, docs, user: tuple[str, ...] | None = None) -> list[tuple]:
    """``(document, BM25 score)`` for every page this user may read, best first (ties and zero scores keep
    corpus order). Scores come from BM25 over the whole corpus; pages the user may not read are never scored."""
    bm = _doc_bm25(list(docs))
    mask = np.array([may_read(d, user) for d in docs], dtype=bool)
    scores = bm.scores(question, None if mask.all() else mask)
    order = [int(i) for i in np.argsort(-scores, kind="stable") if mask[i]]
    return [(docs[i], float(scores[i])) for i in order]


# ---------------------------------------------------------------- packing

def as_source(n: int, doc) -> Source:
    """A whole page as one numbered source (a chunk spanning the page, id = the page id)."""

    chunk = Chunk(doc.id, doc.id, (doc.title,), 0, len(doc.text), doc.text, doc.text, doc.access, "document")
    return Source(n, chunk, script=page_script([chunk], 0))


def packed_text(docs) -> str:
    """The sources block the prompt gets for these pages (``render_sources``)."""
    return render_sources([as_source(n, d) for n, d in enumerate(docs, 1)], Guard().visible)


def default_budget(question: str, n_ctx: int = N_CTX, max_tokens: int = MAX_TOKENS, refusal: str = REFUSAL,
                   extra_instruction: str | None = None, count=count_tokens) -> int:
    """Tokens left for the sources block: the window minus the answer, the instructions and question in the
    chat template (sources empty), and a margin."""
    return n_ctx - max_tokens - count(chat_prompt(build_messages(question, [], refusal, extra_instruction))) - MARGIN


_ALONE: dict = {}


def _alone_tokens(doc, count) -> int:
    """Tokens of one page rendered as a source on its own (cached by content)."""
    key = (count, doc.id, doc.sha256, len(doc.text))
    if key not in _ALONE:
        _ALONE[key] = count(packed_text([doc]))
    return _ALONE[key]


def _truncate(doc, budget: int, count):
    """The longest prefix of the page, cut on a line or word end, whose rendered source fits ``budget``."""
    text = doc.text

    def fits(n: int) -> bool:
        return count(packed_text([replace(doc, text=text[:n])])) <= budget

    lo, hi = 0, len(text) + 1            # invariant: text[:lo] fits, text[:hi] does not (the whole page does not)
    guess = len(text) * budget / max(1, _alone_tokens(doc, count))   # the page's own characters per token
    for bound in (int(guess * 0.9), int(guess * 1.1)):               # bracket the cut to save tokenizer calls
        if lo < bound < hi:
            if fits(bound):
                lo = bound
            else:
                hi = bound
    while hi - lo > 32:                  # to within 32 characters: the cut then backs off to a word end anyway
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    cut = lo
    for sep in ("\n\n", "\n", " "):      # prefer a paragraph end, then a line end, then a word end nearby
        at = text.rfind(sep, 0, cut + 1)
        if at > 0 and cut - at <= 400:
            cut = at
            break
    kept = text[:cut].rstrip()
    meta = {**doc.meta, "truncated": True, "original_chars": len(text), "original_sha256": doc.sha256}
    return replace(doc, text=kept, sha256=sha256(kept.encode("utf-8")).hexdigest(), meta=meta)


def pack_documents(question: str, docs, budget_tokens: int | None = None, count=count_tokens,
                   user: tuple[str, ...] | None = None) -> tuple[list, dict]:
    """Whole pages for the prompt, most relevant first (document-level BM25), within ``budget_tokens``.

    A page that does not fit in what is left is skipped; if not even the top page fits, it is cut at the
    budget and ``info["truncated"]`` is True. Pages with a BM25 score of 0 (no term of the question) are
    never packed, however much room is left. ``count(packed_text(pages)) <= budget_tokens`` always.
    Returns ``(pages, info)`` with ``info``: ``budget_tokens``, ``tokens`` (of the packed block), ``docs``
    (ids, in prompt order), ``scores``, ``n_docs``, ``skipped`` (ids ranked above the last packed page
    that did not fit), ``truncated``, ``truncated_doc``, ``kept_chars``/``original_chars`` of the cut page,
    ``candidates`` (pages the user may read) and ``corpus_tokens`` (all of them, each rendered alone).
    """
    docs = list(docs)
    budget = default_budget(question, count=count) if budget_tokens is None else int(budget_tokens)
    ranked = rank_documents(question, docs, user)
    packed, scores, skipped, last = [], [], [], -1
    tokens, truncated = 0, None
    for rank, (doc, score) in enumerate(ranked):
        if score <= 0:   # shares no term with the question: not relevant, never packed
            break
        if _alone_tokens(doc, count) > budget - tokens + _SLACK:
            fits = False
        else:
            total = count(packed_text(packed + [doc]))
            fits = total <= budget
        if fits:
            packed.append(doc)
            scores.append(score)
            tokens, last = total, rank
        elif rank == 0:
            cut = _truncate(doc, budget, count)
            if cut.text:
                packed.append(cut)
                scores.append(score)
                tokens, last, truncated = count(packed_text(packed)), rank, cut
        else:
            skipped.append((rank, doc.id))
    info = {"budget_tokens": budget, "tokens": tokens, "docs": [d.id for d in packed], "scores": scores,
            "n_docs": len(packed), "skipped": [i for r, i in skipped if r < last],
            "truncated": truncated is not None, "truncated_doc": truncated.id if truncated else None,
            "kept_chars": len(truncated.text) if truncated else None,
            "original_chars": truncated.meta["original_chars"] if truncated else None,
            "candidates": len(ranked), "corpus_tokens": sum(_alone_tokens(d, count) for d, _ in ranked)}
    return packed, info


# ---------------------------------------------------------------- the assistant's view of packed pages

class _PackedIndex:
    """What ``Assistant.ask`` reads from ``retriever.index``: the chunks (here, pages) by id, and a version."""

    version, path = "longcontext", None
    locate, chunk, passages = Index.locate, Index.chunk, Index.passages   # pages only: no parents

    def __init__(self, sources: list[Source]):
        self.chunks = [s.chunk for s in sources]
        self.row_of = {c.id: i for i, c in enumerate(self.chunks)}
        self.parents, self.parent_row = [], {}


class PackedRetriever:
    """Stands in for ``Retriever`` inside ``Assistant``: "retrieves" the packed whole pages for a question,
    so the long-context answer goes through exactly the same generation and checks as the normal one."""

    reranker = "none (whole documents, ranked by document-level BM25)"

    def __init__(self, docs, budget_tokens: int | None = None, embedder=None, count=count_tokens,
                 n_ctx: int = N_CTX, max_tokens: int = MAX_TOKENS, extra_instruction: str | None = None):
        self.docs, self.budget_tokens, self.embedder, self.count = list(docs), budget_tokens, embedder, count
        self.n_ctx, self.max_tokens, self.extra_instruction = n_ctx, max_tokens, extra_instruction
        self.index = _PackedIndex([])
        self.timings_ms: dict[str, float] = {}
        self.last_info: dict = {}

    def search(self, question: str, mode: str = "rerank", k: int = 0, user=None):
        t = time.perf_counter()
        budget = self.budget_tokens
        if budget is None:
            budget = default_budget(question, self.n_ctx, self.max_tokens, REFUSAL, self.extra_instruction, self.count)
        packed, info = pack_documents(question, self.docs, budget, self.count, user)
        self.index = _PackedIndex([as_source(n, d) for n, d in enumerate(packed, 1)])
        self.last_info = info
        self.timings_ms = {"pack": round((time.perf_counter() - t) * 1000, 2)}
        return Ranked(Hit(d.id, d.id, s, n, {"bm25-doc": n}) for n, (d, s) in enumerate(zip(packed, info["scores"]), 1))
