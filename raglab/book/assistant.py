"""``Assistant.ask(question, user)``: retrieve for this user, refuse early on weak evidence, generate,
check the citations in code, and return an ``Answer`` with its trace.

Refusal happens in three places, always with the same exact text:
``weak-evidence`` (before any model call: the top reranked score, or without a reranker the top
dense cosine, is below the threshold, or the question names something no chunk contains), ``model-refused`` (the generator declined) and
``invalid-citation`` / ``no-citation`` / ``unsupported-claim`` (the checks failed: a citation
that is not a retrieved source, no valid citation, or a number, e-mail or URL found in no source).
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from raglab.base import config

from raglab.infra import traces
from raglab.book.bm25 import K1, B
from raglab.book.chunking import ChunkSettings
from raglab.guards.calibration import calibrate, record
from raglab.infra.corpora import DEFAULT_THRESHOLD, entry, registered, threshold_for
from raglab.book.documents import PUBLIC
from raglab.book.embed import Embedder
from raglab.book.fusion import RRF_K
from raglab.guards.detector import InjectionDetector
from raglab.book.generate import (
    DEFAULT_BASE_URL,
    REFUSAL,
    ExtractiveGenerator,
    OpenAIGenerator,

    attribute,
    build_messages,
    check_citations,
    is_refusal,
    omit_untrusted_contacts,
    prompt_text,
    ungrounded,
    source_at,
)
from raglab.book.rerank import dense_evidence, evidence_strength, make_reranker, unknown_names
from raglab.book.retrieve import CANDIDATES, Levers, Retriever, get_index

_TRACE_WARNED: set[str] = set()   # trace paths whose failed write was already logged
log = logging.getLogger("raglab.book.assistant")


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


def _snippet(text: str, limit: int = 220) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rsplit(" ", 1)[0] + " ..."


class Assistant:
    """Wires retrieval, generation and the checks; appends one JSONL trace line per question.

    ``rerank=True`` answers from the reranked candidates and refuses on the top reranked score
    (the retriever needs a reranker); ``rerank=False`` answers from hybrid search and refuses on
    the top dense cosine and unknown names (``raglab.book.rerank.dense_evidence``).
    """

    def __init__(self, retriever, generator, threshold: float = DEFAULT_THRESHOLD, k: int = 5,
                 refusal: str = REFUSAL, attribution: bool = False, trace_path: str | Path | None = None,
                 rerank: bool = True, citation_check: Callable[[str, int], list] | None = None):
        if rerank and retriever.reranker is None:
            raise ValueError("a reranking assistant needs a reranker (its top score is the evidence strength): "
                             "pass reranker= to Retriever, or rerank=False")
        self.retriever, self.generator, self.rerank = retriever, generator, rerank
        self.threshold, self.k, self.refusal, self.attribution = threshold, k, refusal, attribution
        self.trace_path = Path(trace_path) if trace_path else config.work_dir() / "traces" / "asks.jsonl"
        # a learner's citation check (text, number of sources -> the forged numbers), in place of the rule's
        self.citation_check = citation_check
        self.answer_cache = None      # a raglab.infra.answer_cache.AnswerCache, when answers are served again (the API)

    @property
    def mode(self) -> str:
        """The retriever mode answers come from: ``rerank`` or ``hybrid``."""
        return "rerank" if self.rerank else "hybrid"

    def retrieve(self, question: str, user: tuple[str, ...] | None = None) -> tuple[list, float, list[str]]:
        """The hits an answer is made from, the evidence strength, and the unknown names (none when reranking)."""
        hits = self.retriever.search(question, self.mode, self.k, user)
        if self.rerank:
            return hits, evidence_strength(hits), []
        unknown = unknown_names(question, self.retriever.index.bm25.vocab)
        return hits, dense_evidence(self.retriever.signals.get("top_dense", 0.0), unknown), unknown

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
        answer.timings_ms = {"cache": round((time.perf_counter() - started) * 1000, 2)}
        self._trace(answer, user, None)
        return answer

    def _ask(self, question: str, user: tuple[str, ...] | None) -> Answer:
        timings: dict[str, float] = {}
        started = time.perf_counter()
        hits, strength, unknown = self.retrieve(question, user)
        timings["retrieve"] = round((time.perf_counter() - started) * 1000 - self.retriever.timings_ms.get("rerank", 0), 2)
        timings["rerank"] = self.retriever.timings_ms.get("rerank", 0.0)
        index = self.retriever.index
        # each source widened to whole sentences of its document: nothing is judged or quoted from a cut edge
        sources = [source_at(n, *index.locate(h.id)) for n, h in enumerate(hits, 1)]
        retrieved = [{"id": h.id, "doc": h.doc, "score": round(h.score, 6)} for h in hits]
        prompt, raw, attributed = None, "", False
        check, detail = None, None
        if strength < self.threshold:
            refused, reason = True, "weak-evidence"
            detail = {"stage": reason, "value": round(strength, 4), "threshold": self.threshold}
            if unknown:
                detail["unknown_names"] = list(unknown)
        else:
            t = time.perf_counter()
            generation = self.generator.generate(question, sources, self.refusal)
            timings["generate"] = round((time.perf_counter() - t) * 1000, 2)
            raw = generation.text
            detector = getattr(self.generator, "detector", None)
            prompt = prompt_text(build_messages(question, sources, self.refusal,
                                                getattr(self.generator, "extra_instruction", None), detector))
            t = time.perf_counter()
            text = raw
            if is_refusal(raw, self.refusal):
                refused, reason = True, "model-refused"
                detail = generation.refusal or {"stage": "model-refused"}
            else:
                if self.attribution and not check_citations(raw, sources).valid:
                    text, _ = attribute(raw, sources, self.retriever.embedder)
                    attributed = True
                check = check_citations(text, sources, self.citation_check)
                refused, reason = check.reason is not None, check.reason
                if not refused:    # a contact point only from an unflagged sentence of a cited source
                    text = omit_untrusted_contacts(text, sources, check.valid, detector)
                if not refused and ungrounded(text, sources, detector):
                    refused, reason = True, "unsupported-claim"
                if refused:
                    detail = {"stage": reason}
            timings["check"] = round((time.perf_counter() - t) * 1000, 2)
        final = self.refusal if refused else text
        citations = [] if refused or check is None else [
            Citation(s.n, s.chunk.id, s.chunk.doc, " > ".join(s.chunk.heading), _snippet(s.chunk.text)) for s in check.valid]
        answer = Answer(question, final, citations, check.invalid if check else [], refused, reason, retrieved,
                        getattr(self.generator, "name", type(self.generator).__name__), round(strength, 6),
                        index.version, timings, raw, attributed, unknown, detail)
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
        """Append one JSON line: the question, the user's groups, what was retrieved, the prompt the model
        got (or, for the extractive generator, the one a model would get) and what was said."""
        record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "user_groups": sorted(set(user or ()) | {PUBLIC}),
                  "prompt": prompt, **answer.to_dict()}
        try:   # owner-only and rotated (raglab.infra.traces); a failed write never fails the answer
            traces.append(self.trace_path, record)
        except (OSError, ValueError, TypeError) as exc:
            if str(self.trace_path) not in _TRACE_WARNED:
                _TRACE_WARNED.add(str(self.trace_path))
                log.warning("raglab: cannot write the trace %s (%s); answers go on without traces", self.trace_path, exc)


def choose_threshold(answerable: list[float], unanswerable: list[float], tolerance: float = 0.02) -> tuple[float, float]:
    """The cut that best separates two score lists: ``(threshold, J)`` with J = TPR − FPR (Youden's J).

    A question is answered when its evidence strength is at least the threshold. Cuts lie
    midway between neighbouring scores; among cuts within ``tolerance`` of the best J the lowest
    wins, so that an answerable question is not refused for a gain that is only noise.

    >>> choose_threshold([0.8, 0.7, 0.6], [0.3, 0.65])
    (0.675, 0.6666666666666666)
    """
    values = sorted(set(answerable) | set(unanswerable))
    cuts = [(a + b) / 2 for a, b in zip(values, values[1:])]

    def j(t: float) -> float:
        tpr = sum(a >= t for a in answerable) / len(answerable)
        fpr = sum(u >= t for u in unanswerable) / len(unanswerable)
        return tpr - fpr

    scored = [(t, j(t)) for t in cuts]
    best = max(score for _, score in scored)
    return next((round(t, 4), score) for t, score in scored if score >= best - tolerance)


def build_assistant(corpus: str = "python-docs", profile: str | None = None, settings=None, generator: str | None = None,
                    reranker: str | None = None, threshold: float | None = None, attribution: bool = False,
                    model: str | None = None, kind: str = "flat", build: bool = True, store: str = "faiss") -> Assistant:
    """An assistant over one corpus with everything defaulted from ``raglab.infra.corpora`` (chunking,
    reranking or not, BM25's title field, release-note demotion, refusal threshold), the packaged
    MiniLM, and the generator named (``openai`` when ``LLM_BASE_URL`` is set, else extractive).

    Parameters:
        corpus: a corpus name (``python-docs``, ``helpcenter``, ``python-docs-3.X``) or a folder path.
        profile: ``small`` or ``full``; None reads ``RAGLAB_PROFILE``.
        settings: the chunking (``ChunkSettings``); None takes the corpus's default from ``raglab.infra.corpora``.
        generator: ``extractive`` or ``openai``; None picks ``openai`` when ``LLM_BASE_URL`` is set.
        reranker: None: the corpus's default (rerank with the offline sentence reranker, or not at
            all); ``sentence`` or a cross-encoder model name: rerank with it. The retriever always
            holds a reranker, so ``search(..., "rerank")`` works either way.
        threshold: the evidence strength below which the assistant refuses; None takes the corpus's
            calibrated one for its evidence signal (``raglab.infra.corpora.threshold_for``).
        attribution: attach a source to each uncited sentence of a model's answer (post-hoc).
        model: a sentence-transformers model name, or ``trained/bi-<hash>`` (``raglab train``); None
            uses the packaged MiniLM.
        kind: ``flat`` (exact) or ``hnsw``.
        build: when False a missing or mismatched index is an error instead of being built.
        store: ``faiss`` or ``pgvector`` (PostgreSQL + pgvector).
    """

    reads = config.get("RAGLAB_MODEL_READS")
    if reads not in ("chunks", "sentences"):
        raise ValueError(f"RAGLAB_MODEL_READS={reads!r}: expected chunks or sentences")
    if settings is None:
        strategy, prefix = entry(corpus).chunking
        settings = ChunkSettings(strategy, prefix=prefix)
    embedder = Embedder(model)
    index = get_index(corpus, profile, settings, embedder, kind, store, build)
    retriever = Retriever(index, embedder, make_reranker(reranker, embedder), Levers.for_corpus(corpus))
    rerank = entry(corpus).rerank if reranker is None else True
    choice = generator or ("openai" if config.get("LLM_BASE_URL") else "extractive")
    # the injection detector's regression and the extractive generator's sentence scores were fitted on
    # the packaged MiniLM's vectors: they keep it when the index is embedded by another model
    packaged = embedder if embedder.packaged else Embedder()
    detector = InjectionDetector(packaged)   # the rule and the learned layer, on every source sentence
    extractive = ExtractiveGenerator(packaged, detector=detector)
    gen = (OpenAIGenerator(detector=detector, selector=extractive if reads == "sentences" else None)
           if choice == "openai" else extractive)
    signal = "rerank" if rerank else "dense"
    assistant = Assistant(retriever, gen, threshold if threshold is not None else 0.0, attribution=attribution,
                          rerank=rerank)
    if threshold is None:
        assistant.threshold = (threshold_for(corpus, profile, signal) if registered(corpus)
                               else folder_refusal(assistant, signal)["threshold"])
    return assistant


def folder_refusal(assistant: Assistant, signal: str) -> dict:
    """The refusal record of a folder's index (``raglab.guards.calibration``): read from its manifest, or
    calibrated from the folder now and recorded there (again when the evidence signal changed)."""
    index = assistant.retriever.index
    refusal = index.manifest.get("refusal")
    if not refusal or refusal.get("signal") != signal:
        refusal = calibrate(index.chunks, lambda q: assistant.retrieve(q)[1]) | {"signal": signal}
        record(index, refusal)
    return refusal
