"""Chunks: the unit that is retrieved and cited.

Why chunk? A page is too long to be one search result: the embedding model reads only its first 256
tokens, and an answer cites a passage, not a page. So pages are cut into chunks, each indexed, found
and cited on its own. The **size** trades context for precision: a large chunk keeps an explanation
together but blurs what it is about, a small one is sharp but may cut an answer in two. The
**overlap** repeats the end of a chunk at the start of the next, so a passage cut at a boundary is
still whole in one of them. Taught in notebook 01.

Every ``Chunk`` keeps its document id, heading path and character offsets, so
``doc.text[c.start:c.end] == c.text``; ``indexed_text`` is what embeddings and BM25 see: the text with
reST underline rules blanked and whitespace folded, optionally after a contextual prefix. Here: the
record, its settings, the one registry of strategies (raglab's eight, a learner's by
``register_chunker``) and the ids, which depend only on the text and the settings. How each strategy
cuts: ``raglab.book.chunkers`` (and ``raglab.book.model_chunkers``, for those that need the model).

=========  ====================  ==============
strategy   default size/overlap  id
=========  ====================  ==============
words      150 / 30 words        ``doc#7``
chars      500 / 80 chars        ``doc#c7``
large      3000 / 400 chars      ``doc#l7``
headings   150 / 30 words        ``doc#slug``
recursive  256 / 32 tokens       ``doc#r7``
tokens     256 / 32 tokens       ``doc#t7``
semantic   256 / 0 tokens        ``doc#s7``
parent     64 / 16 words         ``doc#slug/2``
=========  ====================  ==============
"""
from __future__ import annotations

import hashlib
import inspect
import re
from dataclasses import asdict, dataclass, replace
from typing import Callable, Iterable

from raglab.base.text import clean
from raglab.book.chunkers import char_spans, checked_spans, pack, spans_of_windows, word_spans
from raglab.book.documents import Document
from raglab.book.model_chunkers import recursive_spans, semantic_spans, token_spans
from raglab.book.sections import Section, heading_at, section_units, slugify, split_sections

# bumped whenever the same settings cut a text differently (2: a short word such as "it." ends a sentence),
# so that an index cut by an older chunker is refused with its rebuild command
CHUNKER_VERSION = 2
MODEL_TOKENS = 256     # the embedding model's window, [CLS] and [SEP] included: a token chunk fits in it
STRATEGIES = ("words", "chars", "large", "headings", "recursive", "tokens", "semantic", "parent")
DEFAULTS = {"words": (150, 30), "chars": (500, 80), "large": (3000, 400), "headings": (150, 30),
            "recursive": (MODEL_TOKENS, 32), "tokens": (MODEL_TOKENS, 32), "semantic": (MODEL_TOKENS, 0),
            "parent": (64, 16)}
UNITS = {"words": "words", "chars": "characters", "large": "characters", "headings": "words",
         "recursive": "tokens", "tokens": "tokens", "semantic": "tokens", "parent": "words"}
# the id of a window strategy's n-th chunk is ``doc#<mark><n>`` (a registered chunker's mark is "x")
MARKS = {"words": "", "chars": "c", "large": "l", "recursive": "r", "tokens": "t", "semantic": "s"}
# semantic: a cut where the distance between neighbouring sentences is above this percentile of the
# page's distances (chosen on the full docs' dev split: evals/results/chunking-lab.json)
SEMANTIC_BREAKPOINT = 90
# parent: the parents are heading-aware chunks of at most this many words (whole sections when shorter)
PARENT_WORDS = 300
# a learner's chunkers by name (``register_chunker``): text in, (start, end) spans out
REGISTERED: dict[str, Callable] = {}


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
        if UNITS[self.strategy] == "tokens" and not 2 < size <= MODEL_TOKENS:
            raise ValueError(f"{self.strategy} chunks are sized in the model's tokens: size must be 3 to "
                             f"{MODEL_TOKENS}, got {size}")
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


# ---------------------------------------------------------------- the registry

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
    checks on coverage and the token limit are ``raglab.evaluation.chunk_checks.check_chunks``'s.
    """
    if not name or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"a chunker's name is lowercase letters, digits and _ (starting with a letter), got {name!r}")
    if name in STRATEGIES:
        raise ValueError(f"{name!r} is one of raglab's strategies: choose another name")
    if not callable(fn):
        raise ValueError(f"register_chunker({name!r}, ...) needs a function of the page's text, got {fn!r}")
    REGISTERED[name] = fn
    return ChunkSettings(name)


def spans_of(text: str, s: ChunkSettings, windows: Callable | None = None,
             embed: Callable | None = None, tokenizer=None) -> list[tuple[int, int]]:
    """Look up the strategy of ``s`` (resolved settings) and cut ``text`` with it: a learner's word
    ``windows`` or registered chunker, else raglab's, handed ``tokenizer`` when it counts tokens."""
    if windows is not None:
        return spans_of_windows(text, s.size, s.overlap, windows=windows)
    if s.strategy in REGISTERED:
        return checked_spans(s.strategy, REGISTERED[s.strategy], text)
    cutters = {   # raglab's window strategies (headings and parent cut whole sections: chunk_document)
        "words": lambda: word_spans(text, s.size, s.overlap),
        "chars": lambda: char_spans(text, s.size, s.overlap), "large": lambda: char_spans(text, s.size, s.overlap),
        "tokens": lambda: token_spans(text, s.size, s.overlap, tokenizer),
        "recursive": lambda: recursive_spans(text, s.size, s.overlap, tokenizer),
        "semantic": lambda: semantic_spans(text, s.size, s.breakpoint, embed, tokenizer)}
    if s.strategy not in cutters:
        raise ValueError(f"the {s.strategy} strategy cuts whole sections: use chunk_document")
    return cutters[s.strategy]()


# ---------------------------------------------------------------- chunks

def prefix_for(path: tuple[str, ...]) -> str:
    """The contextual prefix, e.g. ``'Built-in Types > Truth Value Testing: '``."""
    return " > ".join(path) + ": " if path else ""


def chunk_document(doc: Document, settings: ChunkSettings = ChunkSettings(), windows: Callable | None = None,
                   embed: Callable | None = None, tokenizer=None) -> list[Chunk]:
    """Cut one document into chunks with the given settings; ``windows`` (a function of words, size and
    overlap returning word windows) replaces the word-window strategy's own (``spans_of_windows``);
    ``embed`` (texts to unit vectors) is what the semantic strategy measures sentences with, ``tokenizer``
    (the model's, a ``tokenizers.Tokenizer``) what the strategies sized in tokens count with."""
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
        if UNITS.get(s.strategy) == "tokens" and tokenizer is None:
            raise ValueError(f"the {s.strategy} strategy counts the model's tokens: pass tokenizer= "
                             "(e.g. raglab.infra.tokenizer.load_tokenizer())")
        spans, mark = spans_of(doc.text, s, windows, embed, tokenizer), MARKS.get(s.strategy, "x")
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
    spans = pack(section_units(doc.text, a, b, size), size, overlap)
    return [(f"{parent_id}/{n}", s, e, path, parent_id) for n, (s, e) in enumerate(spans, 1)]


def _heading_pieces(doc: Document, sections: list[Section], size: int, overlap: int):
    """Heading-aware spans with ids ``doc#slug`` (``doc#slug:2``... when a section splits)."""
    pieces, used = [], {}
    for sec in sections:
        units = section_units(doc.text, sec.start, sec.end, size)
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


def chunk_corpus(docs: Iterable[Document], settings: ChunkSettings = ChunkSettings(), windows: Callable | None = None,
                 embed: Callable | None = None, tokenizer=None) -> list[Chunk]:
    """Chunk every document, in order; ids are unique (checked). ``windows``, ``embed``, ``tokenizer``: see
    ``chunk_document``."""
    chunks = [c for d in docs for c in chunk_document(d, settings, windows, embed, tokenizer)]
    ids = [c.id for c in chunks]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise RuntimeError(f"duplicate chunk id {dup!r}: two documents share an id?")
    return chunks
