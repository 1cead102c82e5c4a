"""A corpus by name: the bundled Python docs (a profile's pages, or another version fetched), the help center,
or a folder path. The book's ``raglab.book.documents`` reads the pages; this module knows where they are.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from raglab.base import config
from raglab.base.corpus_files import CorpusError
from raglab.book.documents import Document, load_folder
from raglab.infra.corpora import REGISTRY
from raglab.infra.python_docs import BUNDLED_VERSION, profile_pages, python_docs_dir


def load_python_docs(profile: str | None = None, version: str = BUNDLED_VERSION) -> list[Document]:
    """The Python docs: the small profile's pages, or every page with ``profile='full'``."""
    only = profile_pages(profile, version)
    return load_folder(python_docs_dir(version), (".txt",), only,
                       source_fmt=f"https://docs.python.org/{version}/{{stem}}.html")


def load_corpus(name: str | Path = "python-docs", profile: str | None = None) -> list[Document]:
    """A corpus by name (``python-docs``, ``python-docs-3.X``, ``helpcenter``) or folder path."""
    name = str(name)
    if name == "python-docs":
        return load_python_docs(profile)
    if m := re.fullmatch(r"python-docs-(3\.\d+)", name):
        return load_python_docs(profile, m.group(1))
    if name == "helpcenter":     # the bundled help center: Markdown, some pages restricted to premium
        return load_folder(config.data_dir() / "helpcenter", (".md",))
    if Path(name).is_dir():
        return load_folder(name)
    raise CorpusError(f"unknown corpus {name!r}: use one of {', '.join(REGISTRY)}, python-docs-3.X, or a folder path")


def attribution(corpus: str) -> str:
    """Whose pages a corpus holds, in the words its licence asks for (the Python docs' copyright notice)."""
    if str(corpus).startswith("python-docs"):
        return (python_docs_dir() / "copyright.txt").read_text(encoding="utf-8").strip()
    if str(corpus) == "helpcenter":
        return "Parcelo help center: fictional, written for this course (data/HELPCENTER.md)"
    return f"your own pages: {corpus}"


def corpus_stats(docs: list[Document]) -> dict:
    """Counts for ``raglab corpus info``: documents, words, characters, access groups, and a hash of
    every page's id, bytes and access (so that an index records the access it was built with)."""
    groups: dict[str, int] = {}
    for d in docs:
        for g in d.access:
            groups[g] = groups.get(g, 0) + 1
    return {
        "documents": len(docs),
        "words": sum(d.n_words for d in docs),
        "characters": sum(len(d.text) for d in docs),
        "access_groups": dict(sorted(groups.items())),
        "sha256": hashlib.sha256("".join(d.id + d.fingerprint for d in docs).encode()).hexdigest(),
    }

