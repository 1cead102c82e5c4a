"""Documents: the pages of a corpus, each with its title and the groups allowed to read it.

Any folder of ``.md`` / ``.txt`` files is a corpus; a page may open with front matter::

      ---
      title: Returns and refunds
      access: [premium]
      ---

A page without ``access`` takes its folder's ``raglab.toml``, else is public; front matter that says anything
but ``title`` and ``access`` is an error naming file and line (access fails closed:
``raglab.base.front_matter``). Reading files safely and folder settings are in ``raglab.base``;
a corpus by name (the Python docs archive, the help center) is loaded by ``raglab.infra.corpus``. Taught in
notebook 01.
"""
from __future__ import annotations

import hashlib
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from raglab.base.corpus_files import CorpusError, CorpusWarning, iter_files, read_text_file, remove_hidden
from raglab.base.folder_access import FolderSettings, folder_settings_of
from raglab.base.front_matter import parse_front_matter

PUBLIC = "public"


@dataclass(frozen=True)
class Document:
    """One page: ``id`` is its path relative to the corpus root (``library/stdtypes.txt``).

    ``sha256`` is the hash of the file's bytes; ``access_from`` says where ``access`` came from
    (``front matter``, a settings file such as ``raglab.toml``, or ``default``: public);
    ``folder`` is the settings file that governs the page's folder, if any.
    """

    id: str
    title: str
    text: str
    sha256: str
    access: tuple[str, ...] = (PUBLIC,)
    source: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)
    access_from: str = "default"
    folder: FolderSettings | None = None

    @property
    def n_words(self) -> int:
        """Whitespace-separated words in the text."""
        return len(self.text.split())

    @property
    def fingerprint(self) -> str:
        """The hash an index records for this page: its bytes, its access and its folder's default access.

        A change of access alone (front matter rules, a ``raglab.toml``) changes it, so the page is re-indexed.
        """
        default = list(self.folder.default_access) if self.folder else None
        return hashlib.sha256(json.dumps([self.sha256, list(self.access), default]).encode()).hexdigest()


def make_document(doc_id: str, text: str, title: str | None = None,
                  access: tuple[str, ...] = (PUBLIC,), source: str = "") -> Document:
    """A ``Document`` from text in memory (hash of its UTF-8 bytes, title from its headings).

    >>> make_document("a.md", "# Hello\\n\\nWorld.").title
    'Hello'
    """
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Document(doc_id, title or guess_title(text, doc_id), text, digest, tuple(access), source)


def guess_title(text: str, doc_id: str) -> str:
    """The first Markdown ``#`` heading or underlined heading, else the file name."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:60]):
        m = re.match(r"^#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            return m.group(1)
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not line[0].isspace() and re.fullmatch(r"([=\-*~^\"#+])\1{2,}", nxt):
            return line.strip()
    return Path(doc_id).stem.replace("-", " ").replace("_", " ")


# ---------------------------------------------------------------- folders

def load_file(path: Path, doc_id: str, source: str | None = None,
              folder: FolderSettings | None = None) -> Document | None:
    """Read one file into a ``Document`` (hidden text removed, front matter parsed); None if it was skipped.

    Its access is the front matter's ``access``, else the ``default_access`` of ``folder``, else public.
    """
    read = read_text_file(path)
    if read is None:
        return None
    text, digest = read
    meta, body = parse_front_matter(remove_hidden(text, path.suffix, str(path)), str(path))
    if not body.strip():
        warnings.warn(f"{path}: no text after the front matter, skipped", CorpusWarning)
        return None
    if "access" in meta:
        access, access_from = meta.pop("access"), "front matter"
    elif folder is not None:
        access, access_from = folder.default_access, folder.path
    else:
        access, access_from = (PUBLIC,), "default"
    title = meta.pop("title", None) or guess_title(body, doc_id)
    return Document(doc_id, title, body, digest, tuple(access), source or str(path), meta, access_from, folder)


def load_folder(root: str | Path, suffixes: tuple[str, ...] = (".md", ".txt"),
                only: list[str] | None = None, source_fmt: str | None = None) -> list[Document]:
    """Every ``.md``/``.txt`` file under ``root`` (recursively) as a ``Document``, sorted by id.

    ``only`` restricts to these ids (a profile's page list); a listed id that is missing
    is an error. ``source_fmt`` (e.g. a URL pattern with ``{stem}``) sets ``source``.
    A ``raglab.toml`` in a folder sets the access of its pages that have none.
    """
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"{root}: no such folder")
    files = {p.relative_to(root).as_posix(): p for p in iter_files(root, suffixes)}
    ids = sorted(files)
    if only is not None:
        missing = [d for d in only if d not in files]
        if missing:
            raise CorpusError(f"{root}: page(s) listed in the profile are missing: {', '.join(missing)}")
        ids = sorted(only)
    docs = []
    settings: dict[str, FolderSettings | None] = {}
    for doc_id in ids:
        source = source_fmt.format(stem=doc_id.rsplit(".", 1)[0]) if source_fmt else None
        doc = load_file(files[doc_id], doc_id, source, folder_settings_of(root, doc_id, settings))
        if doc is not None:
            docs.append(doc)
    if not docs:
        raise CorpusError(f"{root}: no readable {'/'.join(suffixes)} files")
    return docs
