"""Chunks: the unit that is retrieved and cited.

Eight strategies, one record. Every ``Chunk`` keeps its document id, heading path and the
character offsets of its text in the document, so ``doc.text[c.start:c.end] == c.text``.
``indexed_text`` is what embeddings and BM25 see: the text with reST underline rules
blanked and whitespace folded, optionally after a contextual prefix.

=========  =================================================  ===================  ==========
strategy   cuts                                               default size/overlap  id
=========  =================================================  ===================  ==========
words      sliding word window (the course's ``chunk_text``)  150 / 30 words       ``doc#7``
chars      character window snapped to sentence/word ends     500 / 80 chars       ``doc#c7``
large      character window on paragraph/sentence ends        3000 / 400 chars     ``doc#l7``
headings   one section at a time, then by length              150 / 30 words       ``doc#slug``
recursive  paragraph, line, sentence, word separators         256 / 32 tokens      ``doc#r7``
           (``langchain-text-splitters``), sized by MiniLM's tokenizer
tokens     windows of MiniLM word pieces, ended on a word end 256 / 32 tokens      ``doc#t7``
semantic   sentences grouped, cut where neighbours' vectors   256 / 0 tokens       ``doc#s7``
           drift apart (a percentile of the page's distances)
parent     small chunks inside heading-aware parents of        64 / 16 words        ``doc#slug/2``
           ``PARENT_WORDS``; a hit hands on its parent
=========  =================================================  ===================  ==========

Token sizes count [CLS] and [SEP], as the model does, so 256 is the model's whole window. A
learner's own chunker (text in, spans out) joins the same race with ``register_chunker``.
Ids depend only on the document text and the settings, so they are the same on every run.
"""
from __future__ import annotations

import bisect
import functools
import hashlib
import inspect
import re
from dataclasses import asdict, dataclass, replace
from typing import Callable, Iterable

from raglab.book.documents import Document
from raglab.infra.packaged_models import MINILM_MAX_TOKENS, minilm_path
from raglab.base.text import blank_rules, clean, paragraphs, sentence_ends

# bumped whenever the same settings cut a text differently (2: a short word such as "it." ends a sentence),
# so that an index cut by an older chunker is refused with its rebuild command
CHUNKER_VERSION = 2
STRATEGIES = ("words", "chars", "large", "headings", "recursive", "tokens", "semantic", "parent")
DEFAULTS = {"words": (150, 30), "chars": (500, 80), "large": (3000, 400), "headings": (150, 30),
            "recursive": (MINILM_MAX_TOKENS, 32), "tokens": (MINILM_MAX_TOKENS, 32), "semantic": (MINILM_MAX_TOKENS, 0),
            "parent": (64, 16)}
UNITS = {"words": "words", "chars": "characters", "large": "characters", "headings": "words",
         "recursive": "tokens", "tokens": "tokens", "semantic": "tokens", "parent": "words"}
# the recursive splitter's separators, coarsest first: paragraph, line, sentence, word, character
RECURSIVE_SEPARATORS = ("\n\n", "\n", ". ", " ", "")
# semantic: a cut where the distance between neighbouring sentences is above this percentile of the
# page's distances (chosen on the full docs' dev split: evals/results/chunking-lab.json)
SEMANTIC_BREAKPOINT = 90
# parent: the parents are heading-aware chunks of at most this many words (whole sections when shorter)
PARENT_WORDS = 300
# a learner's chunkers by name (``register_chunker``): text in, (start, end) spans out
REGISTERED: dict[str, Callable] = {}

_WORD = re.compile(r"\S+")
_UNDERLINE = re.compile(r"([=\-*~^\"+#`'.:_])\1{2,}")
_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Chunk:
    """A span of one document: ``text`` is ``doc.text[start:end]``."""

    id: str
    doc: str
    heading: tuple[str, ...]
    start: int
    end: int
    text: str
    indexed_text: str
    access: tuple[str, ...]
    strategy: str
    parent: str = ""    # the parent chunk's id (the ``parent`` strategy's small chunks only)

    def to_dict(self) -> dict:
        """A JSON-ready dict (tuples become lists; ``parent`` only when there is one)."""
        d = asdict(self)
        d["heading"], d["access"] = list(self.heading), list(self.access)
        if not self.parent:
            del d["parent"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Chunk":
        """The inverse of ``to_dict``."""
        return cls(**{**d, "heading": tuple(d["heading"]), "access": tuple(d["access"])})


@dataclass(frozen=True)
class ChunkSettings:
    """How to chunk: a strategy, its size and overlap (see ``UNITS``), and the prefix option."""

    strategy: str = "words"
    size: int | None = None
    overlap: int | None = None
    prefix: bool = False
    breakpoint: int | None = None   # semantic only: the percentile of the page's sentence distances cut at

    def resolved(self) -> "ChunkSettings":
        """Fill in the strategy's defaults and check the values."""
        if self.strategy in REGISTERED:
            if self.size is not None or self.overlap is not None:
                raise ValueError(f"{self.strategy!r} is a registered chunker: it sizes its own chunks (no size or overlap)")
            return replace(self, size=0, overlap=0)
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown chunking strategy {self.strategy!r}: choose one of "
                             f"{', '.join(STRATEGIES + tuple(REGISTERED))}")
        size, overlap = DEFAULTS[self.strategy]
        size = size if self.size is None else int(self.size)
        overlap = overlap if self.overlap is None else int(self.overlap)
        if size <= 0:
            raise ValueError(f"size must be positive, got {size}")
        if not 0 <= overlap < size:
            raise ValueError(f"overlap must be at least 0 and smaller than size ({size}), got {overlap}")
        if UNITS[self.strategy] == "tokens" and not 2 < size <= MINILM_MAX_TOKENS:
            raise ValueError(f"{self.strategy} chunks are sized in the model's tokens: size must be 3 to "
                             f"{MINILM_MAX_TOKENS}, got {size}")
        if self.strategy == "semantic" and overlap:
            raise ValueError("semantic chunks do not overlap: overlap must be 0")
        breakpoint = self.breakpoint
        if self.strategy == "semantic":
            breakpoint = SEMANTIC_BREAKPOINT if breakpoint is None else int(breakpoint)
            if not 0 < breakpoint < 100:
                raise ValueError(f"breakpoint is a percentile: 1 to 99, got {breakpoint}")
        elif breakpoint is not None:
            raise ValueError(f"breakpoint is the semantic strategy's, not {self.strategy!r}'s")
        return replace(self, size=size, overlap=overlap, breakpoint=breakpoint)

    def label(self) -> str:
        """A short name for tables and plots, e.g. ``words 150/30``, ``headings 150/30 +prefix``,
        ``semantic 256 p90`` or a registered chunker's name."""
        s = self.resolved()
        if s.strategy in REGISTERED:
            core = s.strategy
        elif s.strategy == "semantic":
            core = f"semantic {s.size} p{s.breakpoint}"
        else:
            core = f"{s.strategy} {s.size}/{s.overlap}"
        return core + (" +prefix" if s.prefix else "")

    def record(self) -> dict:
        """What an index manifest records of these settings: strategy, size, overlap, prefix, and the
        semantic breakpoint or a registered chunker's code hash when they apply."""
        s = self.resolved()
        out = {"strategy": s.strategy, "size": s.size, "overlap": s.overlap, "prefix": s.prefix}
        if s.breakpoint is not None:
            out["breakpoint"] = s.breakpoint
        if s.strategy in REGISTERED:
            out["code"] = code_hash(REGISTERED[s.strategy])
        return out

    def name(self) -> str:
        """The settings in an index folder's name, e.g. ``words-150-30-prefix`` or ``semantic-256-0-p90``."""
        s = self.resolved()
        extra = f"-p{s.breakpoint}" if s.breakpoint is not None else ""
        if s.strategy in REGISTERED:
            extra = "-" + code_hash(REGISTERED[s.strategy])
        return f"{s.strategy}-{s.size}-{s.overlap}{extra}" + ("-prefix" if s.prefix else "")


def code_hash(fn: Callable) -> str:
    """A short hash of a function's source (its bytecode when the source cannot be read): an index cut
    by an earlier version of a learner's chunker is rebuilt, not reused."""
    try:
        code = inspect.getsource(fn).encode()
    except (OSError, TypeError):
        code = getattr(getattr(fn, "__code__", None), "co_code", repr(fn).encode())
    return hashlib.sha256(code).hexdigest()[:10]


def register_chunker(name: str, fn: Callable) -> ChunkSettings:
    """Make ``fn`` (a page's text in, its chunks' ``(start, end)`` character spans out) a strategy named
    ``name``, and return its settings: ``ChunkSettings(name)`` then chunks, indexes and races like any other.

    Its spans are checked on every page (inside the text, start before end, in order of start); the
    checks on coverage and the token limit are ``check_chunks``'s.
    """
    if not name or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"a chunker's name is lowercase letters, digits and _ (starting with a letter), got {name!r}")
    if name in STRATEGIES:
        raise ValueError(f"{name!r} is one of raglab's strategies: choose another name")
    if not callable(fn):
        raise ValueError(f"register_chunker({name!r}, ...) needs a function of the page's text, got {fn!r}")
    REGISTERED[name] = fn
    return ChunkSettings(name)


# ---------------------------------------------------------------- text helpers


def slugify(title: str) -> str:
    """``'Boolean Operations --- "and", "or"'`` -> ``'boolean-operations-and-or'``."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"


# ---------------------------------------------------------------- sections

@dataclass(frozen=True)
class Section:
    """A heading's span: from its heading line to the next heading at any level."""

    path: tuple[str, ...]
    start: int
    end: int


def _is_heading_text(line: str) -> bool:
    """A line that could be a title: not blank, not indented, not a table or list row."""
    s = line.rstrip()
    return bool(s) and not line[0].isspace() and s[0] not in "+|" and not _UNDERLINE.fullmatch(s)


def find_headings(text: str) -> list[tuple[int, tuple, str]]:
    """``(offset, style, title)`` for each heading: Markdown ``#`` or a title underlined.

    Underlined titles (Sphinx text, reST, setext) need an underline at least as long as
    the title; Markdown headings inside code fences are ignored.
    """
    lines = text.split("\n")
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    found, in_fence, underline = [], False, -1
    for i, line in enumerate(lines):
        if i == underline:
            continue
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = _MD_HEADING.match(line)
        if m:
            found.append((offsets[i], ("#", len(m.group(1))), m.group(2)))
            continue
        nxt = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
        if _is_heading_text(line) and _UNDERLINE.fullmatch(nxt) and len(nxt) >= len(line.rstrip()):
            found.append((offsets[i], ("_", nxt[0]), line.strip()))
            underline = i + 1  # a '~~~~' underline is not a code fence
    return found


def split_sections(text: str, title: str) -> list[Section]:
    """The document's sections in order, each with its heading path (title first).

    Underline styles get levels in order of first appearance, as reST does; ``#`` counts.
    Text before the first heading is a section of its own with path ``(title,)``.
    """
    headings = find_headings(text)
    levels: dict[tuple, int] = {}
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    if not headings or headings[0][0] > 0 and text[: headings[0][0]].strip():
        sections.append(Section((title,), 0, headings[0][0] if headings else len(text)))
    for n, (offset, style, name) in enumerate(headings):
        level = style[1] if style[0] == "#" else levels.setdefault(style, len(levels) + 1)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        path = tuple(t for _, t in stack)
        if path[0] != title:
            path = (title,) + path
        end = headings[n + 1][0] if n + 1 < len(headings) else len(text)
        sections.append(Section(path, offset, end))
    return sections


def heading_at(sections: list[Section], offset: int) -> tuple[str, ...]:
    """The heading path of the section that contains ``offset``."""
    starts = [s.start for s in sections]
    i = max(bisect.bisect_right(starts, offset) - 1, 0)
    return sections[i].path if sections else ()


# ---------------------------------------------------------------- spans

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


def _word_starts(offsets: list[tuple[int, int]]) -> list[bool]:
    """For each token (by its character offsets), whether a word begins with it: the first token, and
    every token after whitespace (a word piece ``##ing`` or a glued ``.`` continues its word)."""
    return [i == 0 or a > offsets[i - 1][1] for i, (a, _) in enumerate(offsets)]


def token_spans(text: str, size: int, overlap: int, tokenizer=None) -> list[tuple[int, int]]:
    """Windows of at most ``size`` MiniLM tokens ([CLS] and [SEP] included) stepping back ``overlap``
    tokens, each ending at a word's end and starting at a word's start (only a word longer than the
    window is cut inside). Offsets are the tokenizer's own, into ``text`` (underline rules blanked first).
    """
    tok = tokenizer or load_tokenizer()
    offsets = [o for o in tok.encode(blank_rules(text), add_special_tokens=False).offsets if o[1] > o[0]]
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


def model_windows(text: str) -> list[tuple[int, int]]:
    """A chunker of the learner's shape (a page's text in, ``(start, end)`` spans out): token windows of
    the model's whole 256 tokens, overlapping by 32 (``token_spans``)."""
    return token_spans(text, *DEFAULTS["tokens"])


@functools.lru_cache(maxsize=8)
def _recursive_splitter(size: int, overlap: int):
    """LangChain's ``RecursiveCharacterTextSplitter``, measuring pieces in MiniLM tokens (without the
    two special tokens, which the window reserves), keeping each separator at the end of its piece."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter  # lazy: only this strategy needs it

    tok = load_tokenizer()
    return RecursiveCharacterTextSplitter(
        separators=list(RECURSIVE_SEPARATORS), keep_separator="end", chunk_size=size - 2, chunk_overlap=overlap,
        length_function=lambda s: len(tok.encode(s, add_special_tokens=False).ids), strip_whitespace=True)


def recursive_spans(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """The recursive splitter's chunks (``langchain-text-splitters``) as spans of ``text``.

    The library returns strings; each is found in the page where the previous chunk's last ``overlap``
    tokens begin, or after (its own ``add_start_index`` guesses wrongly when the overlap is measured in
    tokens, and an earlier copy of a repeated sentence must not take the chunk). A chunk that is not a
    substring of the page is an error, never a silent misplacement.
    """
    blanked, tok = blank_rules(text), load_tokenizer()
    spans, pos = [], 0
    for piece in _recursive_splitter(size, overlap).split_text(blanked):
        at = blanked.find(piece, pos)
        if at < 0:
            raise RuntimeError(f"the recursive splitter returned a chunk that is not in the page: {piece[:60]!r}")
        spans.append((at, at + len(piece)))
        offsets = tok.encode(piece, add_special_tokens=False).offsets
        # the next chunk repeats at most ``overlap`` tokens of this one (two spare for word pieces merged anew)
        pos = at + (offsets[max(len(offsets) - overlap - 2, 0)][0] if offsets else 0) + 1 if overlap else at + len(piece)
    return spans


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


def semantic_spans(text: str, size: int, breakpoint: int, embed: Callable, tokenizer=None) -> list[tuple[int, int]]:
    """Sentences grouped in order; a chunk ends where the cosine distance between a sentence and the
    next is above the ``breakpoint``-th percentile of the page's neighbour distances (the percentile
    rule of LangChain's ``SemanticChunker``), or where the next sentence would take it past ``size``
    tokens. A sentence longer than the window is cut into token windows (``token_spans``).

    ``embed`` maps a list of texts to unit vectors (an ``Embedder``'s ``encode``: cached by content).
    """
    import numpy as np

    tok = tokenizer or load_tokenizer()
    pieces = []
    for a, b in sentence_pieces(text):
        if len(tok.encode(clean(text[a:b])).ids) <= size:
            pieces.append((a, b))
        else:
            pieces.extend((a + s, a + e) for s, e in token_spans(text[a:b], size, 0, tok))
    if len(pieces) < 2:
        return pieces
    vectors = np.asarray(embed([clean(text[a:b]) for a, b in pieces]), dtype=np.float32)
    distance = 1.0 - np.sum(vectors[:-1] * vectors[1:], axis=1)
    cut_above = float(np.percentile(distance, breakpoint))
    lengths = [n - 2 for n in token_lengths([clean(text[a:b]) for a, b in pieces], tok)]
    spans, start, used = [], pieces[0][0], lengths[0]
    for i in range(1, len(pieces)):
        if distance[i - 1] > cut_above or used + lengths[i] > size - 2:
            spans.append((start, pieces[i - 1][1]))
            start, used = pieces[i][0], 0
        used += lengths[i]
    spans.append((start, pieces[-1][1]))
    return spans


def registered_spans(name: str, text: str) -> list[tuple[int, int]]:
    """A registered chunker's spans of one page, checked: integers inside the text, start before end,
    in order of start; a span of blanks only is dropped."""
    out = REGISTERED[name](text)
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


def _units(text: str, start: int, end: int, max_words: int) -> list[tuple[int, int, int]]:
    """Indivisible pieces of a section, ``(start, end, n_words)``: paragraphs, split by sentence
    (then line, then word) only when longer than ``max_words``; tables are never split."""
    units = []
    for ps, pe in paragraphs(text, start, end):
        n = len(clean(text[ps:pe]).split())
        if n <= max_words or _is_table(text[ps:pe]):
            units.append((ps, pe, n))
        else:
            units.extend(_split_long(text, ps, pe, max_words))
    return [u for u in units if u[2] > 0]


def _is_table(block: str) -> bool:
    """A grid table (``+---+`` borders) or a Markdown pipe table."""
    lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
    return len(lines) >= 2 and sum(ln[0] in "+|" for ln in lines) >= 0.8 * len(lines)


def _split_long(text: str, start: int, end: int, max_words: int) -> list[tuple[int, int, int]]:
    """Split a long paragraph at sentence ends; a sentence longer than ``max_words`` at clause
    marks (``;`` ``:``), then line ends, then words: only such a sentence is ever cut."""
    for pattern in ("sentence", "clause", "line"):
        if pattern == "sentence":
            cuts = [start + e for e in sentence_ends(text[start:end])]
        elif pattern == "clause":
            cuts = [start + m.end() for m in re.finditer(r"[;:](?=\s)", text[start:end])]
        else:
            cuts = [start + m.start() for m in re.finditer(r"\n", text[start:end])]
        pieces, s = [], start
        for c in cuts + [end]:
            piece = text[s:c]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                pieces.append((s + lead, s + len(piece.rstrip()), len(clean(piece).split())))
            s = c
        if len(pieces) > 1:
            out = []
            for p in pieces:
                out.extend([p] if p[2] <= max_words else _split_long(text, p[0], p[1], max_words))
            return out
    spans = word_spans(text[start:end], max_words, 0)
    return [(start + a, start + b, len(clean(text[start + a:start + b]).split())) for a, b in spans]


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


# ---------------------------------------------------------------- chunkers

def prefix_for(path: tuple[str, ...]) -> str:
    """The contextual prefix, e.g. ``'Built-in Types > Truth Value Testing: '``."""
    return " > ".join(path) + ": " if path else ""


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


def chunk_document(doc: Document, settings: ChunkSettings = ChunkSettings(), windows: Callable | None = None,
                   embed: Callable | None = None) -> list[Chunk]:
    """Cut one document into chunks with the given settings; ``windows`` (a function of words, size and
    overlap returning word windows) replaces the word-window strategy's own (``spans_of_windows``);
    ``embed`` (texts to unit vectors) is what the semantic strategy measures sentences with."""
    s = settings.resolved()
    sections = split_sections(doc.text, doc.title)
    if windows is not None and s.strategy != "words":
        raise ValueError(f"a chunker function replaces the word windows only, not the {s.strategy!r} strategy")
    if s.strategy == "headings":
        pieces = _heading_pieces(doc, sections, s.size, s.overlap)
    elif s.strategy == "parent":
        pieces = [child for parent in _heading_pieces(doc, sections, PARENT_WORDS, 0)
                  for child in _children(doc, parent, s.size, s.overlap)]
    else:
        if s.strategy == "semantic" and embed is None:
            raise ValueError("the semantic strategy measures sentences with the embedding model: pass "
                             "embed= (e.g. raglab.Embedder().encode)")
        cut = {"words": word_spans, "chars": char_spans, "large": char_spans, "recursive": recursive_spans,
               "tokens": token_spans,
               "semantic": lambda text, size, _: semantic_spans(text, size, s.breakpoint, embed)}.get(s.strategy)
        if s.strategy in REGISTERED:
            cut = lambda text, _size, _overlap: registered_spans(s.strategy, text)  # noqa: E731
        if windows is not None:
            cut = functools.partial(spans_of_windows, windows=windows)
        spans = cut(doc.text, s.size, s.overlap)
        mark = {"words": "", "chars": "c", "large": "l", "recursive": "r", "tokens": "t", "semantic": "s"}.get(s.strategy, "x")
        pieces = [(f"{doc.id}#{mark}{n}", a, b, heading_at(sections, a)) for n, (a, b) in enumerate(spans)]
    chunks = []
    for chunk_id, a, b, path, *parent in pieces:
        text = doc.text[a:b]
        indexed = (prefix_for(path) if s.prefix else "") + clean(text)
        chunks.append(Chunk(chunk_id, doc.id, path, a, b, text, indexed, doc.access, s.strategy, *parent))
    return chunks


def parent_chunks(doc: Document, settings: ChunkSettings = ChunkSettings("parent")) -> list[Chunk]:
    """The parents the ``parent`` strategy's small chunks point to: heading-aware chunks of at most
    ``PARENT_WORDS`` words (a whole section when it is shorter), with the prefix option of ``settings``."""
    s = settings.resolved()
    chunks = []
    for chunk_id, a, b, path in _heading_pieces(doc, split_sections(doc.text, doc.title), PARENT_WORDS, 0):
        indexed = (prefix_for(path) if s.prefix else "") + clean(doc.text[a:b])
        chunks.append(Chunk(chunk_id, doc.id, path, a, b, doc.text[a:b], indexed, doc.access, "parent"))
    return chunks


def _children(doc: Document, parent: tuple, size: int, overlap: int) -> list[tuple]:
    """A parent's small chunks: its paragraphs (sentences when long) packed to ``size`` words, with ids
    ``<parent id>/1``, ``/2``... and the parent's id last."""
    parent_id, a, b, path = parent
    spans = pack(_units(doc.text, a, b, size), size, overlap)
    return [(f"{parent_id}/{n}", s, e, path, parent_id) for n, (s, e) in enumerate(spans, 1)]


def _heading_pieces(doc: Document, sections: list[Section], size: int, overlap: int):
    """Heading-aware spans with ids ``doc#slug`` (``doc#slug:2``... when a section splits)."""
    pieces, used = [], {}
    for sec in sections:
        units = _units(doc.text, sec.start, sec.end, size)
        if sum(u[2] for u in units) <= len(clean(sec.path[-1]).split()):
            continue  # a heading with no text of its own before its first subsection
        slug = slugify(sec.path[-1]) if len(sec.path) > 1 else "intro"
        used[slug] = used.get(slug, 0) + 1
        if used[slug] > 1:
            slug = f"{slug}~{used[slug]}"
        spans = pack(units, size, overlap)
        for n, (a, b) in enumerate(spans, 1):
            suffix = f":{n}" if len(spans) > 1 else ""
            pieces.append((f"{doc.id}#{slug}{suffix}", a, b, sec.path))
    return pieces


def chunk_corpus(docs: Iterable[Document], settings: ChunkSettings = ChunkSettings(),
                 windows: Callable | None = None, embed: Callable | None = None) -> list[Chunk]:
    """Chunk every document, in order; ids are unique (checked). ``windows``, ``embed``: see ``chunk_document``."""
    chunks = [c for d in docs for c in chunk_document(d, settings, windows, embed)]
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise RuntimeError(f"duplicate chunk id {dup!r}: two documents share an id?")
    return chunks


# ---------------------------------------------------------------- token lengths

@functools.lru_cache(maxsize=1)
def load_tokenizer():
    """The packaged MiniLM's own word-piece tokenizer (``tokenizers``, no truncation), loaded once."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def token_lengths(texts: list[str], tokenizer=None) -> list[int]:
    """Word-piece tokens per text, counting [CLS] and [SEP] as the model does."""
    tok = tokenizer or load_tokenizer()
    return [len(e.ids) for e in tok.encode_batch(list(texts))]


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
        chunks = chunk_corpus(docs, s)
        chunks_by_label[s.label()] = chunks
        rows.append({"chunking": s.label(), **chunk_stats(chunks, tok)})
    return pd.DataFrame(rows).set_index("chunking"), chunks_by_label
