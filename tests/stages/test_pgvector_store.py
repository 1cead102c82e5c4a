"""PgVectorStore against numpy brute force, on an embedded PostgreSQL started in a tmp folder."""
import contextlib
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import psutil
import pytest

from raglab.book.chunking import Chunk
from raglab.infra.stores import pgvector_store as pgs
from raglab.infra.stores.pgvector_store import PgVectorStore

pytestmark = pytest.mark.slow   # a model, a server, PostgreSQL or many subprocess builds

DIM, DOCS, PER_DOC, K = 384, 100, 30, 10


def access_of(d: int) -> tuple[str, ...]:
    """5% of documents premium only, 2 documents staff (7 rows), the rest public."""
    return ("premium",) if d % 20 == 0 else ("staff",) if d in (7, 11) else ("public",)


def make_chunks(n_docs: int = DOCS, per_doc: int = PER_DOC) -> list[Chunk]:
    """Synthetic chunks ``d<doc>#<n>``; documents 7 and 11 keep only a few rows."""
    chunks = []
    for d in range(n_docs):
        for n in range(per_doc if d not in (7, 11) else (3 if d == 7 else 4)):
            text = f"doc {d} chunk {n} – ü"
            chunks.append(Chunk(f"d{d}#{n}", f"d{d}", (f"Title {d}", "A > B", "§ 1"), 10 * n, 10 * n + len(text),
                                text, text.lower(), access_of(d), "words"))
    return chunks


def unit(rng, n: int, dim: int = DIM) -> np.ndarray:
    """``n`` random unit vectors (float32)."""
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def brute_force(vectors, chunks, q, k, groups=None):
    """The reference: exact top ``k`` (id, score) by inner product among allowed rows."""
    allowed = np.array([groups is None or bool(set(groups) & set(c.access)) for c in chunks])
    scores = np.where(allowed, vectors @ q, -np.inf)
    top = np.argsort(-scores, kind="stable")[: min(k, int(allowed.sum()))]
    return [(chunks[i].id, float(scores[i])) for i in top]


def gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its parent to reap it counts as exited)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture(scope="module")
def pg():
    """An embedded server in a tmp working folder, stopped (and checked gone) at the end.

    Not under pytest's tmp_path_factory: every pytest run (another one on the machine too) resets
    /tmp/pytest-of-<user> to mode 0700, which locks out the server's own system user as it starts.
    """
    mp = pytest.MonkeyPatch()
    work = Path(tempfile.mkdtemp(prefix="raglab-pgtest-"))
    mp.setenv("RAGLAB_WORKDIR", str(work))
    mp.delenv(pgs.ENV_URL, raising=False)
    url = pgs.database()
    assert pgs.database() == url and f"host={work / 'pg'}" in url
    pid = pgs.embedded_pid()
    assert pid is not None and psutil.pid_exists(pid)
    yield url
    pgs.stop_embedded()
    deadline = time.time() + 10
    while not gone(pid) and time.time() < deadline:
        time.sleep(0.05)
    assert gone(pid)
    assert not (work / "pg" / "postmaster.pid").exists()
    mp.undo()
    shutil.rmtree(work)


@pytest.fixture(scope="module")
def data():
    """Chunks, their vectors and queries near some of them (seeded)."""
    rng = np.random.default_rng(0)
    chunks = make_chunks()
    vectors = unit(rng, len(chunks))
    near = vectors[rng.choice(len(chunks), 20, replace=False)] + 0.08 * rng.normal(size=(20, DIM)).astype(np.float32)
    queries = np.vstack([near / np.linalg.norm(near, axis=1, keepdims=True), unit(rng, 10)])
    return chunks, vectors, queries


@pytest.fixture(scope="module")
def stores(pg, data):
    """The same table searched exactly and through HNSW (the index built after the bulk load)."""
    chunks, vectors, _ = data
    exact = PgVectorStore("t_search", DIM, url=pg)
    exact.upsert(chunks, vectors)
    hnsw = PgVectorStore("t_search", DIM, url=pg, hnsw=True)
    yield exact, hnsw
    exact.close()
    hnsw.close()


@pytest.mark.parametrize("groups", [None, ["public"], ["premium"], ["public", "premium"]])
def test_exact_search_equals_numpy(stores, data, groups):
    chunks, vectors, queries = data
    exact, _ = stores
    for q in queries:
        got, want = exact.search(q, K, groups), brute_force(vectors, chunks, q, K, groups)
        assert [i for i, _ in got] == [i for i, _ in want]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], atol=1e-5)


@contextlib.contextmanager
def index_scans_only(*stores):
    """Make the planner avoid sequential and bitmap scans (on a table this small it prefers them to HNSW)."""
    for store in stores:
        store.conn.execute("SET enable_seqscan = off")
        store.conn.execute("SET enable_bitmapscan = off")
    try:
        yield
    finally:
        for store in stores:
            store.conn.execute("RESET enable_seqscan")
            store.conn.execute("RESET enable_bitmapscan")


def test_exact_search_never_uses_the_hnsw_index(stores, data):
    exact, hnsw = stores
    q = data[2][0]
    with index_scans_only(exact, hnsw):
        for groups in (None, ["public"]):
            assert not exact.uses_hnsw(q, K, groups) and "hnsw" not in exact.explain(q, K, groups)
            assert hnsw.uses_hnsw(q, K, groups)


def test_repeated_queries_are_planned_with_their_groups(stores, data):
    _, hnsw = stores
    for q in data[2]:
        hnsw.search(q, K, ["public"])
    generic, custom = hnsw.conn.execute("SELECT sum(generic_plans), sum(custom_plans) FROM pg_prepared_statements "
                                        "WHERE statement LIKE '%access &&%'").fetchone()
    assert generic == 0 and custom > 10   # a generic plan cannot see the groups' selectivity


def test_bulk_load_refreshes_planner_statistics(stores):
    exact, _ = stores
    (elems,) = exact.conn.execute("SELECT most_common_elems::text FROM pg_stats "
                                  "WHERE tablename = 't_search_chunks' AND attname = 'access'").fetchone()
    assert "public" in elems   # else the planner guesses a filter keeps 0.5% of rows and skips HNSW


def test_filter_allowing_fewer_than_k_rows_returns_just_those(stores, data):
    chunks, vectors, queries = data
    staff = {c.id for c in chunks if "staff" in c.access}
    assert len(staff) == 7
    for store in stores:
        got = store.search(queries[0], K, ["staff"])
        assert {i for i, _ in got} == staff
        assert [i for i, _ in got] == [i for i, _ in brute_force(vectors, chunks, queries[0], K, ["staff"])]
        assert store.search(queries[0], K, []) == []


def test_filtered_search_never_returns_a_row_outside_the_groups(stores, data):
    chunks, _, queries = data
    access = {c.id: set(c.access) for c in chunks}
    for store in stores:
        for groups in (["premium"], ["staff", "premium"], ["nobody"]):
            for q in queries:
                assert all(access[i] & set(groups) for i, _ in store.search(q, K, groups))


def test_hnsw_selective_filter_keeps_k_rows_and_recall(stores, data):
    chunks, vectors, queries = data
    _, hnsw = stores
    assert sum("premium" in c.access for c in chunks) / len(chunks) < 0.06
    with index_scans_only(hnsw):
        assert hnsw.uses_hnsw(queries[0], K, ["premium"])
        for groups in (None, ["premium"]):
            hits = 0
            for q in queries:
                got = hnsw.search(q, K, groups)
                assert len(got) == K
                assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
                hits += len({i for i, _ in got} & {i for i, _ in brute_force(vectors, chunks, q, K, groups)})
            assert hits / (K * len(queries)) >= 0.9, groups


@pytest.fixture
def small(pg):
    """A fresh store of 3 documents x 4 chunks."""
    store = PgVectorStore("t_small", 8, url=pg)
    store.drop()
    store = PgVectorStore("t_small", 8, url=pg)
    chunks = make_chunks(3, 4)
    vectors = unit(np.random.default_rng(1), len(chunks), 8)
    store.upsert(chunks, vectors)
    yield store, chunks, vectors
    store.drop()
    store.close()


def test_upsert_is_idempotent_and_updates(small):
    store, chunks, vectors = small
    assert store.count() == 12
    store.upsert(chunks, vectors)
    assert store.count() == 12
    changed = replace(chunks[5], text="new text", indexed_text="new text")
    new_vector = unit(np.random.default_rng(2), 1, 8)
    store.upsert([changed], new_vector)
    assert store.count() == 12
    assert store.chunk(changed.id) == changed
    assert store.search(new_vector[0], 1)[0][0] == changed.id


def test_chunk_round_trip(small):
    store, chunks, _ = small
    assert [store.chunk(c.id) for c in chunks] == chunks
    assert store.chunk("missing#0") is None


def test_delete_doc_removes_exactly_that_doc(small):
    store, chunks, _ = small
    assert store.delete_doc("d1") == 4
    left = {c.id for c in chunks if c.doc != "d1"}
    assert store.count() == 8 and all(store.chunk(i) for i in left)
    assert not any(store.chunk(c.id) for c in chunks if c.doc == "d1")
    assert store.delete_doc("d1") == 0


def test_failed_transaction_changes_nothing(small):
    store, chunks, vectors = small
    store.set_doc_hash("d0", "aaa")
    with pytest.raises(RuntimeError, match="boom"):
        with store.transaction():
            assert store.delete_doc("d0") == 4
            store.upsert([replace(chunks[0], id="d0#new")], vectors[:1])
            store.set_doc_hash("d0", "bbb")
            store.set_meta("model", "x")
            assert store.count() == 9
            raise RuntimeError("boom")
    assert store.count() == 12 and store.chunk("d0#new") is None and store.chunk("d0#0") == chunks[0]
    assert store.doc_hashes() == {"d0": "aaa"} and store.get_meta("model") is None
    with store.transaction():
        store.delete_doc("d0")
        store.set_doc_hash("d0", "bbb")
    assert store.count() == 8 and store.doc_hashes() == {"d0": "bbb"}


def test_meta_and_doc_hashes_round_trip(small):
    store, _, _ = small
    assert store.get_meta("model") is None and store.doc_hashes() == {}
    store.set_meta("model", "all-MiniLM-L6-v2")
    store.set_meta("model", "other")
    assert store.get_meta("model") == "other"
    store.set_doc_hash("a", "1")
    store.set_doc_hash("b", "2")
    store.set_doc_hash("a", "3")
    assert store.doc_hashes() == {"a": "3", "b": "2"}
    store.delete_doc_hash("a")
    assert store.doc_hashes() == {"b": "2"}


def test_bad_input_is_refused(small, pg):
    store, chunks, vectors = small
    for name in ("x; DROP TABLE t_small_chunks", "1abc", "a-b", "", "a b", 'a"b', "é", "a" * 41):
        with pytest.raises(ValueError, match="bad store name"):
            PgVectorStore(name, 8, url=pg)
    with pytest.raises(ValueError, match="shape"):
        store.upsert(chunks[:2], vectors[:1])
    with pytest.raises(ValueError, match="duplicate"):
        store.upsert([chunks[0], chunks[0]], vectors[:2])
    with pytest.raises(ValueError, match="dimensions"):
        store.search(np.ones(9), 3)
    with pytest.raises(TypeError, match="list of group names"):
        store.search(vectors[0], 3, "public")
    with pytest.raises(ValueError, match="8-dimension"):
        PgVectorStore("t_small", 16, url=pg)
    assert store.count() == 12


def test_database_url_precedence(pg, monkeypatch):
    assert pgs.database("postgresql://u@h/db") == "postgresql://u@h/db"
    monkeypatch.setenv(pgs.ENV_URL, "postgresql://env/db")
    assert pgs.database() == "postgresql://env/db"
    monkeypatch.delenv(pgs.ENV_URL)
    assert pgs.database() == pg


def test_server_that_cannot_start_is_a_clear_error(pg, monkeypatch):
    work = Path(tempfile.mkdtemp(prefix="raglab-pgtest-"))
    try:
        (work / "pg").write_text("not a data folder")
        monkeypatch.setenv("RAGLAB_WORKDIR", str(work))
        with pytest.raises(RuntimeError, match=r"could not start the embedded PostgreSQL in .*: initdb: .*Not a dir"):
            pgs.database()
    finally:
        shutil.rmtree(work)
