"""Grounding: the specifics of an answer (numbers with units, codes, e-mails, hosts, URLs) must be in a source.

A model can only repeat such specifics from its sources; one that appears in none of them was invented, or came
from somewhere the user may not see, and the answer is refused (``unsupported-claim``).
"""
from __future__ import annotations

import re
from urllib.parse import urlsplit

from raglab.book.citations import CITATION
from raglab.book.prompt import Source
from raglab.guards.injection import visible_text


# Units a number keeps when compared: canonical name -> spellings (after a space, a hyphen or nothing).
_UNITS = {"percent": r"%|percent|per cent", "millisecond": r"ms|milliseconds?", "second": r"seconds?|secs?",
          "minute": r"minutes?|mins?", "hour": r"hours?|hrs?", "business day": r"business days?|working days?",
          "day": r"days?", "week": r"weeks?", "month": r"months?", "year": r"years?", "byte": r"bytes?",
          "kb": r"kb|kib|kilobytes?", "mb": r"mb|mib|megabytes?", "gb": r"gb|gib|gigabytes?", "tb": r"tb|tib|terabytes?"}
_UNIT_OF = [(name, re.compile(rf"(?:{spelling})", re.I)) for name, spelling in _UNITS.items()]
_CLAIM = re.compile(
    r"(?P<email>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"                                    # e-mail
    r"|(?P<url>https?://[^\s<>\"'\[\]()]+)"                                          # URL
    r"|(?P<host>\b[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*){2,})"                        # host or dotted name
    r"|(?P<number>[+$€£¥]?\d+(?:[.,:/-]\d+)*)"                                      # number, phone, date, time
    rf"(?:\s?(?P<unit>{'|'.join(f'(?:{v})' for v in _UNITS.values())})(?![\w-]))?(?![\w])"  # ... and its unit
    r"|(?P<code>\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])\w+(?:-\w+)*)",                     # code with a digit
    re.I)


def _unit(spelling: str) -> str:
    """The canonical name of a unit's spelling: ``'Days'`` -> ``'day'``."""
    return next(name for name, rx in _UNIT_OF if rx.fullmatch(spelling.strip()))


def claims(text: str) -> list[tuple[tuple[str, str | None], str]]:
    """The specifics of a text as whole tokens, each as ``((token, unit), as written)``; only numbers have a unit.

    Numbers keep their separators and units; e-mails, hosts, URLs and codes are compared case-folded,
    without trailing punctuation; whitespace and line breaks between a number and its unit do not count.

    >>> [key for key, _ in claims("Within 30\\n days, call +1 (888) 555-0199 or see https://parcelo.example/returns.")]
    [('30', 'day'), ('+1', None), ('888', None), ('555-0199', None), ('https://parcelo.example/returns', None)]
    """
    out = []
    for m in _CLAIM.finditer(" ".join(text.split())):
        written = m.group().rstrip(".,;:!?'\"")
        if m.group("number"):
            out.append(((m.group("number"), _unit(m.group("unit")) if m.group("unit") else None), written))
        else:
            out.append(((written.rstrip("/").casefold(), None), written))
    return out


def ungrounded(text: str, sources: list[Source], detector=None) -> list[str]:
    """Numbers (with their units), codes, e-mail addresses, hosts and URLs in the answer (citations aside)
    that no source holds as a whole token: ``3 days`` is not in ``30 days``, ``55-01`` not in ``555-0199``.

    A model can only repeat such specifics from the sources; one that appears nowhere in them was
    invented or came from somewhere the user may not see. Instruction-like sentences, which no prompt
    shows, do not count as sources (the rule's, or the ``detector``'s).

    >>> from raglab.book.chunking import Chunk
    >>> c = Chunk("a.md#x", "a.md", ("A",), 0, 1, "Returns within 30 days. Call 555-0199.", "", ("public",), "words")
    >>> ungrounded("You have 30 days [1]. Call 555-0199 [1].", [Source(1, c)])
    []
    >>> ungrounded("Within 3 days [1]. Call 55-01 [1].", [Source(1, c)])
    ['3 days', '55-01']
    """
    held = set()
    for s in sources:
        for (token, unit), _ in claims(visible_text(s.chunk.text, detector, s.before, s.after, s.script)):
            held |= {(token, unit), (token, None)}
            if "://" in token:   # a URL's host may be named on its own
                held.add((urlsplit(token).hostname or "", None))
    return [written for key, written in claims(CITATION.sub(" ", text)) if key not in held]
