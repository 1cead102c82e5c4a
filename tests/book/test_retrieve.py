"""The retriever over the book's in-memory index of the help center (a hashed-words embedding): ``k`` is honoured
in every mode (the candidate depth grows to it), one default ``k`` for every mode, every search returns ``Ranked``
hits that carry the best dense cosine the search saw, and the modes are exactly the four."""
import hashlib
from pathlib import Path

import numpy as np
import pytest

from raglab.base.records import Ranked
from raglab.book.bm25 import tokenize
from raglab.book.chunking import ChunkSettings
from raglab.book.documents import load_folder
from raglab.book.embed import FunctionEmbedder
from raglab.book.memory_index import build_memory_index
from raglab.book.rerank import SentenceMaxReranker
from raglab.book.retrieve import K, MODES, Retriever

HELPCENTER = Path(__file__).parents[2] / "data" / "helpcenter"
QUESTION = "How do I return a parcel?"


def embed(texts):
    out = np.zeros((len(texts), 4096), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in (w for w in tokenize(text) if len(w) >= 5):
            out[row, int(hashlib.sha1(word.encode()).hexdigest(), 16) % 4096] += 1
    return out


@pytest.fixture(scope="module")
def retriever():
    index = build_memory_index(load_folder(HELPCENTER, (".md",)), ChunkSettings("headings"), embed)
    embedder = FunctionEmbedder(embed)
    return Retriever(index, embedder, reranker=SentenceMaxReranker(embedder))


@pytest.mark.parametrize("mode", MODES)
def test_k_is_honoured_in_every_mode(retriever, mode):
    readable = int(retriever.index.allowed(None).sum())
    for k in (1, 5, 60):
        hits = retriever.search(QUESTION, mode, k)
        matching = readable if mode != "bm25" else sum(s > 0 for s in retriever.index.bm25.scores(QUESTION, retriever.index.allowed(None)))
        assert len(hits) == min(k, matching), (mode, k)
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert len(retriever.search(QUESTION, mode)) == min(K, readable)          # one default k


def test_a_larger_k_keeps_the_smaller_ks_hits_in_dense_and_bm25(retriever):
    for mode in ("dense", "bm25"):
        assert [h.id for h in retriever.search(QUESTION, mode, 60)][:5] == [h.id for h in retriever.search(QUESTION, mode, 5)]


@pytest.mark.parametrize("mode", MODES)
def test_every_search_carries_the_top_dense_cosine(retriever, mode):
    hits = retriever.search(QUESTION, mode, 5)
    assert isinstance(hits, Ranked)
    if mode == "bm25":
        assert hits.top_dense is None
    else:
        assert hits.top_dense == pytest.approx(retriever.search(QUESTION, "dense", 1)[0].score)


def test_an_unknown_mode_or_an_empty_question_is_a_clear_error(retriever):
    with pytest.raises(ValueError, match="unknown mode 'sparse'"):
        retriever.search(QUESTION, "sparse")
    with pytest.raises(ValueError, match="empty query"):
        retriever.search("  ", "dense")


def test_a_depth_given_below_k_caps_the_candidates(retriever):
    """Notebook 03's exercise reranks the fused top 6: asked for 10 hits, 6 come back, the same 6 hybrid fused."""
    reranked = retriever.rerank(QUESTION, 10, depth=6)
    assert len(reranked) == 6
    assert {h.id for h in reranked} == {h.id for h in retriever.hybrid(QUESTION, 6, depth=6)}
    assert len(retriever.hybrid(QUESTION, 10, depth=6)) <= 12
