"""The answer cache (issue 35): a premium answer is never served to a public user asking the same words, a
reindex empties it, a change of any setting misses it, it holds at most its size, and the trace says when an
answer came from it. Over the help-center index of conftest."""
import copy
import dataclasses
import json

import pytest
from fastapi.testclient import TestClient

from raglab.infra.answer_cache import AnswerCache, CachedAssistant, normalized
from raglab.book.assistant import Assistant
from raglab.guards.guard import Guard
from raglab.infra.traces import Tracer
from raglab.guards.detector import default_detector
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.surfaces.web.app import create_app
from tests.helpcenter_facts import PREMIUM_FACTS
from tests.surfaces.test_app import PHONE_QUESTION, PREMIUM, PUBLIC, TOKENS


@pytest.fixture()
def assistant(retriever, embedder, tmp_path):
    return Assistant(retriever, ExtractiveGenerator(embedder), threshold=0.669, guard=Guard(default_detector(embedder)),
                     trace=Tracer(tmp_path / "asks.jsonl"))


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_premium_answer_is_never_served_to_a_public_user(assistant):
    with TestClient(create_app(assistant, tokens=TOKENS)) as client:
        ask = lambda who: client.post("/ask", json={"question": PHONE_QUESTION}, headers=who).json()  # noqa: E731
        premium = ask(PREMIUM)
        assert any(f in premium["answer"] for f in PREMIUM_FACTS)
        for _ in range(3):                          # the public user asks the same words, again and again
            public = ask(PUBLIC)
            assert not any(f in public["answer"] for f in PREMIUM_FACTS), public["answer"]
        assert ask(PREMIUM) == premium              # and the premium user is served its own answer again
        stats = client.get("/health", headers=PREMIUM).json()["answer_cache"]
    assert (stats["held"], stats["hits"]) == (2, 3)   # one entry per group set; the repeats were hits
    lines = _lines(assistant.trace.path)
    assert [(line["user_groups"], line["cached"]) for line in lines] == \
        [(["premium", "public"], False), (["public"], False), (["public"], True), (["public"], True),
         (["premium", "public"], True)]


def test_the_trace_says_cached_and_the_answer_is_the_same(assistant):
    served = CachedAssistant(assistant, AnswerCache(8))
    first = served.ask("How do I reset my password?")
    again = served.ask("  how do I RESET my password ")
    assert again.cached and not first.cached
    assert again.question == "  how do I RESET my password "
    assert (again.answer, again.citations, again.refused, again.reason, again.retrieved) == \
        (first.answer, first.citations, first.refused, first.reason, first.retrieved)
    again.citations.clear()                           # a served copy cannot change what is cached
    assert served.ask("How do I reset my password?").citations == first.citations
    assert [line["cached"] for line in _lines(assistant.trace.path)] == [False, True, True]


def test_any_setting_that_changes_an_answer_changes_the_key(assistant):
    cache = AnswerCache(8)
    key = cache.key(assistant, "How do I reset my password?", None)
    assert cache.key(assistant, "how do i reset my password", ("public",)) == key
    assert cache.key(assistant, "How do I reset my password?", ("premium",)) != key
    assert cache.key(assistant, "How do I reset my passwords?", None) != key
    for change in (lambda a: setattr(a, "threshold", 0.5), lambda a: setattr(a, "k", 3),
                   lambda a: setattr(a.generator, "floor", 0.4), lambda a: setattr(a.generator, "max_sentences", 4),
                   lambda a: setattr(a, "refusal", "No."), lambda a: setattr(a, "guard", None),
                   lambda a: setattr(a, "guard", Guard()),
                   lambda a: setattr(a.retriever, "levers", dataclasses.replace(a.retriever.levers, title_weight=0.7))):
        other = copy.copy(assistant)
        other.generator, other.retriever = copy.copy(assistant.generator), copy.copy(assistant.retriever)
        change(other)
        assert cache.key(other, "How do I reset my password?", None) != key


def test_each_step_handed_in_is_in_the_key(assistant):
    """A learner's citation check, BM25 or fusion, or a check handed to the book's Assistant, changes answers:
    two learners' functions never share an entry, and the same function handed in again finds its own."""
    from raglab.book.citations import check_citations
    from raglab.course.stages import LearnerAssistant, LearnerRetriever

    def lenient(answer, n_sources):
        return []

    def strict(answer, n_sources):
        return ["1"]

    def flat(query_tokens, docs_tokens):
        return [float(len(set(query_tokens) & set(d))) for d in docs_tokens]

    def first_list_first(lists):
        return [(i, 1.0 / (1 + r)) for r, i in enumerate(dict.fromkeys(lists["dense"] + lists["bm25"]))]

    def reversed_lists(lists):
        return [(i, 1.0 / (1 + r)) for r, i in enumerate(dict.fromkeys(lists["bm25"] + lists["dense"]))]

    index, embedder, reranker = assistant.retriever.index, assistant.retriever.embedder, assistant.retriever.reranker

    def key(retriever=assistant.retriever, **kwargs):
        cls = LearnerAssistant if "citation_check" in kwargs else Assistant
        a = cls(retriever, assistant.generator, threshold=assistant.threshold, guard=assistant.guard, **kwargs)
        return AnswerCache(8).key(a, "How do I reset my password?", None)

    book = AnswerCache(8).key(assistant, "How do I reset my password?", None)
    assert key() == book == key(check=check_citations)                 # the default, named or not
    keys = [key(citation_check=lenient), key(citation_check=strict),
            key(check=lambda text, sources: check_citations(text, sources, lambda token, source: True)),
            key(LearnerRetriever(index, embedder, reranker, bm25_scores=flat)),
            key(LearnerRetriever(index, embedder, reranker, fuse=first_list_first)),
            key(LearnerRetriever(index, embedder, reranker, fuse=reversed_lists))]
    assert len({book, *keys}) == 1 + len(keys)
    assert key(citation_check=strict) == keys[1]                                   # the same function again
    assert key(LearnerRetriever(index, embedder, reranker, fuse=reversed_lists)) == keys[5]


def test_a_reindex_empties_it_and_it_holds_at_most_its_size():
    cache = AnswerCache(2)
    for k in "abc":
        cache.put(k, "v1", {"answer": k})
    assert cache.get("a", "v1") is None and cache.get("b", "v1") == {"answer": "b"}   # the oldest went first
    cache.put("d", "v1", {"answer": "d"})                                              # b was used: c goes
    assert cache.get("c", "v1") is None and cache.get("b", "v1") is not None
    assert cache.get("b", "v2") is None and len(cache) == 0                            # another index version
    with pytest.raises(ValueError, match="answer cache size 0"):
        AnswerCache(0)


def test_the_question_is_compared_normalized():
    assert normalized("Wie lange gilt der Link？") == normalized("wie lange gilt der link")
    assert normalized("sort a list") != normalized("sort a dict")


def test_what_a_model_reads_is_in_the_key(assistant, embedder):
    """A model sent whole chunks and one sent the selected sentences answer differently: they never share an
    entry, nor do two selectors with different settings."""
    from raglab.book.llm import OpenAIGenerator

    cache = AnswerCache(8)
    keys = []
    for selector in (None, ExtractiveGenerator(embedder), ExtractiveGenerator(embedder, max_sentences=5)):
        other = copy.copy(assistant)
        other.generator = OpenAIGenerator(base_url="http://127.0.0.1:9/v1", model="m",
                                          narrow=selector.narrow if selector else None)
        keys.append(cache.key(other, "How do I reset my password?", None))
    assert len(set(keys)) == 3
