"""A built index: the chunks, their dense vectors in FAISS, BM25 over the same chunks, and a manifest.

The manifest records what the index was built from (corpus, its hash, profile, chunking
settings, embedding model and precision, index kind). Loading checks it against what is asked
for: an index built with other settings is refused with the command that rebuilds it, never mixed.
Everything is written into a temporary folder and renamed into place.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Callable
from pathlib import Path

import numpy as np

from raglab.base import config
from raglab.book.bm25 import BM25
from raglab.book.chunking import CHUNKER_VERSION, Chunk, ChunkSettings, chunk_corpus, parent_chunks
from raglab.book.memory_index import access_mask, rule_mask
from raglab.infra.corpus import corpus_stats
from raglab.infra.corpus import load_corpus
from raglab.base.folder_access import folder_settings
from raglab.infra.embedding_batches import PADDING_RULE
from raglab.infra.embedder import Embedder
from raglab.infra.precision import resolve_precision
from raglab.base.files import (
    LOCK_WAIT,
    Busy,
    atomic_dir,
    atomic_open,
    crash_point,
    read_jsonl,
    recover_dir,
    write_jsonl,
)
from raglab.infra.packaged_models import MINILM
from raglab.infra.stores.bm25_file import load_bm25, save_bm25
from raglab.infra.stores.faiss_store import FaissStore
from raglab.infra.tokenizer import load_tokenizer

MANIFEST_VERSION = 3   # 2: each page's access is in the corpus hash; 3: vectors padded by the text alone (PADDING_RULE)


class IndexNotReady(RuntimeError):
    """A missing or mismatched index; the message says which command builds the right one."""


@dataclass
class Index:
    """Chunks plus their dense and keyword indexes, row ``i`` of each being ``chunks[i]``."""

    path: Path
    manifest: dict
    chunks: list[Chunk]
    dense: FaissStore
    bm25: BM25
    # a learner's access rule (each row's groups, the user's groups -> the readable rows) in place of
    # ``access_mask``; set with ``with_access_rule``
    access_rule: Callable | None = None
    # the parent strategy's parents (a hit on a small chunk hands on its parent): not searched, in order
    parents: list[Chunk] = field(default_factory=list)

    def __post_init__(self):
        self.row_of = {c.id: i for i, c in enumerate(self.chunks)}
        self.parent_row = {c.id: i for i, c in enumerate(self.parents)}
        self._masks: dict[frozenset, np.ndarray] = {}

    def locate(self, chunk_id: str) -> tuple[list[Chunk], int]:
        """The list that holds ``chunk_id`` (the searched chunks, or the parents) and its row there."""
        if chunk_id in self.row_of:
            return self.chunks, self.row_of[chunk_id]
        if chunk_id in self.parent_row:
            return self.parents, self.parent_row[chunk_id]
        raise KeyError(f"no chunk {chunk_id!r} in the index at {self.path}")

    def chunk(self, chunk_id: str) -> Chunk:
        """The chunk (or parent) with this id."""
        chunks, row = self.locate(chunk_id)
        return chunks[row]

    def readable(self, chunk_id: str, user: tuple[str, ...] | None) -> bool:
        """Whether the user may read this chunk or parent (a parent by its own access groups, under the
        same rule as the rows). An unknown id is ``KeyError``."""
        chunks, row = self.locate(chunk_id)
        if chunks is self.chunks:
            return bool(self.allowed(user)[row])
        rule = self.access_rule
        return bool((rule_mask(chunks[row:row + 1], user, rule) if rule else access_mask(chunks[row:row + 1], user))[0])

    def passages(self) -> list[Chunk]:
        """What a hit hands the generator: the parents when the strategy has them, else the chunks."""
        return self.parents or self.chunks

    @property
    def version(self) -> str:
        """A short id of what this index was built from (corpus hash and settings)."""
        return self.manifest["version_id"]

    def dense_search(self, query_vec: np.ndarray, k: int, user: tuple[str, ...] | None) -> list[tuple[int, float]]:
        """``(row, cosine)`` pairs among the rows the user may see; the filter is a FAISS ID selector."""
        return self.dense.search(query_vec, k, self.allowed(user))

    def bm25_search(self, query: str, k: int, user: tuple[str, ...] | None) -> list[tuple[int, float]]:
        """``(row, score)`` pairs; BM25 only scores the rows the user may see."""
        return self.bm25.search(query, k, self.allowed(user))

    def allowed(self, user: tuple[str, ...] | None) -> np.ndarray:
        """Rows the user's groups may see (``public`` is always included)."""
        if self.access_rule is not None:
            return rule_mask(self.chunks, user, self.access_rule, self._masks)
        return access_mask(self.chunks, user, self._masks)

    def with_access_rule(self, rule: Callable) -> "Index":
        """The same index, its rows filtered by ``rule`` (the seam where a learner's access rule is the
        filter FAISS's ID selector and BM25 receive)."""
        return replace(self, access_rule=rule)


def index_name(corpus: str, profile: str, settings: ChunkSettings, kind: str = "flat", model_id: str | None = None) -> str:
    """A folder name such as ``python-docs-small-words-150-30``; another model than the packaged MiniLM
    adds its id (``...-trained-bi-<hash>``), so each model's index is kept beside the others."""
    if Path(corpus).is_dir():  # a folder: its name plus a hash of its path, so two "docs" folders differ
        digest = hashlib.sha256(str(Path(corpus).resolve()).encode()).hexdigest()[:8]
        corpus = f"{Path(corpus).resolve().name}-{digest}"
    base = re.sub(r"[^A-Za-z0-9.]+", "-", corpus)
    return f"{base}-{profile}-{settings.name()}" + (
        "" if kind == "flat" else f"-{kind}") + (
        "" if model_id in (None, MINILM) else "-" + re.sub(r"[^A-Za-z0-9.]+", "-", model_id))


def expected_manifest(corpus: str, profile: str, settings: ChunkSettings, model_id: str, kind: str,
                      docs=None, precision: str = "float32") -> dict:
    """What an index for these settings must record (the embedding precision and padding rule included)."""
    docs = docs if docs is not None else load_corpus(corpus, profile)
    chunking = settings.record()
    corpus_hash = corpus_stats(docs)["sha256"]
    parts = [MANIFEST_VERSION, corpus, profile, corpus_hash, chunking, CHUNKER_VERSION, model_id, kind, precision, PADDING_RULE]
    key = json.dumps(parts, sort_keys=True)
    return {"format": MANIFEST_VERSION, "corpus": corpus, "profile": profile, "corpus_sha256": corpus_hash,
            "chunking": chunking, "chunker": CHUNKER_VERSION, "model": model_id, "precision": precision, "padding": PADDING_RULE, "kind": kind,
            "folder_settings": folder_settings(docs), "version_id": hashlib.sha256(key.encode()).hexdigest()[:12]}


def manifest_precision(manifest: dict) -> str:
    """The precision an index's vectors were embedded in (float32 for indexes built before it was recorded)."""
    return manifest.get("precision", "float32")


def build_index(corpus: str = "python-docs", profile: str | None = None,
                settings: ChunkSettings = ChunkSettings(), embedder=None, kind: str = "flat",
                root: Path | None = None, lock_timeout: float = LOCK_WAIT) -> Index:
    """Chunk, embed (through the content-hash cache), index, and save atomically; another build of
    the same index holding its lock is waited for up to ``lock_timeout`` seconds."""

    profile = config.profile(profile)
    embedder = embedder or Embedder()
    docs = load_corpus(corpus, profile)
    started = time.perf_counter()
    chunks = chunk_corpus(docs, settings, embed=embedder.encode, tokenizer=load_tokenizer())
    parents = [p for d in docs for p in parent_chunks(d, settings)] if settings.strategy == "parent" else []
    if not chunks:
        raise IndexNotReady(f"corpus {corpus!r} gave no chunks")
    manifest = expected_manifest(corpus, profile, settings, embedder.model_id, kind, docs,
                                 getattr(embedder, "precision", "float32"))
    vectors = embedder.encode([c.indexed_text for c in chunks])
    dense = FaissStore(vectors.shape[1], kind)
    dense.add(vectors)
    bm25 = BM25([c.indexed_text for c in chunks])
    manifest.update(n_chunks=len(chunks), dim=int(vectors.shape[1]), embed_stats=embedder.last_stats,
                    build_seconds=round(time.perf_counter() - started, 2), documents={d.id: d.fingerprint for d in docs})
    dest = (root or config.work_dir() / "indexes") / index_name(corpus, profile, settings, kind, embedder.model_id)
    try:
        with atomic_dir(dest, lock_timeout) as tmp:
            manifest["changes"] = document_changes(_previous_documents(dest), manifest["documents"])
            _write_files(tmp, manifest, chunks, dense, bm25, parents)
    except Busy as exc:
        raise IndexNotReady(f"{exc}; run `{_rebuild_hint(corpus, profile, settings, kind, embedder.model_id)}` "
                            "once it has finished") from None
    return Index(dest, manifest, chunks, dense, bm25, parents=parents)


def _write_files(folder: Path, manifest: dict, chunks: list[Chunk], dense: FaissStore, bm25: BM25,
                 parents: list[Chunk] = ()) -> None:
    """The index's files, the manifest last, with a crash point after each (for the crash tests)."""
    write_jsonl(folder / "chunks.jsonl", (c.to_dict() for c in chunks))
    if parents:
        write_jsonl(folder / "parents.jsonl", (c.to_dict() for c in parents))
    crash_point("index-write")
    dense.save(folder / "dense.faiss")
    crash_point("index-dense")
    save_bm25(bm25, folder / "bm25.npz")
    crash_point("index-bm25")
    with atomic_open(folder / "manifest.json") as fh:
        json.dump(manifest, fh, indent=2)


def _previous_documents(path: Path) -> dict[str, str]:
    """The document hashes recorded by the index at ``path`` (empty if there is none)."""
    try:
        return _manifest((path / "manifest.json").read_text()).get("documents", {})
    except (OSError, ValueError):
        return {}


def document_changes(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """Which documents were added, updated, deleted or left unchanged between two hash maps.

    >>> document_changes({"a": "1", "b": "2"}, {"b": "3", "c": "4"})
    {'added': ['c'], 'updated': ['b'], 'deleted': ['a'], 'unchanged': []}
    """
    return {"added": sorted(set(after) - set(before)),
            "updated": sorted(d for d in after if d in before and before[d] != after[d]),
            "deleted": sorted(set(before) - set(after)),
            "unchanged": sorted(d for d in after if before.get(d) == after[d])}


def _rebuild_hint(corpus: str, profile: str, settings: ChunkSettings, kind: str, model_id: str | None = None) -> str:
    s = settings.resolved()
    return (f"raglab index --corpus {corpus} --profile {profile} --strategy {s.strategy} --size {s.size} "
            f"--overlap {s.overlap}" + (f" --breakpoint {s.breakpoint}" if s.breakpoint is not None else "")
            + (" --prefix" if s.prefix else "") + ("" if kind == "flat" else f" --kind {kind}")
            + ("" if model_id in (None, MINILM) else f" --model {model_id}"))


def load_index(corpus: str = "python-docs", profile: str | None = None, settings: ChunkSettings = ChunkSettings(),
               model_id: str | None = None, kind: str = "flat", root: Path | None = None,
               allow_stale: bool = False, precision: str | None = None) -> Index:
    """Load the index for these settings, refusing one that was built from anything else
    (``allow_stale=True`` accepts one whose corpus has changed since, e.g. while it is rebuilt);
    ``precision=None`` expects the default embedding precision (``raglab.infra.precision.resolve_precision``)."""
    profile = config.profile(profile)
    model_id = model_id or MINILM
    precision = resolve_precision(precision)
    path = (root or config.work_dir() / "indexes") / index_name(corpus, profile, settings, kind, model_id)
    hint = _rebuild_hint(corpus, profile, settings, kind, model_id)
    if precision != resolve_precision():
        hint = f"RAGLAB_EMBED_PRECISION={precision} {hint}"
    recover_dir(path)                  # a build killed between its two renames left the previous index aside
    if not (path / "manifest.json").exists():
        raise IndexNotReady(f"no index at {path}: build it with `{hint}`")
    manifest = _read(path, "manifest.json", hint, lambda p: _manifest(p.read_text()))
    want = expected_manifest(corpus, profile, settings, model_id, kind, precision=precision)
    if manifest_precision(manifest) != precision:
        raise IndexNotReady(f"index at {path} was embedded in {manifest_precision(manifest)}, not {precision}: "
                            f"rebuild it with `{hint}`")
    keys = ("format", "corpus", "profile", "chunking", "chunker", "model", "kind") + (() if allow_stale else ("corpus_sha256",))
    for key in keys:
        if manifest.get(key) != want[key]:
            what = ("the corpus has changed since it was built" if key == "corpus_sha256"
                    else f"its {key} is {manifest.get(key)!r}, not {want[key]!r}")
            raise IndexNotReady(f"index at {path} does not match: {what}; rebuild it with `{hint}`")
    chunks = _read(path, "chunks.jsonl", hint, lambda p: [Chunk.from_dict(r) for r in read_jsonl(p)])
    dense = _read(path, "dense.faiss", hint, lambda p: FaissStore.load(p, kind))
    bm25 = _read(path, "bm25.npz", hint, load_bm25)
    if not len(chunks) == len(dense) == bm25.n_docs == manifest.get("n_chunks"):
        raise IndexNotReady(f"index at {path} is inconsistent (chunks, vectors and BM25 rows differ): rebuild it with `{hint}`")
    parents = (_read(path, "parents.jsonl", hint, lambda p: [Chunk.from_dict(r) for r in read_jsonl(p)])
               if manifest["chunking"]["strategy"] == "parent" else [])
    return Index(path, manifest, chunks, dense, bm25, parents=parents)


def _manifest(text: str) -> dict:
    """A manifest's JSON object (anything else is an error)."""
    manifest = json.loads(text)
    if not isinstance(manifest, dict):
        raise ValueError(f"a JSON {type(manifest).__name__}, not an object")
    return manifest


def _read(path: Path, name: str, hint: str, load):
    """``load(path / name)``; a file that cannot be read is ``IndexNotReady`` naming it and the rebuild command."""
    try:
        return load(path / name)
    except Exception as exc:           # a truncated or corrupt file raises whatever its parser raises
        why = (str(exc).strip().splitlines() or [""])[-1][:200]
        raise IndexNotReady(f"index at {path}: {name} cannot be read ({type(exc).__name__}: {why}); "
                            f"rebuild it with `{hint}`") from exc


