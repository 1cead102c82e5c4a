"""Release notes demoted in hybrid search, unless the question asks about versions: a step for the Python docs.

The Python docs' release notes ("What's New") restate API pages in passing, so "What does str.removeprefix
return?" can land on the note that added it rather than on the page that documents it. ``ReleaseNotes`` is a
retriever's ``rescore`` step (``raglab.book.retrieve.Retriever``): after fusion, the scores of chunks from pages
whose id starts with one of ``prefixes`` are multiplied by ``factor``. Each corpus's prefixes and factor, chosen
on a dev split, are in ``raglab.infra.corpora``; a folder of one's own has none.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

_VERSION_INTENT = re.compile(r"\b(?:version|versions|added|introduced|new in|changed|deprecated|removed|since|"
                             r"release|what's new|whatsnew|python \d\.\d+|\d\.\d+)\b", re.I)


def version_intent(question: str) -> bool:
    """Does the question ask about versions or changes (then release notes are fair game)?

    >>> version_intent("Which Python version added hashlib.file_digest()?"), version_intent("What does round() do?")
    (True, False)
    """
    return bool(_VERSION_INTENT.search(question))


def demote(fused: list[tuple[str, float]], doc_of, question: str, prefixes: tuple[str, ...],
           factor: float) -> list[tuple[str, float]]:
    """Fused ``(id, score)`` pairs with the scores of chunks from pages starting with ``prefixes``
    multiplied by ``factor`` and re-sorted (ties keep their order), unless the question asks about
    versions. "What does X do" should land on X's page, not on the release note that added X.

    >>> doc = {"a": "whatsnew/3.9.txt", "b": "library/stdtypes.txt"}.get
    >>> demote([("a", 0.03), ("b", 0.02)], doc, "What does str.removeprefix return?", ("whatsnew/",), 0.5)
    [('b', 0.02), ('a', 0.015)]
    >>> demote([("a", 0.03), ("b", 0.02)], doc, "Which version added str.removeprefix?", ("whatsnew/",), 0.5)
    [('a', 0.03), ('b', 0.02)]
    """
    if not prefixes or factor == 1.0 or version_intent(question):
        return fused
    scaled = [(i, s * factor if doc_of(i).startswith(prefixes) else s) for i, s in fused]
    return sorted(scaled, key=lambda pair: -pair[1])


@dataclass(frozen=True)
class ReleaseNotes:
    """The ``rescore`` step ``Retriever(..., rescore=ReleaseNotes(("whatsnew/",), 0.5))``."""

    prefixes: tuple[str, ...]
    factor: float

    def __call__(self, question: str, fused: list[tuple[str, float]], doc_of: Callable[[str], str]) -> list[tuple[str, float]]:
        return demote(fused, doc_of, question, self.prefixes, self.factor)
