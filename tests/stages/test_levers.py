"""The retrieval levers chosen on the full docs' dev split, and the refusal rule without a reranker.

The title field is checked against bm25s (an independent BM25) computed per field; demotion and
the unknown-names rule are checked as properties on the help-center index.
"""
import numpy as np
import pytest

from raglab.base.records import Ranked
from raglab.book.assistant import Assistant
from raglab.book.bm25 import tokenize
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.guards.names import NameRule, name_like, unknown_names
from raglab.book.retrieve import Levers, Retriever
from raglab.infra.release_notes import ReleaseNotes, demote, version_intent
from raglab.guards.guard import Guard
from raglab.guards.detector import default_detector


def bm25s_scores(texts: list[str], query: str) -> np.ndarray:
    """BM25 of every text by bm25s (Lucene idf, k1 = 1.5, b = 0.75), fed raglab's tokens; bm25s leaves
    out the constant factor k1 + 1 = 2.5 (as Lucene >= 8 does), so it is put back."""
    import bm25s

    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index([tokenize(t) for t in texts], show_progress=False)
    known = [t for t in tokenize(query) if t in model.vocab_dict]
    return 2.5 * np.asarray(model.get_scores(known), dtype=float) if known else np.zeros(len(texts))


@pytest.mark.parametrize("query", ["Parcelo Plus refunds", "API rate limits and errors", "warranty claim"])
def test_title_field_adds_weighted_bm25_of_the_page_title(index, embedder, query):
    weight = 0.5
    retriever = Retriever(index, embedder, levers=Levers(title_weight=weight))
    body = bm25s_scores([c.indexed_text for c in index.chunks], query)
    titles = bm25s_scores([c.heading[0] if c.heading else "" for c in index.chunks], query)
    expected = body + weight * titles
    allowed = index.allowed(("premium",))
    hits = retriever.search(query, "bm25", 8, ("premium",))
    assert hits
    for h in hits:
        assert h.score == pytest.approx(expected[index.row_of[h.id]], rel=1e-5)
    best = sorted((r for r in range(len(expected)) if allowed[r] and expected[r] > 0), key=lambda r: -expected[r])[:8]
    assert sorted(expected[index.row_of[h.id]] for h in hits) == pytest.approx(sorted(expected[best]), rel=1e-5)


def test_title_field_keeps_the_access_filter(index, embedder):
    retriever = Retriever(index, embedder, levers=Levers(title_weight=2.0))
    premium = {c.id for c in index.chunks if "premium" in c.access}
    titles = {c.heading[0] for c in index.chunks if c.id in premium}
    for title in titles:
        assert not premium & {h.id for h in retriever.search(title, "bm25", 20)}
        assert not premium & {h.id for h in retriever.search(title, "hybrid", 20)}


def test_demotion_moves_matching_pages_down_unless_the_question_asks_about_versions(index, embedder):
    plain = Retriever(index, embedder)
    q = "How long do I have to return an item?"
    fused = plain.search(q, "hybrid", 10)
    target = fused[0].doc                                   # demote the page that wins without the lever
    lever = Retriever(index, embedder, rescore=ReleaseNotes((target,), 0.5))
    demoted = lever.search(q, "hybrid", 10)
    assert demoted[0].doc != target
    for h in demoted:
        base = next((f.score for f in plain.search(q, "hybrid", 40) if f.id == h.id), None)
        assert h.score == pytest.approx(base * (0.5 if h.doc == target else 1.0))
    assert [h.id for h in lever.search(q + " Which version changed this?", "hybrid", 10)] == \
           [h.id for h in plain.search(q + " Which version changed this?", "hybrid", 10)]


def test_demote_is_a_stable_rescaling():
    doc = {"a": "whatsnew/3.9.txt", "b": "library/x.txt", "c": "library/y.txt"}.get
    out = demote([("a", 0.04), ("b", 0.03), ("c", 0.03)], doc, "What does it do?", ("whatsnew/",), 0.5)
    assert out == [("b", 0.03), ("c", 0.03), ("a", 0.02)]
    assert version_intent("What changed in Python 3.11?") and not version_intent("How do I sort a list?")


def test_names_a_question_uses_and_which_are_unknown():
    assert name_like("Can I use pandas.read_csv or the PYTHON_GIL variable with HTTPAdapter?") == \
           ["pandas.read_csv", "python_gil", "httpadapter"]
    vocab = {"pandas", "read", "csv", "python", "gil", "sort"}
    assert unknown_names("Can I use pandas.read_csv or the PYTHON_GIL variable with HTTPAdapter?", vocab) == \
           ["pandas.read_csv", "python_gil", "httpadapter"]
    assert unknown_names("How do I sort a list?", vocab) == []
    # a product in capitals is a name; a plural is known when its singular is
    assert unknown_names("Which versions of MATLAB and CSV work?", vocab) == ["matlab"]
    assert unknown_names("Is it open on Saturdays, like the other Boxes?", {"saturday", "box"}) == []
    assert unknown_names("Do the Classes differ?", {"class"}) == []
    rule = NameRule(vocab)
    assert rule("How do I sort a list?", Ranked(top_dense=0.7)).strength == 0.7
    assert rule("Do I need boto3?", Ranked(top_dense=0.7)).strength < 0


def test_assistant_without_reranker_refuses_an_unknown_name_and_answers_a_known_topic(index, embedder):
    retriever = Retriever(index, embedder)                  # no reranker
    assistant = Assistant(retriever, ExtractiveGenerator(embedder), threshold=0.3, rerank=False,
                          guard=Guard(default_detector(embedder)), evidence=NameRule(index.bm25.vocab))
    answered = assistant.ask("How long do I have to return an item?")
    assert not answered.refused and answered.evidence == pytest.approx(retriever.search(
        "How long do I have to return an item?", "dense", 1)[0].score, abs=1e-6)
    refused = assistant.ask("How long do I have to return an item bought with Zorblaxify9?")
    assert refused.refused and refused.reason == "weak-evidence" and refused.unknown_names == ["zorblaxify9"]
    # the book's own evidence step, handed nothing, reads the top dense cosine alone: no name is looked for
    plain = Assistant(retriever, ExtractiveGenerator(embedder), threshold=0.3, rerank=False)
    asked = plain.ask("How long do I have to return an item bought with Zorblaxify9?")
    assert asked.unknown_names == [] and asked.evidence == pytest.approx(refused.evidence + 1.0, abs=1e-6)
    with pytest.raises(ValueError, match="needs a reranker"):
        Assistant(retriever, ExtractiveGenerator(embedder), threshold=0.5)
