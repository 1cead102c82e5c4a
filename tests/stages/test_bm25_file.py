"""A BM25 index written to a file and read back (raglab.infra.stores.bm25_file): the same scores, and a
failed save leaves the old file. The book's BM25 itself is tested in tests/book/test_bm25.py."""
import os

import numpy as np
import pytest

from raglab.book.bm25 import BM25
from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.stores.bm25_file import load_bm25, save_bm25

QUERIES = ["__init__", "os.path.join", "json.loads", "how do I join two paths", "path path path", "the",
           "zzzunknownword os.path.join", ""]


@pytest.fixture(scope="module")
def bm(python_docs):
    return BM25(c.indexed_text for c in chunk_corpus(python_docs, ChunkSettings("words")))


# ---------------------------------------------------------------- save and load

def test_save_load_round_trip(bm, tmp_path):
    path = tmp_path / "bm25.npz"
    save_bm25(bm, path)
    save_bm25(bm, path)  # overwriting is fine
    assert os.listdir(tmp_path) == ["bm25.npz"]
    loaded = load_bm25(path)
    assert (loaded.n_docs, loaded.vocab_size, loaded.avgdl) == (bm.n_docs, bm.vocab_size, bm.avgdl)
    mask = np.arange(bm.n_docs) % 3 == 0
    for query in QUERIES:
        assert np.array_equal(loaded.scores(query), bm.scores(query))
        assert loaded.search(query, allowed=mask) == bm.search(query, allowed=mask)


def test_a_failed_save_leaves_the_old_file_and_no_temporary(bm, tmp_path, monkeypatch):
    path = tmp_path / "bm25.npz"
    save_bm25(bm, path)
    before = path.read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        save_bm25(bm, path)
    assert os.listdir(tmp_path) == ["bm25.npz"] and path.read_bytes() == before
