"""A corpus folder's files, read safely: one file's text and hash, its hidden parts removed, the walk of a folder.

Bad input never passes silently: empty and binary files are skipped with a ``CorpusWarning``
naming the file, invalid UTF-8 is replaced and reported with its line, and a corpus that cannot
be loaded as asked (a front matter block that is not YAML among others) is a ``CorpusError``
naming the file and line or the setting. What a reader of a rendered page never sees (HTML
comments in Markdown, zero-width and other invisible format characters) is removed before
anything reads the page.
"""
from __future__ import annotations

import codecs
import contextvars
import hashlib
import os
import re
import warnings
from pathlib import Path

import yaml

from raglab.base.text import remove_invisible

MAX_FILE_BYTES = 64 * 1024 * 1024
MARKDOWN_SUFFIXES = (".md", ".markdown")
HTML_SUFFIXES = (".html", ".htm")
READ_BLOCK = 1 << 20      # bytes read at a time
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
            while block := fh.read(READ_BLOCK):
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


def compose_yaml(lines: list[str], where: str, first: int) -> yaml.Node | None:
    """A front matter block's YAML node tree (``lines``, the first being line ``first`` of the file);
    YAML that cannot be read is a ``CorpusError`` naming ``where`` and the line of the problem."""
    try:
        return yaml.compose("\n".join(lines), Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        useful = exc.context_mark is not None and "block" not in (exc.context or "")
        mark = exc.context_mark if useful else exc.problem_mark
        line = first + min(mark.line, max(len(lines) - 1, 0)) if mark else first
        why = exc.problem + (f" ({exc.context})" if exc.context else "")
        raise CorpusError(f"{where}:{line}: front matter is not 'key: value' YAML: {why}") from None
    except yaml.YAMLError as exc:
        raise CorpusError(f"{where}:{first}: front matter is not 'key: value' YAML: {exc}") from None


# ---------------------------------------------------------------- hidden text

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
