"""The strategies that need the embedding model: sized in its tokens, or cut where its sentence vectors drift.

``tokens`` and ``recursive`` are sized in MiniLM's word-piece tokens (counting [CLS] and [SEP]: 256 is its whole
window); ``semantic`` cuts where neighbouring sentences' vectors drift apart. Each is handed the model's tokenizer
(and ``embed``): nothing is loaded here.

- tokens: windows of MiniLM word pieces, ended on a word end: ``token_spans``
- recursive: paragraph, line, sentence, word separators (``langchain-text-splitters``): ``recursive_spans``
- semantic: sentences grouped, cut where neighbours' vectors drift apart: ``semantic_spans``

``raglab.book.chunking``'s table of strategies (``spans_of``) calls them. Taught in notebook 07 (the chunking
race).
"""
from __future__ import annotations

import functools
from typing import Callable

from raglab.base.text import blank_rules, clean, paragraphs, sentence_ends

# the recursive splitter's separators, coarsest first: paragraph, line, sentence, word, character
RECURSIVE_SEPARATORS = ("\n\n", "\n", ". ", " ", "")


def _word_starts(offsets: list[tuple[int, int]]) -> list[bool]:
    """For each token (by its character offsets), whether a word begins with it: the first token, and
    every token after whitespace (a word piece ``##ing`` or a glued ``.`` continues its word)."""
    return [i == 0 or a > offsets[i - 1][1] for i, (a, _) in enumerate(offsets)]


def token_spans(text: str, size: int, overlap: int, tokenizer) -> list[tuple[int, int]]:
    """Windows of at most ``size`` MiniLM tokens ([CLS] and [SEP] included) stepping back ``overlap``
    tokens, each ending at a word's end and starting at a word's start (only a word longer than the
    window is cut inside). Offsets are the tokenizer's own, into ``text`` (underline rules blanked first).
    """
    offsets = [o for o in tokenizer.encode(blank_rules(text), add_special_tokens=False).offsets if o[1] > o[0]]
    if not offsets:
        return []
    starts = _word_starts(offsets)
    room, spans, i, n = size - 2, [], 0, len(offsets)
    while i < n:
        j = min(i + room, n)                  # tokens i .. j-1
        if j < n and not starts[j]:           # never end inside a word, unless the word fills the window
            k = j
            while k > i and not starts[k]:
                k -= 1
            j = k if k > i else j
        spans.append((offsets[i][0], offsets[j - 1][1]))
        if j >= n:
            break
        nxt = max(j - overlap, i + 1)
        while nxt < j and not starts[nxt]:
            nxt += 1
        i = nxt
    return spans


@functools.lru_cache(maxsize=8)
def _recursive_splitter(size: int, overlap: int, tokenizer):
    """LangChain's ``RecursiveCharacterTextSplitter``, measuring pieces in MiniLM tokens (without the
    two special tokens, which the window reserves), keeping each separator at the end of its piece."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter  # lazy: only this strategy needs it

    return RecursiveCharacterTextSplitter(
        separators=list(RECURSIVE_SEPARATORS), keep_separator="end", chunk_size=size - 2, chunk_overlap=overlap,
        length_function=lambda s: len(tokenizer.encode(s, add_special_tokens=False).ids), strip_whitespace=True)


def recursive_spans(text: str, size: int, overlap: int, tokenizer) -> list[tuple[int, int]]:
    """The recursive splitter's chunks (``langchain-text-splitters``) as spans of ``text``.

    The library returns strings; each is found in the page where the previous chunk's last ``overlap``
    tokens begin, or after (its own ``add_start_index`` guesses wrongly when the overlap is measured in
    tokens, and an earlier copy of a repeated sentence must not take the chunk). A chunk that is not a
    substring of the page is an error, never a silent misplacement.
    """
    blanked = blank_rules(text)
    spans, pos = [], 0
    for piece in _recursive_splitter(size, overlap, tokenizer).split_text(blanked):
        at = blanked.find(piece, pos)
        if at < 0:
            raise RuntimeError(f"the recursive splitter returned a chunk that is not in the page: {piece[:60]!r}")
        spans.append((at, at + len(piece)))
        offsets = tokenizer.encode(piece, add_special_tokens=False).offsets
        # the next chunk repeats at most ``overlap`` tokens of this one (two spare for word pieces merged anew)
        pos = at + (offsets[max(len(offsets) - overlap - 2, 0)][0] if offsets else 0) + 1 if overlap else at + len(piece)
    return spans


# ---------------------------------------------------------------- sentences

def sentence_pieces(text: str) -> list[tuple[int, int]]:
    """A page's sentences as spans: its paragraphs, each cut at its sentence ends (blanks trimmed)."""
    pieces = []
    for ps, pe in paragraphs(blank_rules(text), 0, len(text)):
        s = ps
        for e in [ps + e for e in sentence_ends(text[ps:pe])] + [pe]:
            piece = text[s:e]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                pieces.append((s + lead, s + len(piece.rstrip())))
            s = e
    return pieces


def semantic_spans(text: str, size: int, breakpoint: int, embed: Callable, tokenizer) -> list[tuple[int, int]]:
    """Sentences grouped in order; a chunk ends where the cosine distance between a sentence and the
    next is above the ``breakpoint``-th percentile of the page's neighbour distances (the percentile
    rule of LangChain's ``SemanticChunker``), or where the next sentence would take it past ``size``
    tokens. A sentence longer than the window is cut into token windows (``token_spans``).

    ``embed`` maps a list of texts to unit vectors (an ``Embedder``'s ``encode``: cached by content).
    """
    import numpy as np

    pieces = []
    for a, b in sentence_pieces(text):
        if len(tokenizer.encode(clean(text[a:b])).ids) <= size:
            pieces.append((a, b))
        else:
            pieces.extend((a + s, a + e) for s, e in token_spans(text[a:b], size, 0, tokenizer))
    if len(pieces) < 2:
        return pieces
    vectors = np.asarray(embed([clean(text[a:b]) for a, b in pieces]), dtype=np.float32)
    distance = 1.0 - np.sum(vectors[:-1] * vectors[1:], axis=1)
    cut_above = float(np.percentile(distance, breakpoint))
    lengths = [len(e.ids) - 2 for e in tokenizer.encode_batch([clean(text[a:b]) for a, b in pieces])]
    spans, start, used = [], pieces[0][0], lengths[0]
    for i in range(1, len(pieces)):
        if distance[i - 1] > cut_above or used + lengths[i] > size - 2:
            spans.append((start, pieces[i - 1][1]))
            start, used = pieces[i][0], 0
        used += lengths[i]
    spans.append((start, pieces[-1][1]))
    return spans
