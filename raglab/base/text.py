"""Text helpers shared by loading, chunking, reranking, generation and the guards: paragraphs, sentence
ends, sentences and the cleaning of reST underline rules (offsets into the original text are always
kept), the one rule for invisible characters, the one pattern for a contact point, and the "did you
mean" hint of an error message."""
from __future__ import annotations

import difflib
import re

_RULE = re.compile(r"[=\-*~^]{4,}")          # the course's cleaning: reST underline rules


_SENT_END = re.compile(r"[.!?][\"')\]]*(?=\s)")


_LIST_ITEM = re.compile(r"^[ \t]*((?:[-*+]|\d{1,2}[.)]|#\.)[ \t])", re.M)   # a list item's line


_ABBREV = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "mr.", "mrs.", "dr.", "no.", "approx.", "fig.", "al."}


def blank_rules(text: str) -> str:
    """Replace reST underline rules by spaces of the same length, so offsets are kept.

    >>> blank_rules("Title\\n=====\\nBody")
    'Title\\n     \\nBody'
    """
    return _RULE.sub(lambda m: " " * len(m.group()), text)


def clean(text: str) -> str:
    """Indexed form of a chunk's text: underline rules removed, whitespace folded.

    >>> clean("Title\\n=====\\n\\nSome   text.")
    'Title Some text.'
    """
    return " ".join(_RULE.sub(" ", text).split())


def sentence_ends(text: str) -> list[int]:
    """Offsets just after each sentence-ending mark followed by space (abbreviations excluded).

    >>> sentence_ends("It works, e.g. here. Next one! Done")
    [20, 30]

    A list label (``a.``, ``12.``, ``(b)``) is not an end; a short word is (``Try it. Then``):

    >>> sentence_ends("See a. Then b. Do it. Now 2. Later")
    [21]
    """
    ends = []
    for m in _SENT_END.finditer(text):
        word_start = text.rfind(" ", 0, m.start()) + 1
        word_start = max(word_start, text.rfind("\n", 0, m.start()) + 1)
        word = text[word_start:m.end()].lower().strip("\"')]")
        if word in _ABBREV or re.fullmatch(r"\(?(?:[0-9]{1,2}|[a-z])[.)]", word):
            continue
        nxt = re.compile(r"\s*(\S)").match(text, m.end())
        if nxt and nxt.group(1).islower():
            continue
        ends.append(m.end())
    return ends


def paragraphs(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of the blank-line separated blocks in ``text[start:end]``, blanks trimmed.

    >>> paragraphs("a b\\n\\n  c\\n", 0, 9)
    [(0, 3), (7, 8)]
    """
    spans, pos = [], start
    for m in list(re.finditer(r"\n[ \t]*\n", text[start:end])) + [None]:
        stop = start + m.start() if m else end
        block = text[pos:stop]
        if block.strip():
            lead = len(block) - len(block.lstrip())
            spans.append((pos + lead, pos + len(block.rstrip())))
        pos = start + m.end() if m else end
    return spans


MAX_SENTENCES = 24


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence: paragraphs cut at sentence ends and before each list item
    (a line starting ``-``, ``*``, ``+``, ``1.`` or ``#.``), blanks trimmed.

    >>> sentence_spans("First one. Second one.\\n\\nThird")
    [(0, 10), (11, 22), (24, 29)]
    >>> [text[a:b] for text in ["Limits:\\n- up to 8 mm\\n- no more than 12 hours"] for a, b in sentence_spans(text)]
    ['Limits:', '- up to 8 mm', '- no more than 12 hours']
    """
    spans = []
    for a, b in paragraphs(text, 0, len(text)):
        items = [a + m.start(1) for m in _LIST_ITEM.finditer(text[a:b]) if m.start(1) > 0]
        cuts = sorted({a, *items, *(a + e for e in sentence_ends(text[a:b])), b})
        for s, e in zip(cuts, cuts[1:]):
            piece = text[s:e]
            if piece.strip():
                spans.append((s + len(piece) - len(piece.lstrip()), s + len(piece.rstrip())))
    return spans


def sentences(text: str, limit: int = MAX_SENTENCES) -> list[str]:
    """The sentences of a chunk, cleaned, at most ``limit``.

    >>> sentences("First one. Second one.\\n\\nThird")
    ['First one.', 'Second one.', 'Third']
    """
    return [s for s in (clean(text[a:b]) for a, b in sentence_spans(text)) if s][:limit]


# The one rule for invisible characters (``remove_invisible``): Unicode's format characters (Cf) less
# the visible prepended concatenation marks, plus the variation selectors, the combining grapheme joiner
# and the Hangul fillers (the unassigned code points inside these ranges go too).
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]")


def remove_invisible(text: str) -> str:
    """Drop the characters a reader never sees: the one rule for invisible characters, used when a
    corpus is loaded (``raglab.base.corpus_files.remove_hidden``) and when the injection rule reads a
    sentence (``raglab.guards.injection.rule_text``).

    Dropped: every Unicode format character (category Cf: zero-width space, non-joiner and joiner,
    word joiner, BOM, soft hyphen, bidi controls, tag characters, ...) except the prepended
    concatenation marks, which render as visible signs (U+0600..U+0605 ARABIC NUMBER SIGN and kin,
    U+06DD, U+070F, U+0890, U+0891, U+08E2, U+110BD, U+110CD); and, though not Cf, the variation
    selectors (U+FE00..U+FE0F, as in the emoji presentation selector U+FE0F, and U+E0100..U+E01EF),
    the Mongolian free variation selectors, the combining grapheme joiner (U+034F) and the Hangul
    fillers (U+115F, U+1160, U+3164, U+FFA0), which also render as nothing. Nothing else is touched.

    >>> remove_invisible("pass\\u200bword \\u2060ok\\ufeff so\\u00adft \\u2764\\ufe0f \\u3164x")
    'password ok soft \u2764 x'
    >>> remove_invisible("\\u0600 123") == "\\u0600 123"     # ARABIC NUMBER SIGN: visible, kept
    True
    """
    return _INVISIBLE.sub("", text)


# The one pattern for a contact point (``contact_spans``; a string, so that the injection rule can hold it in
# its own patterns): an e-mail address, a URL, or a number of seven digits or more (phone, card or account),
# spaces, dots, dashes and brackets between its digits allowed, a bare ISO date (2024-01-15) excluded.
CONTACT = (r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://[^\s<>()\[\]]+|\bwww\.[^\s<>()\[\]]+"
           r"|(?<!\d)(?!\d{4}-\d{2}-\d{2}(?![ ().-]*\d))\+?\d(?:[ ().-]*\d){6,}")
_CONTACT = re.compile(CONTACT)


def contact_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each contact point in a text (``CONTACT``): e-mail addresses, URLs, and numbers
    of seven digits or more; trailing punctuation is the caller's to trim.

    >>> [t[a:b] for t in ["Call 555 0100 or +1 (888) 555-0199, not 555-010; mail a@b.example by 2024-01-15."]
    ...  for a, b in contact_spans(t)]
    ['555 0100', '+1 (888) 555-0199', 'a@b.example']
    """
    return [m.span() for m in _CONTACT.finditer(text)]


def did_you_mean(word: str, choices: tuple[str, ...]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``choices``, else an empty string.

    >>> did_you_mean("acces", ("title", "access"))
    " (did you mean 'access'?)"
    """
    close = difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
