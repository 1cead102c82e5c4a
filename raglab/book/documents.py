"""Documents: the pages of a corpus, each with its title and the groups allowed to read it.

Any folder of ``.md`` / ``.txt`` files is a corpus; a page may open with front matter::

      ---
      title: Returns and refunds
      access: [premium]
      ---

Access fails closed: front matter may only say ``title`` and ``access``, each once, and anything else is a
``CorpusError`` naming file and line (a page must not fall back to public). A page without ``access`` takes
its folder's ``raglab.toml``, else is public. Reading files safely and folder settings are in ``raglab.base``;
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

import yaml

from raglab.base.corpus_files import CorpusError, CorpusWarning, compose_yaml, iter_files, read_text_file, remove_hidden
from raglab.base.folder_access import GROUP_NAME, FolderSettings, folder_settings_of
from raglab.base.text import did_you_mean, remove_invisible

PUBLIC = "public"
FRONT_MATTER_KEYS = ("title", "access")


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


# ---------------------------------------------------------------- front matter

def _is_blank(line: str) -> bool:
    return not remove_invisible(line).strip()


def _is_fence(line: str) -> bool:
    return remove_invisible(line).strip() == "---"


def parse_front_matter(text: str, where: str = "<text>") -> tuple[dict, str]:
    """Split optional front matter from the body: returns ``(meta, body)``.

    The block opens when the first non-blank line is a ``---`` fence (a byte-order mark, trailing
    spaces and ``\\r\\n`` allowed) and closes at the next one; it is YAML with only ``title`` and
    ``access``, each given once. Anything else is a ``CorpusError`` naming ``where:line``.

    >>> parse_front_matter("---\\ntitle: Hi\\naccess: [premium, staff]\\n---\\nBody")
    ({'title': 'Hi', 'access': ('premium', 'staff')}, 'Body')
    >>> parse_front_matter("\\ufeff\\r\\n--- \\r\\naccess: premium\\r\\n---\\r\\nBody")
    ({'access': ('premium',)}, 'Body')
    """
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = next((i for i, line in enumerate(lines) if not _is_blank(line)), None)
    if start is None or not _is_fence(lines[start]):
        return {}, "\n".join(lines)
    close = next((i for i in range(start + 1, len(lines)) if _is_fence(lines[i])), None)
    if close is None:
        raise CorpusError(f"{where}:{start + 1}: front matter opened with '---' is never closed")
    meta = _parse_block(lines[start + 1:close], where, start + 2)
    body = lines[close + 1:]
    after = next((i for i, line in enumerate(body) if not _is_blank(line)), None)
    if after is not None and _is_fence(body[after]):
        raise CorpusError(f"{where}:{close + 2 + after}: a second '---' block follows the front matter: put every "
                          "key in the first block (and start the body with text, not '---')")
    return meta, "\n".join(body)


def _parse_block(lines: list[str], where: str, first: int) -> dict:
    """The front matter's YAML (``lines``, the first being line ``first`` of the file) as ``{title, access}``."""
    root = compose_yaml(lines, where, first)
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise CorpusError(f"{where}:{first + root.start_mark.line}: front matter is not 'key: value' lines")
    meta: dict = {}
    seen: dict[str, int] = {}
    for key_node, value_node in root.value:
        line = first + key_node.start_mark.line
        key = _front_matter_key(key_node, where, line)
        if key in seen:
            raise CorpusError(f"{where}:{line}: front matter key {key!r} is repeated (first on line {seen[key]}): "
                              "say it once")
        seen[key] = line
        meta[key] = _title(value_node, where, line) if key == "title" else _access(value_node, where, first)
    return meta


def _front_matter_key(node, where: str, line: int) -> str:
    """A known key, lower-cased; an unknown one is an error naming the likely intent."""
    if not isinstance(node, yaml.ScalarNode) or not node.value.strip():
        raise CorpusError(f"{where}:{line}: front matter key must be a plain word")
    key = node.value.strip().lower()
    if key not in FRONT_MATTER_KEYS:
        raise CorpusError(f"{where}:{line}: unknown front matter key {node.value!r}{did_you_mean(key, FRONT_MATTER_KEYS)}; "
                          f"the keys are {', '.join(FRONT_MATTER_KEYS)}")
    return key


def _title(node, where: str, line: int) -> str:
    """The title as one line of text."""
    if not isinstance(node, yaml.ScalarNode):
        raise CorpusError(f"{where}:{line}: front matter 'title' must be text")
    title = " ".join(node.value.split())
    if not title:
        raise CorpusError(f"{where}:{line}: front matter 'title' is empty")
    return title


def _access(node, where: str, first: int) -> tuple[str, ...]:
    """``[a, b]``, a block list, ``a, b`` or ``a`` -> ``('a', 'b')``; an empty or nested list is an error."""
    line = first + node.start_mark.line
    if isinstance(node, yaml.ScalarNode):
        groups = _parse_groups(node.value, where, line)
    elif isinstance(node, yaml.SequenceNode):
        groups = ()
        for item in node.value:
            if not isinstance(item, yaml.ScalarNode):
                raise CorpusError(f"{where}:{first + item.start_mark.line}: access lists group names, not lists or maps")
            groups += _parse_groups(item.value, where, first + item.start_mark.line)
    else:
        raise CorpusError(f"{where}:{line}: access must be a list of group names")
    if not groups:
        raise CorpusError(f"{where}:{line}: front matter 'access' lists no group")
    return groups


def _parse_groups(value: str, where: str, lineno: int) -> tuple[str, ...]:
    """``[a, b]`` or ``a, b`` or ``a`` -> ``('a', 'b')``, each a plain group name."""
    inner = value.strip()
    if inner.startswith("[") != inner.endswith("]"):
        raise CorpusError(f"{where}:{lineno}: access list has unbalanced brackets: {value!r}")
    inner = inner.strip("[]")
    groups = tuple(g.strip().strip("'\"") for g in inner.split(",") if g.strip())
    for g in groups:
        if not GROUP_NAME.match(g):
            raise CorpusError(f"{where}:{lineno}: access group {g!r} is not a plain name (letters, digits, _ . -)")
    return groups


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

