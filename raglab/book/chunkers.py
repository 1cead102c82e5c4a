"""The strategies: how each one cuts a page's text into ``(start, end)`` character spans.

Each is a plain function of the text and its window (size, overlap), looked up by name in
``raglab.book.chunking``. Those sized in the model's tokens (counting [CLS] and [SEP]: 256 is its whole
window) are handed its tokenizer, the semantic one an ``embed`` function too: nothing is loaded here.

- words: a sliding word window (the course's ``chunk_text``): ``word_spans``
- chars, large: a character window ended on a paragraph, sentence or word end: ``char_spans``
- tokens: windows of MiniLM word pieces, ended on a word end: ``token_spans``
- recursive: paragraph, line, sentence, word separators (``langchain-text-splitters``): ``recursive_spans``
- semantic: sentences grouped, cut where neighbours' vectors drift apart: ``semantic_spans``
- headings, parent: a section's paragraphs packed into windows (``pack``), one section at a time
- a learner's own: word windows (``spans_of_windows``), a registered chunker (``checked_spans``)
Taught in notebooks 01 (words, chars, headings) and 07 (every strategy, in the chunking race).
"""
from __future__ import annotations

import bisect
import functools
import re
from typing import Callable

from raglab.base.text import blank_rules, clean, paragraphs, sentence_ends

# the recursive splitter's separators, coarsest first: paragraph, line, sentence, word, character
RECURSIVE_SEPARATORS = ("\n\n", "\n", ". ", " ", "")
_WORD = re.compile(r"\S+")


# ---------------------------------------------------------------- words and characters

def word_positions(text: str) -> list[tuple[int, int]]:
    """Where each of a page's words is: whitespace-separated, after underline rules are removed."""
    return [m.span() for m in _WORD.finditer(blank_rules(text))]


def word_spans(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Sliding windows of ``size`` words stepping ``size - overlap``, the last one ending at the end.

    Words are the course's: whitespace-separated, after underline rules are removed.

    >>> word_spans("a b c d e", 3, 1)
    [(0, 5), (4, 9)]
    """
    words = word_positions(text)
    spans, start, step = [], 0, size - overlap
    while start < len(words):
        last = min(start + size, len(words)) - 1
        spans.append((words[start][0], words[last][1]))
        if start + size >= len(words):
            break
        start += step
    return spans


def char_spans(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows of at most ``size`` characters that end on a paragraph, sentence or word end.

    The cut is the last paragraph end in the second half of the window, else the last
    sentence end there, else the last word end; the next window starts about ``overlap``
    characters back, at a sentence start if one is there, else at a word start.
    Only a single word longer than ``size`` makes a longer window.
    """
    words = [m.span() for m in _WORD.finditer(text)]
    if not words:
        return []
    word_starts = [s for s, _ in words]
    word_ends = [e for _, e in words]
    para_ends = [m.start() for m in re.finditer(r"\n[ \t]*\n", text)]
    sent_ends = sentence_ends(text)
    sent_starts = sorted({word_starts[bisect.bisect_left(word_starts, e)]
                          for e in sent_ends + para_ends if bisect.bisect_left(word_starts, e) < len(words)})
    text_end = word_ends[-1]
    spans, pos = [], word_starts[0]
    while True:
        limit = pos + size
        if limit >= text_end:
            spans.append((pos, text_end))
            return spans
        end = None
        for cuts in (para_ends, sent_ends, word_ends):
            i = bisect.bisect_right(cuts, limit) - 1
            if i >= 0 and cuts[i] > pos + size // 2:
                end = cuts[i]
                break
        if end is None:  # no word end in the window's second half: last word end in it, or one long word
            i = bisect.bisect_right(word_ends, limit) - 1
            end = word_ends[i] if i >= 0 and word_ends[i] > pos else word_ends[bisect.bisect_right(word_ends, pos)]
        end = word_ends[bisect.bisect_right(word_ends, end) - 1]  # trim trailing blanks
        spans.append((pos, end))
        back = end - overlap
        j = bisect.bisect_left(sent_starts, back)
        if j < len(sent_starts) and sent_starts[j] < end:
            nxt = sent_starts[j]
        else:
            nxt = word_starts[bisect.bisect_left(word_starts, back)]
        if nxt <= pos:
            nxt = word_starts[bisect.bisect_right(word_starts, pos)]
        if nxt >= text_end:
            return spans
        pos = nxt


# ---------------------------------------------------------------- the model's tokens

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


# ---------------------------------------------------------------- a section's units, packed

def pack(units: list[tuple[int, int, int]], max_words: int, overlap: int) -> list[tuple[int, int]]:
    """Greedily group consecutive units up to ``max_words``; each group repeats the previous
    group's trailing units that fit in ``overlap`` words.

    >>> pack([(0, 5, 60), (6, 10, 60), (11, 20, 60)], 150, 70)
    [(0, 10), (6, 20)]
    """
    spans, i = [], 0
    while i < len(units):
        j, words = i, 0
        while j < len(units) and (j == i or words + units[j][2] <= max_words):
            words += units[j][2]
            j += 1
        spans.append((units[i][0], units[j - 1][1]))
        if j >= len(units):
            break
        k, back = j, 0
        while k - 1 > i and back + units[k - 1][2] <= overlap:
            k -= 1
            back += units[k][2]
        i = k
    return spans


# ---------------------------------------------------------------- a learner's own chunker

class Word(str):
    """A word of a page that knows its place (``n``-th word), so windows a learner's chunker makes of
    the words can be laid back onto the page's characters."""

    n: int

    def __new__(cls, text: str, n: int):
        word = super().__new__(cls, text)
        word.n = n
        return word


def spans_of_windows(text: str, size: int, overlap: int, windows: Callable) -> list[tuple[int, int]]:
    """The character spans of the word windows ``windows(words, size, overlap)`` returns for a page
    (the seam where a learner's chunker replaces ``word_spans``): each window must be a run of the
    page's consecutive words, as the function was given them; empty windows are dropped.
    """
    found = word_positions(text)
    words = [Word(text[a:b], n) for n, (a, b) in enumerate(found)]
    spans = []
    for i, window in enumerate(windows(words, size, overlap)):
        window = list(window)
        if not window:
            continue
        if not all(isinstance(w, Word) for w in window):
            raise ValueError(f"window {i} holds {next(w for w in window if not isinstance(w, Word))!r}, "
                             "not one of the words the chunker was given (return slices of `words`)")
        places = [w.n for w in window]
        if places != list(range(places[0], places[0] + len(places))):
            raise ValueError(f"window {i} is not a run of consecutive words (words {places[:5]}...)")
        spans.append((found[places[0]][0], found[places[-1]][1]))
    return spans


def checked_spans(name: str, chunker: Callable, text: str) -> list[tuple[int, int]]:
    """A learner's chunker ``name``'s spans of one page, checked: integers inside the text, start before
    end, in order of start; a span of blanks only is dropped."""
    out = chunker(text)
    spans, last = [], -1
    for i, span in enumerate(out):
        try:
            a, b = (int(x) for x in span)
        except (TypeError, ValueError):
            raise ValueError(f"chunker {name!r}: chunk {i} is {span!r}, not a (start, end) pair of offsets") from None
        if not 0 <= a < b <= len(text):
            raise ValueError(f"chunker {name!r}: chunk {i} is ({a}, {b}), outside the page's 0..{len(text)} "
                             "or empty (start must be below end)")
        if a < last:
            raise ValueError(f"chunker {name!r}: chunk {i} starts at {a}, before chunk {i - 1} ({last}): "
                             "return the spans in order of start")
        last = a
        if text[a:b].strip():
            spans.append((a, b))
    return spans
