"""Citations: find the numbers an answer cites and check each against the sources it was given.

A model is asked to cite like ``[1]`` or ``[1, 2]`` after each sentence (``raglab.book.prompt``). The check is done
in code, never left to the model: every cited number must name one of the sources retrieved for this question
and this user; an answer with an invalid citation, or with no valid one, is refused (``CitationCheck.reason``).
Taught in notebook 04, where you write this check yourself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from raglab.book.prompt import Source

# a bracketed group: the place a citation may stand
CITATION = re.compile(r"\[\s*([^\[\]]{1,200}?)\s*\]")


def parse_citations(text: str) -> list[str]:
    """Every citation in order: numbers (``[1]``, ``[1, 2]``) and ids (``[library/json.txt#3]``).

    >>> parse_citations("Lists are mutable [1]. See also [2, 3] and [library/json.txt#c4].")
    ['1', '2', '3', 'library/json.txt#c4']
    """
    out = []
    for m in CITATION.finditer(text):
        inner = m.group(1)
        parts = [p.strip() for p in inner.split(",")]
        if all(re.fullmatch(r"\d+", p) for p in parts):
            out += parts
        elif "#" in inner and " " not in inner.strip():
            out.append(inner.strip())
    return out


@dataclass
class CitationCheck:
    """The verdict on an answer's citations."""

    valid: list[Source]
    invalid: list[str]

    @property
    def reason(self) -> str | None:
        """``invalid-citation``, ``no-citation`` or None when the answer may be shown."""
        if self.invalid:
            return "invalid-citation"
        if not self.valid:
            return "no-citation"
        return None


def _names_no_source(token: str, source: Source | None) -> bool:
    return source is None


def check_citations(text: str, sources: list[Source],
                    is_invalid: Callable[[str, Source | None], bool] = _names_no_source) -> CitationCheck:
    """Map each citation to a retrieved source; anything else is invalid.

    ``is_invalid(token, source)`` decides which citations are invalid (``source`` is the one the token
    names, or None): by default those that name no source. A citation it lets through that names no
    source is left out of the valid ones (the course passes a learner's check here: ``raglab.course.stages``).

    >>> from raglab.book.chunking import Chunk
    >>> c = Chunk("a.md#x", "a.md", ("A",), 0, 1, "t", "t", ("public",), "words")
    >>> check = check_citations("Yes [1]. No [99].", [Source(1, c)])
    >>> [s.n for s in check.valid], check.invalid, check.reason
    ([1], ['99'], 'invalid-citation')
    """
    by_n = {str(s.n): s for s in sources}
    by_id = {s.chunk.id: s for s in sources}
    valid, invalid = [], []
    for token in parse_citations(text):
        source = by_n.get(token) or by_id.get(token)
        if is_invalid(token, source):
            invalid.append(token)
        elif source is not None and source not in valid:
            valid.append(source)
    return CitationCheck(valid, invalid)


def defuse(text: str) -> str:
    """Brackets that would read as a citation (``[1]``, ``[2, 3]``, ``[a.md#x]``) become fullwidth.

    >>> defuse("a list [1, 2] of [x]")
    'a list ［1, 2］ of [x]'
    """
    return CITATION.sub(lambda m: f"［{m.group()[1:-1]}］" if parse_citations(m.group()) else m.group(), text)
