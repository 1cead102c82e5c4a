"""Shared fixtures. Tests run on the small profile unless RAGLAB_PROFILE says otherwise."""
import os

os.environ.setdefault("RAGLAB_PROFILE", "small")

import pytest  # noqa: E402

from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.corpus import load_corpus  # noqa: E402


@pytest.fixture(scope="session")
def python_docs():
    """The small profile's Python-docs pages."""
    return load_corpus("python-docs", "small")


@pytest.fixture(scope="session")
def helpcenter():
    """The bundled help-center corpus."""
    return load_corpus("helpcenter")


@pytest.fixture(scope="session")
def both_corpora(python_docs, helpcenter):
    """Every document of both bundled corpora."""
    return python_docs + helpcenter


HC_SETTINGS = ChunkSettings("headings", prefix=True)


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    """A private working folder (caches, indexes, traces) for the tests that build indexes."""
    mp = pytest.MonkeyPatch()
    path = tmp_path_factory.mktemp("work")
    mp.setenv("RAGLAB_WORKDIR", str(path))
    yield path
    mp.undo()


@pytest.fixture(scope="module")
def project_caches():
    """The project's own working folder (its caches and indexes, which the main job fills), not the private one
    the session's ``workdir`` fixture may have set: for the tests that run whole notebooks, as a learner's or an
    instructor's machine runs them (without it they embed every corpus again, cold)."""
    mp = pytest.MonkeyPatch()
    mp.delenv("RAGLAB_WORKDIR", raising=False)
    yield
    mp.undo()


@pytest.fixture(scope="session")
def embedder(workdir):
    """The packaged MiniLM with a cache in the private working folder."""
    from raglab.infra.embedder import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def index(workdir, embedder):
    """The help-center corpus, heading-aware chunks with prefixes, indexed once per session."""
    from raglab.infra.index import build_index

    return build_index("helpcenter", "small", HC_SETTINGS, embedder)


@pytest.fixture(scope="session")
def retriever(index, embedder):
    """Every search mode over the help-center index, with the offline sentence reranker."""
    from raglab.book.rerank import SentenceMaxReranker
    from raglab.book.retrieve import Retriever

    return Retriever(index, embedder, SentenceMaxReranker(embedder))


@pytest.fixture(scope="session")
def pg_url():
    """An embedded PostgreSQL + pgvector for the session, its data folder in a fresh /tmp folder
    (the embedded server's own user must be able to reach it), stopped at the end."""
    import shutil
    import tempfile

    from raglab.infra.stores import pgvector_store as pgs

    root = tempfile.mkdtemp(prefix="raglab-pg-")
    mp = pytest.MonkeyPatch()
    mp.setenv("RAGLAB_WORKDIR", root)
    mp.delenv(pgs.ENV_URL, raising=False)
    url = pgs.database()
    mp.undo()
    mp.setenv(pgs.ENV_URL, url)
    yield url
    mp.undo()
    pgs.stop_embedded()
    shutil.rmtree(root, ignore_errors=True)


SESSION_START = __import__("time").time()   # conftest is imported at collection, before any notebook runs


@pytest.fixture(scope="session")
def project_artifacts(tmp_path_factory):
    """The artifacts the project's own notebooks saved in this test session (nbval runs them
    first); when they did not run in this session, the notebooks are executed here.
    ``RAGLAB_TEST_ARTIFACTS=1`` takes the artifacts folder as it is (for quick local runs)."""
    from raglab.course import artifacts

    where = artifacts.folder()
    results = where / artifacts.RESULTS
    if os.environ.get("RAGLAB_TEST_ARTIFACTS") or results.exists() and results.stat().st_mtime > SESSION_START and \
            "experiments" in artifacts.load_results(where):
        return where
    from raglab.course.workbook import run_workbook

    out = tmp_path_factory.mktemp("workbook")
    mp = pytest.MonkeyPatch()
    mp.setenv(artifacts.ENV, str(out / "artifacts"))
    mp.delenv("RAGLAB_WORKDIR", raising=False)      # the project's own caches, not a test's empty one
    try:
        run_workbook(out=out)
    finally:
        mp.undo()
    return out / "artifacts"


@pytest.fixture(scope="session")
def json_retriever(python_docs, embedder):
    """A small in-memory index over one Python-docs page, ``library/json.txt`` (plain text with reST
    markup such as ``*ensure_ascii*``), heading-aware chunks with the prefix, public to everyone; every
    search mode, with the offline sentence reranker."""
    from pathlib import Path

    from raglab.book.bm25 import BM25
    from raglab.infra.index import Index
    from raglab.book.rerank import SentenceMaxReranker
    from raglab.book.retrieve import Retriever
    from raglab.infra.stores.faiss_store import FaissStore

    doc = next(d for d in python_docs if d.id == "library/json.txt")
    chunks = chunk_corpus([doc], ChunkSettings("headings", prefix=True))
    vectors = embedder.encode([c.indexed_text for c in chunks])
    dense = FaissStore(vectors.shape[1], "flat")
    dense.add(vectors)
    index = Index(Path("library-json"), {"version_id": "library-json"}, chunks, dense,
                  BM25([c.indexed_text for c in chunks]))
    return Retriever(index, embedder, SentenceMaxReranker(embedder))
