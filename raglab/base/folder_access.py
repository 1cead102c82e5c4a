"""A folder's settings file, ``raglab.toml``: the access groups of the pages below it that have none of their own.

``default_access = ["staff"]`` is the only setting; anything else in the file, or a misnamed file
(``.raglab.toml``, ``raglab.json``), stops the load: a page must never fall back to public because
its folder's settings were not read. The nearest settings file up to the corpus root governs a page.
``raglab corpus info`` and an index's manifest report each page's access and where it came from.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from raglab.base.text import did_you_mean
from raglab.base.corpus_files import CorpusError

GROUP_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")      # an access group: a plain name (front matter and settings)
SETTINGS_FILE = "raglab.toml"
SETTINGS_KEYS = ("default_access",)


@dataclass(frozen=True)
class FolderSettings:
    """A folder's ``raglab.toml``: its path from the corpus root and the groups of its pages without ``access``."""

    path: str
    default_access: tuple[str, ...]


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
        if not GROUP_NAME.match(g):
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


def page_access(docs: list) -> list[dict]:
    """Each page's parsed access and where it came from (``front matter``, a ``raglab.toml``, ``default``)."""
    return [{"id": d.id, "title": d.title, "access": list(d.access), "access_from": d.access_from} for d in docs]


def folder_settings(docs: list) -> dict[str, dict]:
    """The folder settings files that govern some page: ``{path: {"default_access": [...]}}``."""
    found = {d.folder.path: d.folder for d in docs if d.folder is not None}
    return {path: {"default_access": list(f.default_access)} for path, f in sorted(found.items())}
