"""Checking and comparing chunkings: the counts every strategy is held to (how many of the pages' words
no chunk covers, one covers or several cover, the chunks over the model's token limit) and the length
statistics the notebooks and the command line tabulate."""
from __future__ import annotations

import bisect

from raglab.book.chunkers import word_positions
from raglab.book.chunking import Chunk, ChunkSettings, chunk_corpus
from raglab.book.documents import Document
from raglab.infra.packaged_models import MINILM_MAX_TOKENS
from raglab.infra.tokenizer import load_tokenizer, token_lengths


def chunk_stats(chunks: list[Chunk], tokenizer=None, limit: int | None = None) -> dict:
    """Counts for one chunking: chunks, documents, word and token lengths, chunks over the model's limit."""
    import numpy as np

    limit = limit or MINILM_MAX_TOKENS
    words = np.array([len(c.indexed_text.split()) for c in chunks])
    tokens = np.array(token_lengths([c.indexed_text for c in chunks], tokenizer))
    return {
        "chunks": len(chunks),
        "documents": len({c.doc for c in chunks}),
        "words_mean": round(float(words.mean()), 1) if len(words) else 0.0,
        "words_p50": int(np.median(words)) if len(words) else 0,
        "words_max": int(words.max()) if len(words) else 0,
        "tokens_p50": int(np.median(tokens)) if len(tokens) else 0,
        "tokens_p95": int(np.percentile(tokens, 95)) if len(tokens) else 0,
        "tokens_total": int(tokens.sum()),
        f"over_{limit}_tokens": int((tokens > limit).sum()),
        f"over_{limit}_share": round(float((tokens > limit).mean()), 4) if len(tokens) else 0.0,
    }


def check_chunks(docs: list[Document], chunks: list[Chunk], limit: int | None = None, tokenizer=None,
                 tokens: list[int] | None = None) -> dict:
    """The checks every strategy is held to, as counts: how many of the pages' words (``word_positions``)
    no chunk covers, one chunk covers, or several cover (overlap), the first uncovered word, and the
    chunks over the model's token limit (their share: what the model truncates); ``tokens``, the chunks'
    token counts when the caller has them already (``token_lengths``).

    >>> from raglab.book.chunking import chunk_document
    >>> from raglab.book.documents import Document
    >>> doc = Document("d", "T", "one two three four five", ("public",))
    >>> check_chunks([doc], chunk_document(doc, ChunkSettings("words", 3, 1)))["overlapped"]
    1
    """
    import numpy as np

    limit = limit or MINILM_MAX_TOKENS
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc, []).append(c)
    counts = {"words": 0, "uncovered": 0, "once": 0, "overlapped": 0, "first_uncovered": None}
    for doc in docs:
        words = word_positions(doc.text)
        starts, ends = [a for a, _ in words], [b for _, b in words]
        cover = np.zeros(len(words) + 1, dtype=int)
        for c in by_doc.get(doc.id, []):
            lo, hi = bisect.bisect_right(ends, c.start), bisect.bisect_left(starts, c.end)  # words touching the span
            cover[lo] += 1
            cover[hi] -= 1
        times = np.cumsum(cover)[:-1]
        counts["words"] += len(words)
        counts["uncovered"] += int((times == 0).sum())
        counts["once"] += int((times == 1).sum())
        counts["overlapped"] += int((times > 1).sum())
        if counts["first_uncovered"] is None and (times == 0).any():
            i = int(np.argmax(times == 0))
            counts["first_uncovered"] = {"doc": doc.id, "offset": words[i][0], "word": doc.text[slice(*words[i])]}
    if tokens is None:
        tokens = token_lengths([c.indexed_text for c in chunks], tokenizer) if chunks else []
    tokens = np.asarray(tokens)
    counts.update(chunks=len(chunks), over_limit=int((tokens > limit).sum()),
                  over_share=round(float((tokens > limit).mean()), 4) if len(tokens) else 0.0)
    return counts


def compare_chunkings(docs: list[Document], settings: list[ChunkSettings], tokenizer=None):
    """One row per chunking: counts, sizes, tokens and share over the model's limit (a DataFrame).

    Returns ``(table, chunks_by_label)`` so the chunks can be plotted without cutting twice.
    """
    import pandas as pd  # lazy: only for tables

    tok = tokenizer or load_tokenizer()
    rows, chunks_by_label = [], {}
    for s in settings:
        chunks = chunk_corpus(docs, s, tokenizer=load_tokenizer())
        chunks_by_label[s.label()] = chunks
        rows.append({"chunking": s.label(), **chunk_stats(chunks, tok)})
    return pd.DataFrame(rows).set_index("chunking"), chunks_by_label
