"""The Python docs as a folder of pages: the bundled archive, another version fetched, the profiles' pages.

- the bundled Python 3.11 docs (``data/python-docs-text-3.11.tar.xz``) are extracted once
  into the working folder after their sha256 is checked;
- the official plain-text archive of another Python version is fetched by
  ``fetch_python_docs`` (``raglab corpus fetch --version 3.X``), its sha256 checked or recorded;
- an archive is extracted under a temporary name and renamed, so nothing is left half-written;
- the small profile reads a fixed list of pages of the bundled version, the full profile every page.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import urllib.request
from pathlib import Path

from raglab.base import config
from raglab.base.files import atomic_dir
from raglab.base.corpus_files import READ_BLOCK, CorpusError

BUNDLED_VERSION = "3.11"
BUNDLED_ARCHIVE = "python-docs-text-3.11.tar.xz"
BUNDLED_SHA256 = "f1bf8ec9022944900b56b018ebda35ff31fb3541ca7c210b1f7f785769ec0196"
OFFICIAL_URL = "https://docs.python.org/{version}/archives/python-{version}-docs-text.tar.bz2"


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(READ_BLOCK):
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
                _extract_data(tar, tmp / "x")
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise CorpusError(f"{archive}: cannot extract ({exc})") from exc
        entries = list((tmp / "x").iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp / "x"
        (top / ".raglab-source.json").write_text(json.dumps({"archive": archive.name, "sha256": actual}))
        for item in top.iterdir():  # the pages become the folder's top level
            item.rename(tmp / item.name)
        shutil.rmtree(tmp / "x")
    return dest


def _extract_data(tar: tarfile.TarFile, where: Path) -> None:
    """Extract with tarfile's ``"data"`` filter (no absolute paths, nothing outside ``where``, no devices). Python
    3.11.0 to 3.11.3 (Debian 12's Python is 3.11.2) lack the filter: there only plain files and folders that stay
    inside ``where`` are extracted, and any other member is refused by name."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(where, filter="data")
        return
    root = where.resolve()
    for member in tar.getmembers():
        if not (member.isfile() or member.isdir()) or not (root / member.name).resolve().is_relative_to(root):
            raise tarfile.TarError(f"{member.name}: not a plain file or folder inside the archive")
    tar.extractall(where)


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
                shutil.copyfileobj(resp, out, READ_BLOCK)
        except OSError as exc:
            raise CorpusError(f"{url}: download failed ({exc})") from exc
        extract_archive(Path(part), dest, sha256)
        meta = json.loads(recorded.read_text())
        recorded.write_text(json.dumps({**meta, "url": url, "version": version}))
    finally:
        Path(part).unlink(missing_ok=True)
    return dest


def profile_pages(profile: str | None = None, version: str = BUNDLED_VERSION) -> list[str] | None:
    """The pages a profile reads: the small profile's list for the bundled version, else None (every page)."""
    return config.small_profile_pages() if config.profile(profile) == "small" and version == BUNDLED_VERSION else None
