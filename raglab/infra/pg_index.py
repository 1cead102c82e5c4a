"""The pipeline on PostgreSQL + pgvector: documents synced incrementally, searched in the database.

``sync_pgvector`` compares each document's fingerprint (a hash of its bytes and its parsed access,
see ``Document.fingerprint``) with the one stored: a changed document, or one whose access changed, has
its old chunks deleted and its new ones inserted, in one transaction per document; a document
gone from the corpus loses its chunks; an unchanged one is not touched. A process killed midway
leaves every document either fully old or fully new, and the next run finishes the job.
The access condition of a search sits in the WHERE clause of the same SQL query.
"""
from __future__ import annotations

import hashlib
import re

import numpy as np

from raglab.base import config
from raglab.book.bm25 import BM25
from raglab.book.chunking import ChunkSettings, chunk_document
from raglab.book.documents import PUBLIC
from raglab.book.memory_index import access_mask
from raglab.infra.corpus import load_corpus
from raglab.infra.embedder import Embedder
from raglab.infra.precision import resolve_precision
from raglab.base.files import crash_point
from raglab.infra.index import (
    Index,
    IndexNotReady,
    document_changes,
    expected_manifest,
    index_name,
    manifest_precision,
)
from raglab.infra.packaged_models import MINILM
from raglab.infra.stores.pgvector_store import PgVectorStore
from raglab.infra.tokenizer import load_tokenizer


def table_name(corpus: str, profile: str, settings: ChunkSettings) -> str:
    """A valid, unique table prefix for these settings, e.g. ``rl_helpcenter_small_headings_1_3f2a9c1b``."""
    full = index_name(corpus, profile, settings)
    name = re.sub(r"[^a-z0-9]+", "_", full.lower()).strip("_")
    return f"rl_{name[:27].rstrip('_')}_{hashlib.sha256(full.encode()).hexdigest()[:8]}"


class PgIndex:
    """The same search interface as ``raglab.infra.index.Index``, backed by one pgvector table."""

    # the parent strategy runs on the FAISS store only (``sync_pgvector`` refuses it): no parents here
    locate, chunk, passages, readable = Index.locate, Index.chunk, Index.passages, Index.readable
    access_rule = None

    def __init__(self, store: PgVectorStore, manifest: dict):
        self.store, self.manifest, self.path, self.report = store, manifest, None, {}
        self.chunks = store.chunks()
        self.row_of = {c.id: i for i, c in enumerate(self.chunks)}
        self.parents, self.parent_row = [], {}
        self.bm25 = BM25([c.indexed_text for c in self.chunks])
        self._masks: dict[frozenset, np.ndarray] = {}

    @property
    def version(self) -> str:
        return self.manifest["version_id"]

    def _groups(self, user) -> list[str]:
        return sorted(set(user or ()) | {PUBLIC})

    def allowed(self, user) -> np.ndarray:
        """Rows the user may see, for BM25 (the dense search filters in SQL)."""
        return access_mask(self.chunks, user, self._masks)

    def dense_search(self, query_vec, k: int, user) -> list[tuple[int, float]]:
        """Cosine search in PostgreSQL; the user's groups are in the query's WHERE clause."""
        return [(self.row_of[cid], score) for cid, score in self.store.search(query_vec, k, self._groups(user))]

    def bm25_search(self, query: str, k: int, user) -> list[tuple[int, float]]:
        return self.bm25.search(query, k, self.allowed(user))


def _manifest_keys(manifest: dict) -> dict:
    return {k: manifest.get(k) for k in ("corpus", "profile", "chunking", "model", "kind")}


def sync_pgvector(corpus: str = "python-docs", profile: str | None = None, settings: ChunkSettings = ChunkSettings(),
                  embedder=None, url: str | None = None, hnsw: bool = False) -> tuple[PgIndex, dict]:
    """Bring the pgvector table for these settings up to date with the corpus; returns the index and
    what changed (documents added/updated/deleted/unchanged, chunks, embedding cache hits)."""
    import json

    profile = config.profile(profile)
    if settings.strategy == "parent":
        raise ValueError("the parent strategy (small chunks handing on their parents) runs on the FAISS store "
                         "only: use store='faiss' or another strategy")
    embedder = embedder or Embedder()
    docs = load_corpus(corpus, profile)
    kind = "pgvector-hnsw" if hnsw else "pgvector"
    manifest = expected_manifest(corpus, profile, settings, embedder.model_id, kind, docs,
                                 getattr(embedder, "precision", "float32"))
    store = PgVectorStore(table_name(corpus, profile, settings), embedder.dim, url, hnsw)
    recorded = store.get_meta("manifest")
    if recorded and _manifest_keys(json.loads(recorded)) != _manifest_keys(manifest):
        raise IndexNotReady(f"table {store.table} was built with other settings ({recorded}); drop it or use other settings")
    hashes = store.doc_hashes()
    if recorded and (manifest_precision(json.loads(recorded)) != manifest["precision"]
                     or json.loads(recorded).get("chunker") != manifest["chunker"]):
        hashes = dict.fromkeys(hashes, "")   # embedded in another precision, or cut by another chunker: every page again
    changes = document_changes(hashes, {d.id: d.fingerprint for d in docs})
    todo = {d.id: d for d in docs if d.id in set(changes["added"]) | set(changes["updated"])}
    hits = misses = 0
    for doc_id in sorted(todo):
        doc = todo[doc_id]
        chunks = chunk_document(doc, settings, embed=embedder.encode, tokenizer=load_tokenizer())
        vectors = embedder.encode([c.indexed_text for c in chunks], progress=False)
        hits, misses = hits + embedder.last_stats["hits"], misses + embedder.last_stats["misses"]
        with store.transaction():
            store.delete_doc(doc.id)
            store.upsert(chunks, vectors)
            store.set_doc_hash(doc.id, doc.fingerprint)
        crash_point("pg-sync")
    for doc_id in changes["deleted"]:
        with store.transaction():
            store.delete_doc(doc_id)
            store.delete_doc_hash(doc_id)
    manifest.update(n_chunks=store.count(), dim=embedder.dim)
    store.set_meta("manifest", json.dumps(manifest))
    report = {k: len(v) for k, v in changes.items()} | {"chunks": manifest["n_chunks"], "cache_hits": hits,
                                                          "cache_misses": misses, "table": store.table}
    index = PgIndex(store, manifest)
    index.report = report
    return index, report


def load_pg_index(corpus: str = "python-docs", profile: str | None = None, settings: ChunkSettings = ChunkSettings(),
                  model_id: str | None = None, url: str | None = None, hnsw: bool = False,
                  precision: str | None = None) -> PgIndex:
    """Open the pgvector table for these settings, refusing a missing, mismatched or stale one
    (or one embedded in another precision than ``precision``, default ``resolve_precision()``)."""
    import json

    profile = config.profile(profile)
    s = settings.resolved()
    hint = (f"raglab index --store pgvector --corpus {corpus} --profile {profile} --strategy {s.strategy} "
            f"--size {s.size} --overlap {s.overlap}" + (" --prefix" if s.prefix else ""))
    store = PgVectorStore(table_name(corpus, profile, settings), url=url, hnsw=hnsw)
    recorded = store.get_meta("manifest")
    if not recorded:
        raise IndexNotReady(f"no pgvector index in table {store.table}: build it with `{hint}`")
    manifest = json.loads(recorded)
    docs = load_corpus(corpus, profile)
    want = expected_manifest(corpus, profile, settings, model_id or MINILM, "pgvector-hnsw" if hnsw else "pgvector", docs,
                             resolve_precision(precision))
    if manifest.get("format") != want["format"]:
        raise IndexNotReady(f"table {store.table} was synced by an older raglab (manifest format {manifest.get('format')}, "
                            f"now {want['format']}; page access is now part of each page's hash): update it with `{hint}`")
    if _manifest_keys(manifest) != _manifest_keys(want):
        raise IndexNotReady(f"table {store.table} does not match these settings: rebuild it with `{hint}`")
    if manifest.get("chunker") != want["chunker"]:
        raise IndexNotReady(f"table {store.table} was cut by chunker {manifest.get('chunker')}, not {want['chunker']}: "
                            f"update it with `{hint}`")
    if manifest_precision(manifest) != want["precision"]:
        raise IndexNotReady(f"table {store.table} was embedded in {manifest_precision(manifest)}, not {want['precision']}: "
                            f"update it with `{hint}`")
    if manifest["corpus_sha256"] != want["corpus_sha256"]:
        raise IndexNotReady(f"table {store.table} is stale (the corpus has changed): update it with `{hint}`")
    return PgIndex(store, manifest)
