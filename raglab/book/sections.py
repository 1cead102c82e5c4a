"""A page's structure: its headings, the sections they open, and the units a section is cut into.

A heading is a Markdown ``#`` line or a title underlined (Sphinx text, reST, setext). A section runs from
its heading to the next heading at any level and knows its heading path, title first: ``("Built-in
Types", "Truth Value Testing")``. A section's units are its paragraphs, split at sentence ends only when
one is longer than the window; tables stay whole. The heading-aware strategies pack these units. Taught in
notebook 01.
"""
from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from raglab.base.text import clean, paragraphs, sentence_ends
from raglab.book.chunkers import word_spans

_UNDERLINE = re.compile(r"([=\-*~^\"+#`'.:_])\1{2,}")
_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def slugify(title: str) -> str:
    """``'Boolean Operations --- "and", "or"'`` -> ``'boolean-operations-and-or'``."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"


class Section(NamedTuple):
    """A heading's span, from its heading line to the next heading at any level: ``(path, start, end)``."""

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


def split_sections(text: str, title: str | None = None) -> list[Section]:
    """The document's sections in order, each with its heading path (title first).

    Underline styles get levels in order of first appearance, as reST does; ``#`` counts.
    Text before the first heading is a section of its own, path ``(title,)`` (``()`` without a title).
    """
    headings = find_headings(text)
    levels: dict[tuple, int] = {}
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    if not headings or headings[0][0] > 0 and text[: headings[0][0]].strip():
        sections.append(Section((title,) if title is not None else (), 0, headings[0][0] if headings else len(text)))
    for n, (offset, style, name) in enumerate(headings):
        level = style[1] if style[0] == "#" else levels.setdefault(style, len(levels) + 1)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        path = tuple(t for _, t in stack)
        if title is not None and path[0] != title:
            path = (title,) + path
        end = headings[n + 1][0] if n + 1 < len(headings) else len(text)
        sections.append(Section(path, offset, end))
    return sections


def heading_at(sections: list[Section], offset: int) -> tuple[str, ...]:
    """The heading path of the section that contains ``offset``."""
    starts = [s.start for s in sections]
    i = max(bisect.bisect_right(starts, offset) - 1, 0)
    return sections[i].path if sections else ()


# ---------------------------------------------------------------- a section's units

def section_units(text: str, start: int, end: int, max_words: int) -> list[tuple[int, int, int]]:
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
