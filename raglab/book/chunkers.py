"""The strategies: how each one cuts a page's text into ``(start, end)`` character spans.

Each is a plain function of the text and its window (size, overlap), looked up by name in
``raglab.book.chunking``. The strategies that need the embedding model (tokens, recursive, semantic: sized in
its tokens or measured with its vectors) are ``raglab.book.model_chunkers``'.

- words: a sliding word window (the course's ``chunk_text``): ``word_spans``
- chars, large: a character window ended on a paragraph, sentence or word end: ``char_spans``
- headings, parent: a section's paragraphs packed into windows (``pack``), one section at a time
- a learner's own: word windows (``spans_of_windows``), a registered chunker (``checked_spans``)
Taught in notebooks 01 (words, chars, headings) and 07 (every strategy, in the chunking race).
"""
from __future__ import annotations

import bisect
import re
from typing import Callable

from raglab.base.text import blank_rules, sentence_ends

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
        if end >= text_end:      # the page's last word, longer than the window, ended it
            return spans
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
