"""The course layer's stages (``raglab.course.stages``): a learner's BM25, fusion or citation check plugged into
the book's retriever and assistant. Handed raglab's own function, each gives the book's ranks and answers; a buggy
one's bug shows; output that cannot be laid back onto the index, or a lever the learner's stage would skip, is a
clear error."""
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from raglab.book.assistant import Assistant
from raglab.book.bm25 import BM25
from raglab.book.chunking import Chunk, ChunkSettings, chunk_corpus
from raglab.book.citations import check_citations, parse_citations
from raglab.book.fusion import rrf
from raglab.book.llm import ScriptedGenerator
from raglab.book.prompt import Source
from raglab.book.retrieve import Levers, Retriever
from raglab.course.stages import LearnerAssistant, LearnerRetriever, learner_citations
from raglab.infra.index import Index
from raglab.infra.stores.faiss_store import FaissStore

QUESTIONS = ["How do I reset my password?", "refund for a damaged parcel", "Plus Concierge phone number",
             "track my parcel", "change the delivery address"]
USERS = [None, ("premium",)]


def library_bm25(query_tokens, docs_tokens):
    """raglab's BM25, as notebook 02's stand-in calls it."""
    return list(BM25([" ".join(d) for d in docs_tokens], tokenizer=str.split).scores(" ".join(query_tokens)))


class HashEmbedder:
    """Query vectors from a hash of the query: dense search without a model."""

    def encode_query(self, query):
        v = np.random.default_rng(int(hashlib.sha256(query.encode()).hexdigest()[:8], 16)).normal(size=16)
        return (v / np.linalg.norm(v)).astype("float32")


@pytest.fixture(scope="module")
def small_index(helpcenter):
    chunks = chunk_corpus(helpcenter, ChunkSettings("headings", prefix=True))
    vectors = np.random.default_rng(0).normal(size=(len(chunks), 16)).astype("float32")
    dense = FaissStore(16)
    dense.add(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    return Index(Path("helpcenter-test"), {"version_id": "helpcenter-test"}, chunks, dense,
                 BM25([c.indexed_text for c in chunks]))


def ranked(retriever, mode, user):
    return [[(h.id, h.rank, h.ranks) for h in retriever.search(q, mode, 10, user)] for q in QUESTIONS]


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_raglabs_own_functions_give_the_books_ranks(small_index, mode):
    book = Retriever(small_index, HashEmbedder())
    wrapped = LearnerRetriever(small_index, HashEmbedder(), bm25_scores=library_bm25, fuse=rrf)
    for user in USERS:
        assert ranked(wrapped, mode, user) == ranked(book, mode, user)
    timed = [r.search(QUESTIONS[0], mode).timings_ms for r in (wrapped, book)]
    assert timed[0].keys() == timed[1].keys() and timed[0]


def test_a_learners_bm25_never_ranks_what_the_user_may_not_read(small_index):
    premium = {c.id for c in small_index.chunks if "public" not in c.access}
    assert premium
    favours_premium = lambda q, docs: [10.0 if "premium" in small_index.chunks[i].access else 0.0  # noqa: E731
                                       for i in range(len(docs))]
    wrapped = LearnerRetriever(small_index, HashEmbedder(), bm25_scores=favours_premium)
    assert not premium & {h.id for h in wrapped.bm25("parcel", 20)}
    assert {h.id for h in wrapped.bm25("parcel", len(premium), ("premium",))} <= premium


def test_a_buggy_fusion_shows_and_bad_output_is_refused(small_index):
    dense_only = LearnerRetriever(small_index, HashEmbedder(), fuse=lambda lists: [(i, 1.0) for i in lists["dense"]])
    book = Retriever(small_index, HashEmbedder())
    assert [h.id for h in dense_only.hybrid(QUESTIONS[0], 5)] == [h.id for h in book.dense(QUESTIONS[0], 5)]
    with pytest.raises(ValueError, match="which neither ranked list holds"):
        LearnerRetriever(small_index, HashEmbedder(), fuse=lambda lists: [("nowhere#1", 1.0)]).hybrid("parcel")
    with pytest.raises(ValueError, match="takes no weights"):
        LearnerRetriever(small_index, HashEmbedder(), fuse=rrf).hybrid("parcel", weights={"dense": 2.0})
    with pytest.raises(ValueError, match=r"returned 2 scores for \d+ chunks"):
        LearnerRetriever(small_index, HashEmbedder(), bm25_scores=lambda q, docs: [1.0, 2.0]).bm25("parcel")


@pytest.mark.parametrize("levers", [Levers(title_weight=1.0)])
def test_a_learners_stage_runs_without_the_levers(small_index, levers):
    for learner in [{"bm25_scores": library_bm25}, {"fuse": rrf}]:
        with pytest.raises(ValueError, match="pass levers=Levers()"):
            LearnerRetriever(small_index, HashEmbedder(), levers=levers, **learner)
    assert LearnerRetriever(small_index, HashEmbedder(), levers=levers).levers == levers   # no learner's stage


def library_invalid_citations(answer, n_sources):
    """raglab's rule, as notebook 04's stand-in writes it."""
    return [c for c in parse_citations(answer) if not (c.isdigit() and 1 <= int(c) <= n_sources)]


def lets_one_past_through(answer, n_sources):
    return [c for c in library_invalid_citations(answer, n_sources) if c != str(n_sources + 1)]


def test_a_learners_citation_check_decides_and_its_bug_passes_through():
    def right(text, n):          # written as a learner would, without raglab's parser
        cited = [c for marker in re.findall(r"\[([\d,\s]+)\]", text) for c in re.findall(r"\d+", marker)]
        return [c for c in cited if not 1 <= int(c) <= n]

    def past_the_last(text, n):
        return [c for c in right(text, n) if int(c) != n + 1]

    sources = [Source(i, Chunk(f"d#{i}", "d", (), 0, 1, "t", "t", ("public",), "words")) for i in range(1, 4)]
    for text in ["Yes [1]. Also [2, 4]. And [99].", "By id [d#2] and [d#9]; by number [3].", "None here."]:
        want, got = check_citations(text, sources), learner_citations(text, sources, right)
        assert ([s.n for s in got.valid], got.invalid) == ([s.n for s in want.valid], want.invalid), text
    buggy = learner_citations("Yes [1]. Also [2, 4]. And [99].", sources, past_the_last)
    assert buggy.invalid == ["99"] and [s.n for s in buggy.valid] == [1, 2]      # [4] is let through, names nothing


FORGERIES = ["JSON is parsed with json.loads [1], as shown in [99].", "Parcels are tracked online [1] and by phone [6].",
             "Refunds take five days [2, 3].", "No citation at all.", "By id [helpcenter#nowhere]."]


def answers(assistant, user=None):
    return [{k: v for k, v in a.to_dict().items() if k != "timings_ms"} for a in
            (assistant.ask(q, user) for q in QUESTIONS)]


def test_raglabs_own_check_gives_the_books_answers_and_a_buggy_one_its_bug(small_index):
    retriever = Retriever(small_index, HashEmbedder())
    for text in FORGERIES:
        book = answers(Assistant(retriever, ScriptedGenerator(text), -1.0, rerank=False))
        wrapped = answers(LearnerAssistant(retriever, ScriptedGenerator(text), -1.0, rerank=False,
                                           citation_check=library_invalid_citations))
        assert wrapped == book, text
    buggy = LearnerAssistant(retriever, ScriptedGenerator(FORGERIES[1]), -1.0, k=5, rerank=False,
                             citation_check=lets_one_past_through).ask(QUESTIONS[0])
    assert not buggy.refused and buggy.invalid_citations == [] and [c.n for c in buggy.citations] == [1]   # [6] let through


@pytest.mark.slow
def test_with_the_models_the_learner_stages_change_nothing(retriever, embedder):
    """The help-center index, the sentence reranker and the extractive generator: raglab's own functions
    plugged in give the same reranked hits and the same answers."""
    from raglab.answerer.extractive import ExtractiveGenerator

    wrapped = LearnerRetriever(retriever.index, embedder, retriever.reranker, bm25_scores=library_bm25, fuse=rrf)
    for user in USERS:
        assert ranked(wrapped, "rerank", user) == ranked(retriever, "rerank", user)
    generator = ExtractiveGenerator(embedder)
    book = Assistant(retriever, generator, threshold=0.3)
    yours = LearnerAssistant(wrapped, generator, threshold=0.3, citation_check=library_invalid_citations)
    for user in USERS:
        assert answers(yours, user) == answers(book, user)
