"""``Assistant.ask(question, user)``: retrieve for this user, refuse early on weak evidence, generate, check the
citations in code, and return an ``Answer``.

The assistant refuses in three places, always with the same exact text (``raglab.book.refusal``):
``weak-evidence`` before any model call (the top reranked score, or without a reranker the top dense cosine,
is below the threshold, or the question names something no chunk contains), ``model-refused`` (a model declined)
or ``no-sentence-selected`` (no model ran: the generator's sentence selection chose none), and ``invalid-citation``
/ ``no-citation`` (a citation that is not a retrieved source, or no valid citation). Taught in notebook 04.

What it is handed decides the rest: a ``guard`` (``raglab.guards.guard.Guard``: whole sentences, hidden
injected sentences, contact points, ``unsupported-claim``), an ``attribute`` function for models that do not
cite, a ``trace`` that records each answer (``raglab.infra.traces.Tracer``).
``raglab.infra.assemble.build_assistant`` hands in the defaults of a corpus.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

from raglab.book.bm25 import B, K1
from raglab.book.citations import CitationCheck, check_citations
from raglab.book.documents import PUBLIC
from raglab.book.fusion import RRF_K
from raglab.book.llm import DEFAULT_BASE_URL
from raglab.book.prompt import Source, build_messages, prompt_text, whole_text
from raglab.book.refusal import REFUSAL, is_refusal
from raglab.book.rerank import dense_evidence, evidence_strength, unknown_names
from raglab.book.retrieve import CANDIDATES


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
    cached: bool = False                 # served from the answer cache (raglab.infra.answer_cache)

    def to_dict(self) -> dict:
        """The JSON shape of ``raglab ask --json``."""
        d = asdict(self)
        d["citations"] = [{k: c[k] for k in ("n", "id", "doc", "heading", "snippet")} for c in d["citations"]]
        return d


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

    ``rerank=True`` answers from the reranked candidates and refuses on the top reranked score (the retriever
    needs a reranker); ``rerank=False`` answers from hybrid search and refuses on the top dense cosine and unknown
    names (``raglab.book.rerank.dense_evidence``).
    """

    def __init__(self, retriever, generator, threshold: float, k: int = 5,
                 refusal: str = REFUSAL, rerank: bool = True, guard=None,
                 attribute: Callable[[str, list[Source]], str] | None = None, trace: Callable[[dict], None] | None = None,
                 check: Callable[[str, list[Source]], CitationCheck] = check_citations):
        """``threshold``: the evidence strength below which it refuses (chosen on a dev split: ``raglab.book.refusal``);
        ``guard``: a ``raglab.guards.guard.Guard`` (None: sources are the chunks as retrieved, nothing hidden or
        checked beyond the citations); ``attribute``: cites an answer that has no valid citation (post-hoc);
        ``trace``: called with one record per answer; ``check``: the verdict on an answer's citations, each of
        which must name one of the sources (``raglab.book.citations.check_citations``; the course passes a
        learner's)."""
        if rerank and retriever.reranker is None:
            raise ValueError("a reranking assistant needs a reranker (its top score is the evidence strength): "
                             "pass reranker= to Retriever, or rerank=False")
        self.retriever, self.generator, self.rerank, self.guard = retriever, generator, rerank, guard
        self.threshold, self.k, self.refusal = threshold, k, refusal
        self.attribute, self.trace, self.check = attribute, trace, check
        self.answer_cache = None      # a raglab.infra.answer_cache.AnswerCache, when answers are served again (the API)

    @property
    def mode(self) -> str:
        """The retriever mode answers come from: ``rerank`` or ``hybrid``."""
        return "rerank" if self.rerank else "hybrid"

    def visible(self, source: Source) -> str:
        """What of a source a model may see (the guard hides flagged sentences)."""
        return self.guard.visible(source) if self.guard else whole_text(source)

    def retrieve(self, question: str, user: tuple[str, ...] | None = None) -> tuple[list, float, list[str]]:
        """The hits an answer is made from, the evidence strength, and the unknown names (none when reranking)."""
        hits = self.retriever.search(question, self.mode, self.k, user)
        if self.rerank:
            return hits, evidence_strength(hits), []
        unknown = unknown_names(question, self.retriever.index.bm25.vocab)
        return hits, dense_evidence(hits.top_dense or 0.0, unknown), unknown

    def sources(self, hits: list) -> list[Source]:
        """The numbered sources of these hits (the guard widens each to whole sentences)."""
        index = self.retriever.index
        if self.guard:
            return self.guard.sources(hits, index)
        return [Source(n, index.chunk(h.id)) for n, h in enumerate(hits, 1)]

    def ask(self, question: str, user: tuple[str, ...] | None = None) -> Answer:
        """Answer ``question`` for a user with these access groups (public is always included); with an
        ``answer_cache``, an answer already given for the same key is served again (``cached``)."""
        cache = self.answer_cache
        if cache is None:
            return self._ask(question, user)
        key = cache.key(self, question, user)
        answer = self._cached(key, question, user)
        if answer is None:
            answer = self._ask(question, user)
            cache.put(key, self.retriever.index.version, answer)
        return answer

    def cached(self, question: str, user: tuple[str, ...] | None = None) -> Answer | None:
        """The answer cache's answer for this question and user (traced, marked ``cached``), or None."""
        if self.answer_cache is None:
            return None
        return self._cached(self.answer_cache.key(self, question, user), question, user)

    def _cached(self, key: str, question: str, user) -> Answer | None:
        started = time.perf_counter()
        answer = self.answer_cache.get(key, self.retriever.index.version)
        if answer is None:
            return None
        answer.question, answer.cached = question, True
        answer.timings_ms = {"cache": _ms(started)}
        self._trace(answer, user, None)
        return answer

    def _ask(self, question: str, user: tuple[str, ...] | None) -> Answer:
        timings: dict[str, float] = {}
        started = time.perf_counter()
        hits, strength, unknown = self.retrieve(question, user)
        timings["retrieve"] = round(_ms(started) - self.retriever.timings_ms.get("rerank", 0), 2)
        timings["rerank"] = self.retriever.timings_ms.get("rerank", 0.0)
        sources = self.sources(hits)
        retrieved = [{"id": h.id, "doc": h.doc, "score": round(h.score, 6)} for h in hits]
        prompt, raw, attributed, check = None, "", False, None
        if strength < self.threshold:
            refused, reason = True, "weak-evidence"
            detail = {"stage": reason, "value": round(strength, 4), "threshold": self.threshold}
            if unknown:
                detail["unknown_names"] = list(unknown)
        else:
            t = time.perf_counter()
            generation = self.generator.generate(question, sources, self.refusal)
            timings["generate"] = _ms(t)
            raw = text = generation.text
            # the messages the model was sent; an offline generator: the ones a model would get
            prompt = prompt_text(generation.messages or build_messages(
                question, sources, self.refusal, getattr(self.generator, "extra_instruction", None), self.visible))
            t = time.perf_counter()
            if is_refusal(raw, self.refusal):
                refused, reason = True, "no-sentence-selected" if generation.refusal else "model-refused"
                detail = generation.refusal or {"stage": reason}     # the selection's stage, its number and threshold
            else:
                if self.attribute and not check_citations(raw, sources).valid:
                    text, attributed = self.attribute(raw, sources), True
                check = self.check(text, sources)
                refused, reason = check.reason is not None, check.reason
                if not refused and self.guard:
                    text, reason = self.guard.check(text, sources, check.valid)
                    refused = reason is not None
                detail = {"stage": reason} if refused else None
            timings["check"] = _ms(t)
        citations = [] if refused or check is None else [
            Citation(s.n, s.chunk.id, s.chunk.doc, " > ".join(s.chunk.heading), snippet(s.chunk.text)) for s in check.valid]
        answer = Answer(question, self.refusal if refused else text, citations, check.invalid if check else [],
                        refused, reason, retrieved, getattr(self.generator, "name", type(self.generator).__name__),
                        round(strength, 6), self.retriever.index.version, timings, raw, attributed, unknown, detail)
        self._trace(answer, user, prompt)
        return answer

    def describe(self) -> dict:
        """The system in numbers and names, for the write-up: chunking, embedding model, index,
        BM25, fusion, reranker, prompt, generator and where it runs, refusal threshold."""
        index, embedder = self.retriever.index, self.retriever.embedder
        m = index.manifest
        base_url = getattr(self.generator, "base_url", None)
        runs = ("in this process, no model (quotes retrieved sentences)" if base_url is None else
                f"an OpenAI-compatible server at {base_url}" + (" (local)" if "127.0.0.1" in base_url
                                                              or "localhost" in base_url else ""))
        return {"corpus": m["corpus"], "profile": m["profile"], "chunking": m["chunking"], "chunks": m["n_chunks"],
                "embedding_model": m["model"], "dim": m["dim"], "max_tokens": embedder.max_tokens,
                "index": ("PostgreSQL + pgvector" if type(index).__name__ == "PgIndex" else "FAISS")
                + (" exact inner product on unit vectors" if m["kind"] == "flat" else " HNSW"),
                "bm25": {"k1": K1, "b": B, "idf": "Lucene, log(1 + (N - n + 0.5) / (n + 0.5))"},
                "fusion": {"method": "reciprocal rank fusion", "k": RRF_K, "depth": CANDIDATES},
                "levers": asdict(self.retriever.levers),
                "reranker": (getattr(self.retriever.reranker, "name", type(self.retriever.reranker).__name__)
                             if self.rerank else "none (hybrid; refusal on the top dense cosine and unknown names)"),
                "top_k": self.k, "threshold": self.threshold,
                "prompt": prompt_text(build_messages("{question}", [], self.refusal)),
                "generator": getattr(self.generator, "name", type(self.generator).__name__), "runs": runs,
                "default_base_url": DEFAULT_BASE_URL}

    def _trace(self, answer: Answer, user, prompt: str | None) -> None:
        """Hand ``trace`` one record: the time, the user's groups, the prompt the model got (or, for an offline
        generator, the one a model would get) and the answer."""
        if self.trace is not None:
            self.trace({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "user_groups": sorted(set(user or ()) | {PUBLIC}),
                        "prompt": prompt, **answer.to_dict()})
