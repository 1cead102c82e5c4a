"""Generated blocks of a text file: the part between two marker lines that a program writes (the README's
tables of milestones, points and timings), read and replaced as a whole."""
from __future__ import annotations


def readme_block(text: str, begin: str, end: str) -> str:
    """The part of ``text`` from the ``begin`` marker to the ``end`` marker, both included."""
    if begin not in text or end not in text:
        raise ValueError(f"no block between {begin!r} and {end!r}")
    return text[text.index(begin):text.index(end) + len(end)]


def replace_block(text: str, begin: str, end: str, body: str) -> str:
    """``text`` with the block between the markers replaced by ``body`` (markers kept).

    >>> replace_block("a <!--b--> old <!--e--> z", "<!--b-->", "<!--e-->", "new")
    'a <!--b-->\\nnew\\n<!--e--> z'
    """
    old = readme_block(text, begin, end)
    return text.replace(old, f"{begin}\n{body}\n{end}")
