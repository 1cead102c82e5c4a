"""Shared fixtures. Tests run on the small profile unless RAGLAB_PROFILE says otherwise. The student bundle is
built and installed once a session (``built``, ``installed``) for the tests that read it or run in it."""
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

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


# ---------------------------------------------------------------- the student bundle (slow)

@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """``raglab release`` as an instructor runs it; the archive unpacked as a student unpacks it:
    ``(release folder, archive, the unpacked bundle's top folder)``."""
    out = tmp_path_factory.mktemp("release")
    from raglab.surfaces.cli import main

    assert main(["release", "--out", str(out)]) == 0
    archive = next(out.glob("raglab-course-*.tar.gz"))
    where = tmp_path_factory.mktemp("student")
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    return out, archive, next(where.iterdir())


@dataclass
class Installed:
    """The unpacked bundle (``top``), the new environment it was installed into (``venv``) and an environment
    (``env``) that knows nothing of this repository."""
    top: Path
    venv: Path
    env: dict

    def run(self, *args, cwd=None, timeout=1200, **settings) -> subprocess.CompletedProcess:
        """Run one of the environment's programs (``python``, ``raglab``, ``jupyter``), in the bundle's top folder
        unless ``cwd`` says otherwise, with ``settings`` added to the environment (``RAGLAB_ARTIFACTS="..."``)."""
        return subprocess.run([str(self.venv / "bin" / args[0]), *args[1:]], cwd=cwd or self.top,
                              env={**self.env, **settings}, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def installed(built, tmp_path_factory) -> Installed:
    """The bundle installed by its own ``install.sh`` into a new virtual environment (not this one's packages)."""
    from raglab.course import bundle

    _, _, top = built
    venv = tmp_path_factory.mktemp("venv") / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = bundle.student_env(venv)
    run = subprocess.run(["bash", "install.sh"], cwd=top, env=env, capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return Installed(top, venv, env)
