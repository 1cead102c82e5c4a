"""Documents and the loaders that produce them.

Three sources give the same ``Document`` records:

- the bundled Python 3.11 docs (``data/python-docs-text-3.11.tar.xz``), extracted once
  into the working folder after its sha256 is checked;
- the official plain-text archive of another Python version, fetched by
  ``fetch_python_docs`` (``raglab corpus fetch --version 3.X``);
- any folder of ``.md`` / ``.txt`` files, with optional front matter::

      ---
      title: Returns and refunds
      access: [premium]
      ---

Bad input never passes silently: empty and binary files are skipped with a
``CorpusWarning`` naming the file, invalid UTF-8 is replaced and reported with its line,
malformed front matter is a ``CorpusError`` naming file and line (a document whose access
groups cannot be read must not fall back to public).
"""
from __future__ import annotations

import codecs
import contextvars
import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import config
from .io import atomic_dir

PUBLIC = "public"
BUNDLED_VERSION = "3.11"
BUNDLED_ARCHIVE = "python-docs-text-3.11.tar.xz"
BUNDLED_SHA256 = "f1bf8ec9022944900b56b018ebda35ff31fb3541ca7c210b1f7f785769ec0196"
OFFICIAL_URL = "https://docs.python.org/{version}/archives/python-{version}-docs-text.tar.bz2"
CORPORA = ("python-docs", "helpcenter")
MAX_FILE_BYTES = 64 * 1024 * 1024
_GROUP = re.compile(r"^[A-Za-z0-9_.\-]+$")
_READ_BLOCK = 1 << 20
_DECODE_ERRORS: contextvars.ContextVar[list] = contextvars.ContextVar("raglab_decode_errors")


def _record_decode_error(exc: UnicodeDecodeError) -> tuple[str, int]:
    """Codec error handler: replace like ``errors='replace'`` and note newlines before the bad bytes."""
    _DECODE_ERRORS.get().append(exc.object[: exc.start].count(b"\n"))
    return "\ufffd", exc.end


codecs.register_error("raglab-record", _record_decode_error)


class CorpusError(ValueError):
    """A corpus that cannot be loaded as asked; the message names the file or setting."""


class CorpusWarning(UserWarning):
    """A file skipped or repaired while loading; the message names the file."""


@dataclass(frozen=True)
class Document:
    """One page: ``id`` is its path relative to the corpus root (``library/stdtypes.txt``)."""

    id: str
    title: str
    text: str
    sha256: str
    access: tuple[str, ...] = (PUBLIC,)
    source: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def n_words(self) -> int:
        """Whitespace-separated words in the text."""
        return len(self.text.split())


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


# ---------------------------------------------------------------- reading files

def read_text_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> tuple[str, str] | None:
    """Stream a file once: returns ``(text, sha256 of its bytes)``, or None if skipped.

    Newlines are normalized to ``\\n``. Invalid UTF-8 is replaced by U+FFFD and reported
    with the line of its first occurrence; empty, binary and oversized files are skipped
    with a ``CorpusWarning``.
    """
    size = path.stat().st_size
    if size > max_bytes:
        warnings.warn(f"{path}: {size:,} bytes is over the {max_bytes:,}-byte limit, skipped", CorpusWarning)
        return None
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="raglab-record")
    pieces: list[str] = []
    bad_lines: list[int] = []
    newlines = 0
    token = _DECODE_ERRORS.set([])
    try:
        with open(path, "rb") as fh:
            first = True
            while block := fh.read(_READ_BLOCK):
                if first and b"\x00" in block[:8192]:
                    warnings.warn(f"{path}: binary file (NUL bytes), skipped", CorpusWarning)
                    return None
                first = False
                digest.update(block)
                pieces.append(decoder.decode(block))
                bad_lines += [newlines + n + 1 for n in _DECODE_ERRORS.get()]
                _DECODE_ERRORS.get().clear()
                newlines += block.count(b"\n")
            pieces.append(decoder.decode(b"", final=True))
            bad_lines += [newlines + n + 1 for n in _DECODE_ERRORS.get()]
    finally:
        _DECODE_ERRORS.reset(token)
    text = "".join(pieces).replace("\r\n", "\n").replace("\r", "\n")
    del pieces
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        warnings.warn(f"{path}: empty file, skipped", CorpusWarning)
        return None
    if bad_lines:
        warnings.warn(f"{path}:{bad_lines[0]}: invalid UTF-8, {len(bad_lines)} byte sequence(s) replaced by U+FFFD",
                      CorpusWarning)
    return text, digest.hexdigest()


def parse_front_matter(text: str, where: str = "<text>") -> tuple[dict, str]:
    """Split optional front matter from the body: returns ``(meta, body)``.

    >>> parse_front_matter("---\\ntitle: Hi\\naccess: [premium, staff]\\n---\\nBody")
    ({'title': 'Hi', 'access': ('premium', 'staff')}, 'Body')
    """
    if not text.startswith("---\n"):
        return {}, text
    lines = text.split("\n")
    try:
        close = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise CorpusError(f"{where}:1: front matter opened with '---' is never closed") from None
    meta: dict = {}
    key = None
    for lineno in range(2, close + 1):
        line = lines[lineno - 1]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.match(r"^\s+-\s*(.+)$", line)
        if item and key == "access":
            meta["access"] = meta.get("access", ()) + _parse_groups(item.group(1), where, lineno)
            continue
        m = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if not m:
            raise CorpusError(f"{where}:{lineno}: front matter line is not 'key: value': {line.strip()!r}")
        key, value = m.group(1).lower(), m.group(2).strip()
        if key == "access":
            meta["access"] = _parse_groups(value, where, lineno) if value else ()
        else:
            meta[key] = value.strip("'\"")
    if "access" in meta and not meta["access"]:
        raise CorpusError(f"{where}: front matter 'access' lists no group")
    if "title" in meta and not meta["title"]:
        raise CorpusError(f"{where}: front matter 'title' is empty")
    return meta, "\n".join(lines[close + 1:])


def _parse_groups(value: str, where: str, lineno: int) -> tuple[str, ...]:
    """``[a, b]`` or ``a, b`` or ``a`` -> ``('a', 'b')``, each a plain group name."""
    inner = value.strip()
    if inner.startswith("[") != inner.endswith("]"):
        raise CorpusError(f"{where}:{lineno}: access list has unbalanced brackets: {value!r}")
    inner = inner.strip("[]")
    groups = tuple(g.strip().strip("'\"") for g in inner.split(",") if g.strip())
    for g in groups:
        if not _GROUP.match(g):
            raise CorpusError(f"{where}:{lineno}: access group {g!r} is not a plain name (letters, digits, _ . -)")
    return groups


# ---------------------------------------------------------------- folders

def iter_files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Files under ``root`` with one of ``suffixes``, sorted, following symlinks once.

    A directory reached twice through symlinks (a loop) is reported and not re-entered.
    """
    root = Path(root)
    seen: set[str] = set()
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            warnings.warn(f"{dirpath}: symlink loop (already visited as {real}), not followed", CorpusWarning)
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            path = Path(dirpath) / name
            if name.startswith(".") or path.suffix.lower() not in suffixes:
                continue
            if not path.exists():
                warnings.warn(f"{path}: broken symlink, skipped", CorpusWarning)
                continue
            found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def load_file(path: Path, doc_id: str, source: str | None = None) -> Document | None:
    """Read one file into a ``Document`` (front matter parsed); None if it was skipped."""
    read = read_text_file(path)
    if read is None:
        return None
    text, digest = read
    meta, body = parse_front_matter(text, str(path))
    if not body.strip():
        warnings.warn(f"{path}: no text after the front matter, skipped", CorpusWarning)
        return None
    access = tuple(meta.pop("access", (PUBLIC,)))
    title = meta.pop("title", None) or guess_title(body, doc_id)
    return Document(doc_id, title, body, digest, access, source or str(path), meta)


def load_folder(root: str | Path, suffixes: tuple[str, ...] = (".md", ".txt"),
                only: list[str] | None = None, source_fmt: str | None = None) -> list[Document]:
    """Every ``.md``/``.txt`` file under ``root`` (recursively) as a ``Document``, sorted by id.

    ``only`` restricts to these ids (a profile's page list); a listed id that is missing
    is an error. ``source_fmt`` (e.g. a URL pattern with ``{stem}``) sets ``source``.
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
    for doc_id in ids:
        source = source_fmt.format(stem=doc_id.rsplit(".", 1)[0]) if source_fmt else None
        doc = load_file(files[doc_id], doc_id, source)
        if doc is not None:
            docs.append(doc)
    if not docs:
        raise CorpusError(f"{root}: no readable {'/'.join(suffixes)} files")
    return docs


# ---------------------------------------------------------------- archives

def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_READ_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def extract_archive(archive: Path, dest: Path, sha256: str | None = None) -> Path:
    """Check ``archive``'s sha256, extract it next to ``dest`` under a temporary name, rename.

    A single top-level folder inside the archive is stripped, so ``dest`` holds the pages.
    Nothing is left half-written: on any error the temporary folder is removed.
    """
    actual = sha256_file(archive)
    if sha256 and actual != sha256.lower():
        raise CorpusError(f"{archive}: sha256 is {actual}, expected {sha256}; the file is corrupt or not the one expected")
    with atomic_dir(dest) as tmp:
        try:
            with tarfile.open(archive, "r:*") as tar:
                tar.extractall(tmp / "x", filter="data")
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise CorpusError(f"{archive}: cannot extract ({exc})") from exc
        entries = list((tmp / "x").iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp / "x"
        (top / ".raglab-source.json").write_text(json.dumps({"archive": archive.name, "sha256": actual}))
        for item in top.iterdir():  # the pages become the folder's top level
            item.rename(tmp / item.name)
        shutil.rmtree(tmp / "x")
    return dest


def python_docs_dir(version: str = BUNDLED_VERSION) -> Path:
    """The extracted Python docs of ``version``; the bundled 3.11 is extracted on first use."""
    dest = config.work_dir() / "corpora" / f"python-docs-{version}"
    if (dest / ".raglab-source.json").exists():
        return dest
    if version != BUNDLED_VERSION:
        raise CorpusError(f"Python {version} docs are not here yet: run `raglab corpus fetch --version {version}`")
    archive = config.data_dir() / BUNDLED_ARCHIVE
    if not archive.exists():
        raise CorpusError(f"{archive}: the bundled Python docs archive is missing")
    return extract_archive(archive, dest, BUNDLED_SHA256)


def fetch_python_docs(version: str, url: str | None = None, sha256: str | None = None,
                      timeout: float = 60.0) -> Path:
    """Download the official plain-text docs archive of ``version`` and extract it.

    ``sha256``, when given, must match. Without it the archive's hash is recorded at the
    first fetch, and a later fetch of the same version must match the recorded one.
    Returns the extracted folder (``<workdir>/corpora/python-docs-<version>``).
    """
    if not re.fullmatch(r"3\.\d{1,2}", version):
        raise CorpusError(f"version {version!r}: expected a Python version like 3.12")
    url = url or os.environ.get("RAGLAB_DOCS_URL") or OFFICIAL_URL.format(version=version)
    dest = config.work_dir() / "corpora" / f"python-docs-{version}"
    recorded = dest / ".raglab-source.json"
    if sha256 is None and recorded.exists():
        sha256 = json.loads(recorded.read_text()).get("sha256")
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(prefix=f".python-docs-{version}.", suffix=".part", dir=dest.parent)
    try:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(resp, out, _READ_BLOCK)
        except OSError as exc:
            raise CorpusError(f"{url}: download failed ({exc})") from exc
        extract_archive(Path(part), dest, sha256)
        meta = json.loads(recorded.read_text())
        recorded.write_text(json.dumps({**meta, "url": url, "version": version}))
    finally:
        Path(part).unlink(missing_ok=True)
    return dest


# ---------------------------------------------------------------- corpora by name

def load_python_docs(profile: str | None = None, version: str = BUNDLED_VERSION) -> list[Document]:
    """The Python docs: the small profile's pages, or every page with ``profile='full'``."""
    only = config.small_profile_pages() if config.profile(profile) == "small" and version == BUNDLED_VERSION else None
    return load_folder(python_docs_dir(version), (".txt",), only,
                       source_fmt=f"https://docs.python.org/{version}/{{stem}}.html")


def load_helpcenter() -> list[Document]:
    """The bundled help-center corpus (Markdown, some pages restricted to ``premium``)."""
    return load_folder(config.data_dir() / "helpcenter", (".md",))


def load_corpus(name: str | Path = "python-docs", profile: str | None = None) -> list[Document]:
    """A corpus by name (``python-docs``, ``python-docs-3.X``, ``helpcenter``) or folder path."""
    name = str(name)
    if name == "python-docs":
        return load_python_docs(profile)
    if m := re.fullmatch(r"python-docs-(3\.\d+)", name):
        return load_python_docs(profile, m.group(1))
    if name == "helpcenter":
        return load_helpcenter()
    if Path(name).is_dir():
        return load_folder(name)
    raise CorpusError(f"unknown corpus {name!r}: use one of {', '.join(CORPORA)}, python-docs-3.X, or a folder path")


def corpus_stats(docs: list[Document]) -> dict:
    """Counts for ``raglab corpus info``: documents, words, characters, access groups."""
    groups: dict[str, int] = {}
    for d in docs:
        for g in d.access:
            groups[g] = groups.get(g, 0) + 1
    return {
        "documents": len(docs),
        "words": sum(d.n_words for d in docs),
        "characters": sum(len(d.text) for d in docs),
        "access_groups": dict(sorted(groups.items())),
        "sha256": hashlib.sha256("".join(d.id + d.sha256 for d in docs).encode()).hexdigest(),
    }
