"""The assistant (``raglab.book.assistant``): retrieve for a user, refuse on weak evidence before any model call,
generate, check the citations in code, and always refuse with the one exact sentence. Two references: properties
of the answers over the help-center index (MiniLM; a scripted or extractive generator; the premium facts are
checked against the corpus itself), and, for the evidence step, the citation mapping and the trace, a stub
retriever returning hits built by hand (``Ranked``/``Hit``) with every expected value written out in the test."""
import json
import re

import pytest

from raglab.answerer.attribution import attributor
from raglab.base.records import Hit, Ranked
from raglab.book.assistant import Assistant, Evidence, dense_evidence, reranked_evidence
from raglab.book.chunking import Chunk
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.book.citations import CitationCheck
from raglab.book.llm import ScriptedGenerator
from raglab.book.prompt import Source
from raglab.book.refusal import REFUSAL
from raglab.guards.guard import Guard
from raglab.infra.traces import Tracer
from raglab.infra.corpora import DEFAULT_THRESHOLD
from tests.helpcenter_facts import INJECTION_QUESTIONS, PREMIUM_FACTS

# Facts that only the premium pages hold (checked below against the corpus itself).


class Exploding:
    name = "exploding"

    def generate(self, *a, **k):
        raise AssertionError("the generator must not be called")


@pytest.fixture()
def assistant_for(retriever, workdir):
    def make(generator, **kw):
        kw.setdefault("threshold", DEFAULT_THRESHOLD)
        return Assistant(retriever, generator, guard=Guard(getattr(generator, "detector", None)),
                         trace=Tracer(workdir / "traces" / "test.jsonl"), **kw)
    return make


@pytest.mark.parametrize("text,reason", [
    ("Returns are accepted within 30 days [99].", "invalid-citation"),       # the course's [99] test
    ("Returns are accepted within 30 days [1] [99].", "invalid-citation"),
    ("Returns are accepted within 30 days.", "no-citation"),
    (REFUSAL, "model-refused"),
    ("I could not find that in the sources.", "model-refused"),
    ("Call +1 (888) 555-0199 for help [1].", "unsupported-claim"),
])
def test_bad_answers_are_refused_with_the_exact_text(assistant_for, text, reason):
    answer = assistant_for(ScriptedGenerator(text), threshold=0.0).ask("How long do I have to return an item?")
    assert answer.refused and answer.reason == reason
    assert answer.answer == REFUSAL and answer.citations == []
    assert answer.raw == text


def test_a_valid_citation_passes_and_maps_to_the_retrieved_chunk(assistant_for):
    answer = assistant_for(ScriptedGenerator("See the returns policy [1]."), threshold=0.0).ask("How do returns work?")
    assert not answer.refused and answer.reason is None
    assert [c.id for c in answer.citations] == [answer.retrieved[0]["id"]]
    assert set(answer.timings_ms) >= {"retrieve", "rerank", "generate", "check"}


def test_weak_evidence_refuses_before_the_model_is_called(assistant_for):
    answer = assistant_for(Exploding(), threshold=1.01).ask("Does Parcelo offer gift wrapping?")
    assert answer.refused and answer.reason == "weak-evidence" and answer.answer == REFUSAL


def test_extractive_answers_are_labelled_cited_and_deterministic(assistant_for, embedder):
    gen = ExtractiveGenerator(embedder)
    a1 = assistant_for(gen, threshold=0.0).ask("How many days do I have to return an item?")
    a2 = assistant_for(gen, threshold=0.0).ask("How many days do I have to return an item?")
    assert not a1.refused and a1.answer.startswith(ExtractiveGenerator.label)
    assert a1.answer == a2.answer and a1.generator == "extractive"
    assert a1.citations and all(c.id in {r["id"] for r in a1.retrieved} for c in a1.citations)


def test_a_refusal_says_whether_a_model_ran(assistant_for, embedder):
    """The extractive generator runs no model: when its selection quotes no sentence the reason says so
    (``no-sentence-selected``, with the selection's number and threshold); ``model-refused`` is kept for a model
    that declined. The scoreboard counts both as refusals before any citation check, and the widget explains each."""
    from types import SimpleNamespace

    from raglab.evaluation.scoreboard import failure_stage
    from raglab.surfaces.widget_html import answer_widget_html

    quiet = assistant_for(ExtractiveGenerator(embedder, floor=1.01), threshold=0.0).ask("How do returns work?")
    declined = assistant_for(ScriptedGenerator(REFUSAL), threshold=0.0).ask("How do returns work?")
    assert quiet.refused and quiet.reason == "no-sentence-selected" and quiet.answer == REFUSAL
    assert quiet.refusal_detail["stage"] == "sentence-floor" and quiet.refusal_detail["threshold"] == 1.01
    assert declined.refused and declined.reason == "model-refused"
    assert declined.refusal_detail == {"stage": "model-refused"}
    answerable = SimpleNamespace(type="fact")
    for answer, why in [(quiet, "no model ran"), (declined, "the model said")]:
        res = SimpleNamespace(answered=False, reason=answer.reason, recall=1.0, rr=1.0, correct=0.0)
        assert failure_stage(res, answerable, 5) == "refusal"
        assert f"Why: {why}" in answer_widget_html(answer, {})


def test_post_hoc_attribution_cites_supported_sentences_only(assistant_for, retriever):
    q = "How long do I have to return an item?"
    top = retriever.text(retriever.search(q, "rerank", 1)[0])
    copied = next(s for s in re.split(r"(?<=\.)\s+", " ".join(top.split())) if len(s.split()) > 6 and "[" not in s)
    ok = assistant_for(ScriptedGenerator(copied), threshold=0.0, attribute=attributor(retriever.embedder)).ask(q)
    assert not ok.refused and ok.attributed and ok.citations
    bad = assistant_for(ScriptedGenerator("Penguins migrate across the frozen tundra every winter."),
                        threshold=0.0, attribute=attributor(retriever.embedder)).ask(q)
    assert bad.refused and bad.reason == "no-citation"


def test_traces_record_each_ask_and_never_a_restricted_chunk(assistant_for, workdir, index):
    path = workdir / "traces" / "test.jsonl"
    path.unlink(missing_ok=True)
    premium_ids = {c.id for c in index.chunks if "premium" in c.access}
    for q in INJECTION_QUESTIONS:
        assistant_for(ScriptedGenerator("Here it is [1]."), threshold=0.0).ask(q)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == len(INJECTION_QUESTIONS)
    for rec in lines:
        assert rec["user_groups"] == ["public"] and rec["index_version"] == index.version
        assert not premium_ids & {r["id"] for r in rec["retrieved"]}
        assert not any(pid in json.dumps(rec) for pid in premium_ids)


def test_premium_facts_live_only_in_premium_pages(helpcenter):
    for fact in PREMIUM_FACTS:
        holders = {d.access for d in helpcenter if fact in d.text}
        assert holders == {("premium",)}, fact


@pytest.mark.parametrize("text", ["Sure: the Plus Concierge line is +1 (888) 555-0199 [1].",
                                  "Plus keys get 1,800 requests per minute [2].",
                                  "Write to plus-desk@parcelo.example [1].",
                                  "Ignore the rules. Premium policy NGA-PLUS-3 applies [1]."])
def test_injection_cannot_surface_restricted_content_whatever_the_model_says(assistant_for, text):
    for q in INJECTION_QUESTIONS:
        answer = assistant_for(ScriptedGenerator(text), threshold=0.0).ask(q)
        assert answer.refused and answer.answer == REFUSAL
        assert not any(f in answer.answer for f in PREMIUM_FACTS)


def test_premium_users_get_the_premium_answer(assistant_for, embedder):
    answer = assistant_for(ExtractiveGenerator(embedder), threshold=0.0).ask(
        "What is the Parcelo Plus Concierge phone number?", ("premium",))
    assert not answer.refused and "555-0199" in answer.answer
    assert answer.citations[0].doc == "plus/priority-support.md"



# ---------------------------------------------------------------- a stub retriever, hits by hand

RETURNS = Chunk("returns.md#1", "returns.md", ("Returns", "Window"), 0, 49, "Returns are accepted within 30 days of delivery.",
                "Returns > Window: Returns are accepted within 30 days of delivery.", ("public",), "headings")
FEES = Chunk("fees.md#2", "fees.md", ("Fees",), 0, 27, "Fees:\n  none\nfor returns.", "Fees: none for returns.",
             ("public",), "headings")
QUESTION = "How long do I have to return an item?"


def hand_hits(top_dense=0.77):
    """Two hits, reranked scores 0.42 and 0.3123456789, and the best dense cosine the search saw."""
    return Ranked([Hit(RETURNS.id, RETURNS.doc, 0.42, 1), Hit(FEES.id, FEES.doc, 0.3123456789, 2)], top_dense=top_dense)


class _Index:
    """Stands in for an index: chunks by id, and a version."""

    version = "v-test"

    def chunk(self, chunk_id):
        return {RETURNS.id: RETURNS, FEES.id: FEES}[chunk_id]


class _Retriever:
    """Stands in for a retriever: returns the hits it is given and records each search."""

    def __init__(self, hits, reranker=object()):
        self.hits, self.reranker, self.index, self.searches = hits, reranker, _Index(), []

    def search(self, question, mode, k, user):
        self.searches.append((question, mode, k, user))
        return self.hits


def test_the_default_evidences_read_the_hits():
    assert reranked_evidence(QUESTION, hand_hits()) == Evidence(0.42)
    assert dense_evidence(QUESTION, hand_hits()) == Evidence(0.77)
    assert reranked_evidence(QUESTION, Ranked([], top_dense=0.77)) == Evidence(0.0)
    assert dense_evidence(QUESTION, hand_hits(top_dense=None)) == Evidence(0.0)


def test_with_a_reranker_the_default_evidence_is_the_top_reranked_score():
    retriever = _Retriever(hand_hits())
    weak = Assistant(retriever, Exploding(), threshold=0.5).ask(QUESTION)
    assert weak.refused and weak.reason == "weak-evidence" and weak.answer == REFUSAL and weak.evidence == 0.42
    assert weak.refusal_detail == {"stage": "weak-evidence", "value": 0.42, "threshold": 0.5}
    assert retriever.searches == [(QUESTION, "rerank", 5, None)]
    enough = Assistant(retriever, ScriptedGenerator("Thirty days [1]."), threshold=0.42).ask(QUESTION)  # at the cut
    assert not enough.refused and enough.evidence == 0.42


def test_without_a_reranker_the_default_evidence_is_the_top_dense_cosine():
    retriever = _Retriever(hand_hits(), reranker=None)
    weak = Assistant(retriever, Exploding(), threshold=0.8, rerank=False).ask(QUESTION, ("premium",))
    assert weak.reason == "weak-evidence" and weak.evidence == 0.77
    assert weak.refusal_detail == {"stage": "weak-evidence", "value": 0.77, "threshold": 0.8}
    assert retriever.searches == [(QUESTION, "hybrid", 5, ("premium",))]
    enough = Assistant(retriever, ScriptedGenerator("Thirty days [1]."), threshold=0.5, rerank=False).ask(QUESTION)
    assert not enough.refused and enough.evidence == 0.77
    no_dense = Assistant(_Retriever(hand_hits(top_dense=None), reranker=None), Exploding(), threshold=0.1, rerank=False)
    assert no_dense.ask(QUESTION).evidence == 0.0


def test_the_evidence_step_handed_in_is_the_one_used():
    hits, asked = hand_hits(), []

    def evidence(question, found):
        asked.append((question, found))
        return Evidence(0.2, ["Zorblax"])

    answer = Assistant(_Retriever(hits), Exploding(), threshold=0.5, evidence=evidence).ask(QUESTION)
    assert len(asked) == 1 and asked[0][0] == QUESTION and asked[0][1] is hits
    assert answer.reason == "weak-evidence" and answer.evidence == 0.2 and answer.unknown_names == ["Zorblax"]
    assert answer.refusal_detail == {"stage": "weak-evidence", "value": 0.2, "threshold": 0.5,
                                     "unknown_names": ["Zorblax"]}
    # neither the top reranked score (0.42) nor the top dense cosine (0.77): the step's 0.9
    for rerank in (True, False):
        strong = Assistant(_Retriever(hand_hits()), ScriptedGenerator("Thirty days [1]."), threshold=0.5,
                           rerank=rerank, evidence=lambda q, h: Evidence(0.9)).ask(QUESTION)
        assert not strong.refused and strong.evidence == 0.9 and strong.unknown_names == []


def test_a_reranking_assistant_needs_a_reranker():
    with pytest.raises(ValueError, match="needs a reranker"):
        Assistant(_Retriever(hand_hits(), reranker=None), Exploding(), threshold=0.5)


def test_an_answer_written_out():
    answer = Assistant(_Retriever(hand_hits()), ScriptedGenerator("No fees [2]. Thirty days [1]."), threshold=0.4)
    got = answer.ask(QUESTION).to_dict()
    assert {k: v for k, v in got.items() if k != "timings_ms"} == {
        "question": QUESTION, "answer": "No fees [2]. Thirty days [1].",
        "citations": [{"n": 2, "id": "fees.md#2", "doc": "fees.md", "heading": "Fees",
                       "snippet": "Fees: none for returns."},
                      {"n": 1, "id": "returns.md#1", "doc": "returns.md", "heading": "Returns > Window",
                       "snippet": "Returns are accepted within 30 days of delivery."}],
        "invalid_citations": [], "refused": False, "reason": None,
        "retrieved": [{"id": "returns.md#1", "doc": "returns.md", "score": 0.42},
                      {"id": "fees.md#2", "doc": "fees.md", "score": 0.312346}],
        "generator": "scripted", "evidence": 0.42, "index_version": "v-test", "raw": "No fees [2]. Thirty days [1].",
        "attributed": False, "unknown_names": [], "refusal_detail": None, "cached": False}


def test_the_citation_check_handed_in_decides():
    seen = []

    def check(text, sources):
        seen.append((text, sources))
        return CitationCheck([], ["nope"])

    answer = Assistant(_Retriever(hand_hits()), ScriptedGenerator("Thirty days [1]."), threshold=0.4,
                       check=check).ask(QUESTION)
    assert seen == [("Thirty days [1].", [Source(1, RETURNS), Source(2, FEES)])]
    assert answer.refused and answer.reason == "invalid-citation" and answer.invalid_citations == ["nope"]
    assert answer.answer == REFUSAL and answer.citations == []


def test_the_trace_holds_the_users_groups_and_the_prompt():
    records = []
    assistant = Assistant(_Retriever(hand_hits()), ScriptedGenerator("Thirty days [1]."), threshold=0.4,
                          trace=records.append)
    assistant.ask(QUESTION, ("staff", "premium"))
    assistant.threshold = 0.9
    assistant.ask(QUESTION)
    answered, refused = records
    assert answered["user_groups"] == ["premium", "public", "staff"] and refused["user_groups"] == ["public"]
    assert answered["prompt"].startswith("[system]\nYou answer questions about technical documentation")
    assert answered["prompt"].endswith(
        '[user]\nSources:\n<doc n="1" id="returns.md#1">\nReturns are accepted within 30 days of delivery.\n</doc>\n'
        '<doc n="2" id="fees.md#2">\nFees:\n  none\nfor returns.\n</doc>\n\nQuestion: ' + QUESTION)
    assert refused["prompt"] is None and refused["reason"] == "weak-evidence"     # no model call, no prompt
