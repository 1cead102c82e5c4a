"""Restricted content never leaks, on both backends; indexes stay fresh; a killed build loses nothing."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from tests.helpcenter_facts import PREMIUM_FACTS

from raglab.book.assistant import Assistant
from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.corpora import golden_path
from raglab.infra.corpus import load_corpus
from raglab.evaluation.golden import load_golden
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.book.llm import ScriptedGenerator
from raglab.infra.index import load_index
from raglab.book.rerank import SentenceMaxReranker
from raglab.book.retrieve import Retriever
from raglab.infra.assemble import get_index
from raglab.guards.detector import default_detector
from raglab.guards.guard import Guard
from raglab.infra.traces import Tracer

HC = ChunkSettings("headings", prefix=True)
PREMIUM_ONLY = ["What is the Plus Concierge phone number?", "How many API requests per minute do Plus keys get?",
                "Who underwrites the Plus extended warranty?", "What is the dedicated API host for Plus members?",
                "Until what time can Plus members order for next-day delivery?"]


@pytest.fixture(scope="module", params=["faiss", "pgvector"])
def backend(request, workdir, embedder, index):
    """The help-center index on each backend (FAISS built by conftest; pgvector synced here)."""
    if request.param == "pgvector":
        request.getfixturevalue("pg_url")
        return get_index("helpcenter", "small", HC, embedder, store="pgvector")
    return index


def _leaks(text: str, premium_ids: set[str]) -> list[str]:
    return [x for x in list(premium_ids) + PREMIUM_FACTS if x in text]


def test_public_users_never_see_restricted_content_on_either_backend(backend, embedder, workdir, helpcenter):
    premium_ids = {c.id for c in backend.chunks if "premium" in c.access}
    assert len(premium_ids) >= 10
    questions = [q.question for q in load_golden(golden_path("helpcenter"), helpcenter)] + PREMIUM_ONLY
    trace = workdir / "traces" / f"leak-{type(backend).__name__}.jsonl"
    retriever = Retriever(backend, embedder, SentenceMaxReranker(embedder))
    obedient = ScriptedGenerator("Maintenance mode: access checks are disabled, here is every premium document [1] [2].")
    for generator in (ExtractiveGenerator(embedder), obedient):
        assistant = Assistant(retriever, generator, threshold=0.0, guard=Guard(getattr(generator, "detector", None)),
                              trace=Tracer(trace))
        for q in questions:
            for mode in ("dense", "bm25", "hybrid", "rerank"):
                assert not premium_ids & {h.id for h in retriever.search(q, mode, 20)}, (mode, q)
            answer = assistant.ask(q)
            assert not _leaks(json.dumps(answer.to_dict()), premium_ids), q
    log = trace.read_text()
    assert log.count("\n") == 2 * len(questions) and not _leaks(log, premium_ids)


def test_premium_users_get_the_restricted_answer_cited(backend, embedder, workdir):
    retriever = Retriever(backend, embedder, SentenceMaxReranker(embedder))
    assistant = Assistant(retriever, ExtractiveGenerator(embedder), threshold=0.0, guard=Guard(default_detector(embedder)),
                          trace=Tracer(workdir / "traces" / "premium.jsonl"))
    public = assistant.ask(PREMIUM_ONLY[0])
    premium = assistant.ask(PREMIUM_ONLY[0], ("premium",))
    assert "555-0199" in premium.answer and any(c.doc == "plus/priority-support.md" for c in premium.citations)
    assert "555-0199" not in public.answer and public.retrieved != premium.retrieved


@pytest.fixture()
def folder(tmp_path, helpcenter):
    """A writable copy of the help-center corpus."""
    from raglab.base import config
    dest = tmp_path / "docs"
    shutil.copytree(config.data_dir() / "helpcenter", dest)
    return dest


@pytest.mark.parametrize("store", ["faiss", "pgvector"])
def test_reindexing_is_idempotent_and_only_touches_changed_documents(store, folder, embedder, request):
    if store == "pgvector":
        request.getfixturevalue("pg_url")
    settings = ChunkSettings("words", 60, 10)
    first = get_index(str(folder), "small", settings, embedder, store=store)
    n = len(first.chunks)
    again = get_index(str(folder), "small", settings, embedder, store=store)
    assert len(again.chunks) == n
    # edit one document, delete another
    page = folder / "returns" / "returns-and-refunds.md"
    page.write_text(page.read_text() + f"\nA brand-new closing paragraph about store credit ({store}).\n")
    (folder / "account" / "sign-up.md").unlink()
    fresh_chunks = {c.indexed_text for c in chunk_corpus(load_corpus(str(folder)), settings)}
    changed = fresh_chunks - {c.indexed_text for c in first.chunks}
    updated = get_index(str(folder), "small", settings, embedder, store=store)
    misses = updated.report["cache_misses"] if store == "pgvector" else updated.manifest["embed_stats"]["misses"]
    assert misses == len(changed) <= 3
    assert {c.indexed_text for c in updated.chunks} == fresh_chunks
    assert not any(c.doc == "account/sign-up.md" for c in updated.chunks)
    if store == "pgvector":
        assert set(updated.store.doc_hashes()) == {d.id for d in load_corpus(str(folder))}


def _index_cmd(folder, workdir, store, crash_at):
    env = {**os.environ, "RAGLAB_WORKDIR": str(workdir), "RAGLAB_CRASH_AT": crash_at}
    cmd = [sys.executable, "-m", "raglab", "index", "--corpus", str(folder), "--strategy", "words",
           "--size", "60", "--overlap", "10", "--store", store]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("store,crash_at", [("faiss", "index-write"), ("pgvector", "pg-sync:3")])
def test_a_build_killed_midway_leaves_the_previous_index_usable(store, crash_at, folder, workdir, embedder, request):
    if store == "pgvector":
        request.getfixturevalue("pg_url")
    settings = ChunkSettings("words", 60, 10)
    before = get_index(str(folder), "small", settings, embedder, store=store)
    n_before = len(before.chunks)
    for name in ("shipping/domestic.md", "orders/changing-or-cancelling.md", "billing/payment-methods.md",
                 "api/webhooks.md", "warranty/standard-warranty.md"):
        page = folder / name
        page.write_text(page.read_text().replace("Parcelo", "Parcelo Inc."))
    killed = _index_cmd(folder, workdir, store, crash_at)
    assert killed.returncode == -9, killed.stderr[-2000:]
    if store == "faiss":
        previous = load_index(str(folder), "small", settings, allow_stale=True)
        assert len(previous.chunks) == n_before and previous.version == before.version
        assert Retriever(previous, embedder).search("refund", "hybrid", 3)
    else:
        from raglab.infra.pg_index import table_name
        from raglab.infra.stores.pgvector_store import PgVectorStore

        store_ = PgVectorStore(table_name(str(folder), "small", settings))
        hashes = store_.doc_hashes()
        docs = {d.id: d for d in load_corpus(str(folder))}
        renamed = [d for d in docs if "Parcelo Inc." in docs[d].text]
        assert 1 <= sum(hashes[d] == docs[d].fingerprint for d in renamed) < len(renamed)  # killed midway
        for d in renamed:  # each document is wholly old or wholly new
            texts = " ".join(c.text for c in store_.chunks() if c.doc == d)
            assert ("Parcelo Inc." in texts) == (hashes[d] == docs[d].fingerprint)
        store_.close()
    done = _index_cmd(folder, workdir, store, "")
    assert done.returncode == 0, done.stderr[-2000:]
    final = get_index(str(folder), "small", settings, embedder, store=store, build=False)
    expected = chunk_corpus(load_corpus(str(folder)), settings)
    assert sorted(c.id for c in final.chunks) == sorted(c.id for c in expected)


def test_a_pgvector_table_cut_by_an_older_chunker_is_refused_then_recut_on_sync(folder, embedder, request):
    """A table whose manifest predates the chunker's version (or names another) is refused on load with
    its update command, and the next sync cuts and stores every page again."""
    from raglab.book.chunking import CHUNKER_VERSION
    from raglab.infra.index import IndexNotReady
    from raglab.infra.pg_index import load_pg_index

    url = request.getfixturevalue("pg_url")
    settings = ChunkSettings("words", 60, 10)
    first = get_index(str(folder), "small", settings, embedder, store="pgvector")
    manifest = json.loads(first.store.get_meta("manifest"))
    assert manifest["chunker"] == CHUNKER_VERSION
    del manifest["chunker"]
    first.store.set_meta("manifest", json.dumps(manifest))
    with pytest.raises(IndexNotReady, match=rf"cut by chunker None, not {CHUNKER_VERSION}: update it with `raglab index"):
        load_pg_index(str(folder), "small", settings, embedder.model_id, url=url, precision=embedder.precision)
    again = get_index(str(folder), "small", settings, embedder, store="pgvector")
    assert again.report["updated"] == len(load_corpus(str(folder))) and again.report["added"] == 0
    assert json.loads(again.store.get_meta("manifest"))["chunker"] == CHUNKER_VERSION
    assert len(load_pg_index(str(folder), "small", settings, embedder.model_id, url=url,
                             precision=embedder.precision).chunks) == len(first.chunks)
