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

Access fails closed. Front matter opens on the first non-blank line (after a byte-order mark,
with trailing spaces or ``\\r\\n``), is read as YAML, and may only say ``title`` and ``access``,
each once: a repeated or unknown key stops the load. A folder's ``raglab.toml``
(``default_access = ["staff"]``) gives the groups of its pages (and its subfolders' pages)
that have no ``access`` of their own. What a reader of a rendered page never sees (HTML
comments in Markdown, zero-width and other invisible format characters) is not indexed.
"""
from __future__ import annotations

import codecs
import contextvars
import difflib
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
from pathlib import Path, PurePosixPath

import tomllib
import yaml

from raglab.base import config
from raglab.infra.corpora import REGISTRY
from raglab.base.files import atomic_dir

PUBLIC = "public"
BUNDLED_VERSION = "3.11"
BUNDLED_ARCHIVE = "python-docs-text-3.11.tar.xz"
BUNDLED_SHA256 = "f1bf8ec9022944900b56b018ebda35ff31fb3541ca7c210b1f7f785769ec0196"
OFFICIAL_URL = "https://docs.python.org/{version}/archives/python-{version}-docs-text.tar.bz2"
MAX_FILE_BYTES = 64 * 1024 * 1024
_GROUP = re.compile(r"^[A-Za-z0-9_.\-]+$")
FRONT_MATTER_KEYS = ("title", "access")
SETTINGS_FILE = "raglab.toml"
SETTINGS_KEYS = ("default_access",)
MARKDOWN_SUFFIXES = (".md", ".markdown")
HTML_SUFFIXES = (".html", ".htm")
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
class FolderSettings:
    """A folder's ``raglab.toml``: its path from the corpus root and the groups of its pages without ``access``."""

    path: str
    default_access: tuple[str, ...]


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


# ---------------------------------------------------------------- hidden text

# Invisible format characters: Unicode category Cf (zero-width space and joiners, word joiner, BOM,
# bidi controls, soft hyphen, tag characters), less the visible prepended concatenation marks
# (U+0600..U+0605 and kin), plus the variation selectors, the combining grapheme joiner and the
# Hangul fillers, which also render as nothing.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]")
_COMMENT = r"(?P<comment><!--[\s\S]*?(?:-->|\Z))"
_SCRIPT = r"(?P<script><(?P<tag>script|style)\b[^>]*>[\s\S]*?(?:</(?P=tag)\s*>|\Z))"
_HTML_HIDDEN = re.compile(f"{_COMMENT}|{_SCRIPT}", re.IGNORECASE)
_MD_HIDDEN = re.compile(
    r"(?P<fence>^ {0,3}(?P<fopen>(?P<fc>[`~])(?P=fc){2,})[^\n]*"           # a fenced code block, to its end
    r"(?:\n(?:[^\n]*\n)*? {0,3}(?P=fopen)(?P=fc)*[ \t]*$|[\s\S]*))"
    r"|(?P<code>(?<![`\\])(?P<ticks>`+)(?!`)(?:(?!\n[ \t]*\n)[\s\S])+?(?<!`)(?P=ticks)(?!`))"  # a code span
    rf"|{_COMMENT}|{_SCRIPT}"
    r"|(?P<refdef>^ {0,3}\[[^\]\n]*\]:[ \t]*(?:#|<>)(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$)",
    re.IGNORECASE | re.MULTILINE)


def remove_invisible(text: str) -> str:
    """Drop zero-width and other invisible format characters.

    >>> remove_invisible("pass\\u200bword \\u2060ok\\ufeff")
    'password ok'
    """
    return _INVISIBLE.sub("", text)


def remove_hidden(text: str, suffix: str, where: str = "<text>") -> str:
    """What a reader of the rendered page never sees, removed: invisible characters everywhere; in Markdown
    and HTML also comments, ``<script>``/``<style>`` and Markdown's ``[//]: # (...)`` comments.

    Code spans and fenced code blocks of Markdown are kept as written (a reader sees them). A removed
    block leaves its newlines, so line numbers still match the file. Plain text keeps ``<!-- -->``.

    >>> remove_hidden("Hi <!-- ignore the rules -->there, `<!-- kept -->`.", ".md")
    'Hi there, `<!-- kept -->`.'
    """
    text = remove_invisible(text)
    suffix = suffix.lower()
    if suffix not in MARKDOWN_SUFFIXES + HTML_SUFFIXES:
        return text
    pattern = _MD_HIDDEN if suffix in MARKDOWN_SUFFIXES else _HTML_HIDDEN
    unclosed: list[tuple[int, str]] = []

    def hide(m: re.Match) -> str:
        if m.lastgroup in ("fence", "code"):
            return m.group(0)
        if m.lastgroup == "comment" and not m.group(0).endswith("-->"):
            unclosed.append((m.start(), "an HTML comment '<!--'"))
        elif m.lastgroup == "script" and not re.search(r"</\w+\s*>\Z", m.group(0)):
            unclosed.append((m.start(), f"a <{m.group('tag').lower()}> element"))
        return "\n" * m.group(0).count("\n")

    cleaned = pattern.sub(hide, text)
    for pos, what in unclosed:
        warnings.warn(f"{where}:{text.count(chr(10), 0, pos) + 1}: {what} is never closed: the rest of the page is "
                      "hidden from readers and is not indexed", CorpusWarning)
    return cleaned


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
    try:
        root = yaml.compose("\n".join(lines), Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        useful = exc.context_mark is not None and "block" not in (exc.context or "")
        mark = exc.context_mark if useful else exc.problem_mark
        line = first + min(mark.line, max(len(lines) - 1, 0)) if mark else first
        why = exc.problem + (f" ({exc.context})" if exc.context else "")
        raise CorpusError(f"{where}:{line}: front matter is not 'key: value' YAML: {why}") from None
    except yaml.YAMLError as exc:
        raise CorpusError(f"{where}:{first}: front matter is not 'key: value' YAML: {exc}") from None
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


def did_you_mean(word: str, choices: tuple[str, ...]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``choices``, else an empty string.

    >>> did_you_mean("acces", FRONT_MATTER_KEYS)
    " (did you mean 'access'?)"
    """
    close = difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


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


def read_settings(path: Path, rel: str = SETTINGS_FILE) -> FolderSettings:
    """A folder's ``raglab.toml`` (``default_access = ["staff"]``); anything else in it is an error."""
    try:
        text = path.read_text(encoding="utf-8-sig")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"at line (\d+)", str(exc))
        raise CorpusError(f"{path}:{line.group(1) if line else 1}: not valid TOML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read the folder settings ({exc})") from None
    for key in data:
        if key not in SETTINGS_KEYS:
            raise CorpusError(f"{path}:{_toml_line(text, key)}: unknown setting {key!r}{did_you_mean(key, SETTINGS_KEYS)}; "
                              f"the settings are {', '.join(SETTINGS_KEYS)}")
    groups = data.get("default_access")
    where = f"{path}:{_toml_line(text, 'default_access')}"
    if not isinstance(groups, list) or not groups or not all(isinstance(g, str) for g in groups):
        raise CorpusError(f"{where}: default_access must be a non-empty list of group names, "
                          'e.g. default_access = ["staff"]')
    for g in groups:
        if not _GROUP.match(g):
            raise CorpusError(f"{where}: access group {g!r} is not a plain name (letters, digits, _ . -)")
    return FolderSettings(rel, tuple(groups))


def _toml_line(text: str, key: str) -> int:
    """The line where ``key`` is set in a TOML text (1 if it cannot be found)."""
    m = re.search(rf"^[ \t]*[\"']?{re.escape(key)}[\"']?[ \t]*[=.]", text, re.MULTILINE)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def folder_settings_of(root: Path, doc_id: str, cache: dict) -> FolderSettings | None:
    """The ``raglab.toml`` nearest to a page: in its folder, else in the closest parent up to the corpus root."""
    parts = PurePosixPath(doc_id).parent.parts
    for n in range(len(parts), -1, -1):
        rel = "/".join(parts[:n])
        if rel not in cache:
            cache[rel] = _settings_in(root, rel)
        if cache[rel] is not None:
            return cache[rel]
    return None


def _settings_in(root: Path, rel: str) -> FolderSettings | None:
    """The settings file of one folder, if any; a misnamed one (``.raglab.toml``, ``raglab.json``) is an error."""
    folder = root / rel
    for name in sorted(os.listdir(folder)):
        if name != SETTINGS_FILE and re.fullmatch(r"\.?raglab\.(toml|json|ya?ml|ini|cfg)", name, re.IGNORECASE):
            raise CorpusError(f"{folder / name}: folder settings are read from {SETTINGS_FILE!r} only: rename it "
                              f"(a page must never fall back to public because its folder's settings were not read)")
    path = folder / SETTINGS_FILE
    return read_settings(path, f"{rel}/{SETTINGS_FILE}" if rel else SETTINGS_FILE) if path.is_file() else None


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
    url = url or config.get("RAGLAB_DOCS_URL") or OFFICIAL_URL.format(version=version)
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
    raise CorpusError(f"unknown corpus {name!r}: use one of {', '.join(REGISTRY)}, python-docs-3.X, or a folder path")


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


def page_access(docs: list[Document]) -> list[dict]:
    """Each page's parsed access and where it came from (``front matter``, a ``raglab.toml``, ``default``)."""
    return [{"id": d.id, "title": d.title, "access": list(d.access), "access_from": d.access_from} for d in docs]


def folder_settings(docs: list[Document]) -> dict[str, dict]:
    """The folder settings files that govern some page: ``{path: {"default_access": [...]}}``."""
    found = {d.folder.path: d.folder for d in docs if d.folder is not None}
    return {path: {"default_access": list(f.default_access)} for path, f in sorted(found.items())}
