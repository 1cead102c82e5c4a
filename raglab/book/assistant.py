"""``Assistant.ask(question, user)``: retrieve for this user, refuse early on weak evidence, generate, check the
citations in code, and return an ``Answer``.

The assistant refuses in three places, always with the same exact text (``raglab.book.refusal``), and a guard
it is handed adds a fourth (``unsupported-claim``, below):
``weak-evidence`` before any model call (the evidence, by default the top reranked score or without a reranker
the top dense cosine, is below the threshold), ``model-refused`` (a model declined)
or ``no-sentence-selected`` (no model ran: the generator's sentence selection chose none), and ``invalid-citation``
/ ``no-citation`` (a citation that is not a retrieved source, or no valid citation). Taught in notebook 04.

What it is handed decides the rest: an ``evidence`` step (how strongly the hits answer the question; over
technical docs without a reranker ``raglab.guards.names.NameRule`` also refuses a question naming what no page
holds), a ``guard`` (``raglab.guards.guard.Guard``: whole sentences, hidden
injected sentences, contact points, ``unsupported-claim``), an ``attribute`` function for models that do not
cite, a ``trace`` that records each answer (``raglab.infra.traces.Tracer``).
``raglab.infra.assemble.build_assistant`` hands in the defaults of a corpus.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from raglab.book.citations import CitationCheck, check_citations
from raglab.book.documents import PUBLIC
from raglab.book.llm import Generation
from raglab.book.prompt import Source, build_messages, prompt_text, whole_text
from raglab.book.refusal import REFUSAL, is_refusal
from raglab.book.rerank import evidence_strength


@dataclass
class Citation:
    """A valid citation: its number in the prompt and the chunk it points to."""

    n: int
    id: str
    doc: str
    heading: str
    snippet: str


@dataclass
class Answer:
    """What the user sees, and how it was made."""

    question: str
    answer: str
    citations: list[Citation]
    invalid_citations: list[str]
    refused: bool
    reason: str | None
    retrieved: list[dict]
    generator: str
    evidence: float
    index_version: str
    timings_ms: dict = field(default_factory=dict)
    raw: str = ""
    attributed: bool = False
    unknown_names: list = field(default_factory=list)
    refusal_detail: dict | None = None   # a refusal's stage, and where a number decided it, the number and threshold
    cached: bool = False                 # served again from an answer cache (raglab.infra.answer_cache)

    def to_dict(self) -> dict:
        """The JSON shape of ``raglab ask --json``."""
        d = asdict(self)
        d["citations"] = [{k: c[k] for k in ("n", "id", "doc", "heading", "snippet")} for c in d["citations"]]
        return d


@dataclass
class Evidence:
    """How strongly the hits answer the question (compared with the threshold), and the names the question uses
    that no chunk holds, when the evidence step looks for them."""

    strength: float
    unknown_names: list[str] = field(default_factory=list)


def reranked_evidence(question: str, hits) -> Evidence:
    """The default evidence with a reranker: the top reranked score."""
    return Evidence(evidence_strength(hits))


def dense_evidence(question: str, hits) -> Evidence:
    """The default evidence without a reranker: the best dense cosine the search saw (``Ranked.top_dense``)."""
    return Evidence(hits.top_dense or 0.0)


@dataclass
class Verdict:
    """What the checks made of a reply: the text to show, why it is refused (None: it is not), the refusal's
    detail, the citation check (None when no citation was checked) and whether the citations were attributed."""

    text: str
    reason: str | None
    detail: dict | None
    check: CitationCheck | None = None
    attributed: bool = False


def snippet(text: str, limit: int = 220) -> str:
    """The text on one line, cut at a word to at most ``limit`` characters.

    >>> snippet("Lists are\\n mutable sequences.", 12)
    'Lists are ...'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rsplit(" ", 1)[0] + " ..."


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


class Assistant:
    """Wires retrieval, generation and the checks.

    ``rerank=True`` answers from the reranked candidates and by default refuses on the top reranked score (the
    retriever needs a reranker); ``rerank=False`` answers from hybrid search and by default refuses on the top
    dense cosine.
    """

    def __init__(self, retriever, generator, threshold: float, k: int = 5,
                 refusal: str = REFUSAL, rerank: bool = True, guard=None,
                 attribute: Callable[[str, list[Source]], str] | None = None, trace: Callable[[dict], None] | None = None,
                 check: Callable[[str, list[Source]], CitationCheck] = check_citations,
                 evidence: Callable[[str, list], Evidence] | None = None):
        """``threshold``: the evidence strength below which it refuses (chosen on a dev split: ``raglab.book.refusal``);
        ``guard``: a ``raglab.guards.guard.Guard`` (None: sources are the chunks as retrieved, nothing hidden or
        checked beyond the citations); ``attribute``: cites an answer that has no valid citation (post-hoc);
        ``trace``: called with one record per answer; ``check``: the verdict on an answer's citations, each of
        which must name one of the sources (``raglab.book.citations.check_citations``; the course passes a
        learner's); ``evidence``: ``(question, hits) -> Evidence`` (None: ``reranked_evidence`` or
        ``dense_evidence``, as ``rerank`` says)."""
        if rerank and retriever.reranker is None:
            raise ValueError("a reranking assistant needs a reranker (its top score is the evidence strength): "
                             "pass reranker= to Retriever, or rerank=False")
        self.retriever, self.generator, self.rerank, self.guard = retriever, generator, rerank, guard
        self.threshold, self.k, self.refusal = threshold, k, refusal
        self.attribute, self.trace, self.check = attribute, trace, check
        self.evidence = evidence

    @property
    def mode(self) -> str:
        """The retriever mode answers come from: ``rerank`` or ``hybrid``."""
        return "rerank" if self.rerank else "hybrid"

    def visible(self, source: Source) -> str:
        """What of a source a model may see (the guard hides flagged sentences)."""
        return self.guard.visible(source) if self.guard else whole_text(source)

    def retrieve(self, question: str, user: tuple[str, ...] | None = None) -> tuple[list, float, list[str]]:
        """The hits an answer is made from, the evidence strength, and the unknown names (the evidence step's)."""
        hits = self.retriever.search(question, self.mode, self.k, user)
        found = (self.evidence or (reranked_evidence if self.rerank else dense_evidence))(question, hits)
        return hits, found.strength, found.unknown_names

    def sources(self, hits: list) -> list[Source]:
        """The numbered sources of these hits (the guard widens each to whole sentences)."""
        index = self.retriever.index
        if self.guard:
            return self.guard.sources(hits, index)
        return [Source(n, index.chunk(h.id)) for n, h in enumerate(hits, 1)]

    def gate(self, strength: float, unknown: list[str]) -> dict | None:
        """The refusal before any model call, or None: ``weak-evidence`` when the evidence is below the threshold."""
        if strength >= self.threshold:
            return None
        detail = {"stage": "weak-evidence", "value": round(strength, 4), "threshold": self.threshold}
        return detail | ({"unknown_names": list(unknown)} if unknown else {})

    def generate(self, question: str, sources: list[Source]) -> tuple[Generation, str]:
        """The generator's reply, and the prompt it was sent (for an offline generator, the book's prompt: the one a
        model would get)."""
        generation = self.generator.generate(question, sources, self.refusal)
        prompt = prompt_text(generation.messages or build_messages(question, sources, self.refusal, visible=self.visible))
        return generation, prompt

    def verify(self, generation: Generation, sources: list[Source]) -> Verdict:
        """The checks on a reply: a refusal is kept as one; a reply without a valid citation may be attributed;
        the citations must name sources (``check``); the guard checks what they claim."""
        raw = text = generation.text
        if is_refusal(raw, self.refusal):
            reason = "no-sentence-selected" if generation.refusal else "model-refused"
            return Verdict(text, reason, generation.refusal or {"stage": reason})  # the selection's stage, number, threshold
        attributed = False
        if self.attribute and not self.check(raw, sources).valid:
            text, attributed = self.attribute(raw, sources), True
        check = self.check(text, sources)
        reason = check.reason
        if reason is None and self.guard:
            text, reason = self.guard.check(text, sources, check.valid)
        return Verdict(text, reason, {"stage": reason} if reason else None, check, attributed)

    def ask(self, question: str, user: tuple[str, ...] | None = None) -> Answer:
        """Answer ``question`` for a user with these access groups (public is always included), in four steps:
        retrieve, gate on the evidence, generate, verify."""
        started = time.perf_counter()
        hits, strength, unknown = self.retrieve(question, user)
        rerank_ms = hits.timings_ms.get("rerank", 0.0)
        timings = {"retrieve": round(_ms(started) - rerank_ms, 2), "rerank": rerank_ms}
        sources = self.sources(hits)
        refused_early, prompt, raw = self.gate(strength, unknown), None, ""
        if refused_early:
            verdict = Verdict("", "weak-evidence", refused_early)
        else:
            t = time.perf_counter()
            generation, prompt = self.generate(question, sources)
            timings["generate"] = _ms(t)
            t, raw = time.perf_counter(), generation.text
            verdict = self.verify(generation, sources)
            timings["check"] = _ms(t)
        refused, check = verdict.reason is not None, verdict.check
        citations = [] if refused or check is None else [
            Citation(s.n, s.chunk.id, s.chunk.doc, " > ".join(s.chunk.heading), snippet(s.chunk.text)) for s in check.valid]
        answer = Answer(question, self.refusal if refused else verdict.text, citations, check.invalid if check else [],
                        refused, verdict.reason, [{"id": h.id, "doc": h.doc, "score": round(h.score, 6)} for h in hits],
                        getattr(self.generator, "name", type(self.generator).__name__), round(strength, 6),
                        self.retriever.index.version, timings, raw, verdict.attributed, unknown, verdict.detail)
        self.trace_answer(answer, user, prompt)
        return answer

    def trace_answer(self, answer: Answer, user, prompt: str | None) -> None:
        """Hand ``trace`` one record: the time, the user's groups, the prompt the model got (or, for an offline
        generator, the one a model would get) and the answer."""
        if self.trace is not None:
            self.trace({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "user_groups": sorted(set(user or ()) | {PUBLIC}),
                        "prompt": prompt, **answer.to_dict()})
