"""The pipeline assembled from a corpus's settings: its index (built or loaded), its retriever's levers, and the
assistant with everything it is handed (the guard, the generator, the threshold, the trace).

``raglab.infra.corpora`` holds each corpus's defaults, chosen on a dev split; a folder of the user's own gets
the Python docs' defaults and a refusal threshold calibrated from itself (``raglab.infra.calibration``).
"""
from __future__ import annotations

from dataclasses import asdict

from raglab.answerer.attribution import attributor
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.base import config
from raglab.book.assistant import Assistant
from raglab.book.chunking import ChunkSettings
from raglab.infra.embedder import Embedder
from raglab.book.bm25 import B, K1
from raglab.book.fusion import RRF_K
from raglab.book.llm import DEFAULT_BASE_URL, OpenAIGenerator
from raglab.infra.rerankers import make_reranker
from raglab.book.prompt import build_messages, prompt_text
from raglab.book.retrieve import CANDIDATES, Levers, Retriever
from raglab.infra.calibration import calibrate, record
from raglab.guards.guard import Guard
from raglab.guards.names import NameRule
from raglab.guards.detector import InjectionDetector
from raglab.infra.corpora import entry, registered, threshold_for
from raglab.infra.release_notes import ReleaseNotes
from raglab.infra.endpoint import llm_settings
from raglab.infra.index import IndexNotReady, build_index, load_index
from raglab.infra.pg_index import PgIndex, load_pg_index, sync_pgvector
from raglab.infra.traces import Tracer


def retriever_for(corpus: str, index, embedder, reranker=None) -> Retriever:
    """The retriever a corpus's assistant runs with: its lever and its release notes demoted
    (``raglab.infra.corpora``)."""
    e = entry(corpus)
    demoted = ReleaseNotes(e.demote, e.demote_factor) if e.demote and e.demote_factor != 1.0 else None
    return Retriever(index, embedder, reranker, Levers(e.title_weight), rescore=demoted)


def get_index(corpus: str = "python-docs", profile: str | None = None, settings: ChunkSettings = ChunkSettings(),
              embedder=None, kind: str = "flat", store: str = "faiss", build: bool = True):
    """The index to search, on either backend: the one function notebooks, the CLI and the app call.

    (``raglab.infra.index.build_index`` and ``load_index`` are its FAISS building blocks: build always,
    or load and refuse anything that does not match.)

    Parameters:
        corpus: a corpus name (``python-docs``, ``helpcenter``, ``python-docs-3.X``) or a folder path.
        profile: ``small`` or ``full``; None reads ``RAGLAB_PROFILE``.
        settings: the chunking (strategy, size, overlap, contextual prefix).
        embedder: the ``Embedder`` (default: the packaged MiniLM with its cache).
        kind: ``flat`` (exact) or ``hnsw``.
        store: ``faiss`` (files in the working folder) or ``pgvector`` (PostgreSQL).
        build: when True a missing or stale index is built (FAISS) or synced (pgvector);
            when False it is an ``IndexNotReady`` error naming the command that builds it.
    """
    if store not in ("faiss", "pgvector"):
        raise ValueError(f"unknown store {store!r}: choose faiss or pgvector")
    model_id = embedder.model_id if embedder else None
    precision = getattr(embedder, "precision", "float32") if embedder else None   # as build_index records it
    if store == "faiss":
        if not build:
            return load_index(corpus, profile, settings, model_id, kind, precision=precision)
        try:
            return load_index(corpus, profile, settings, model_id, kind, precision=precision)
        except IndexNotReady:
            return build_index(corpus, profile, settings, embedder, kind)
    if build:
        return sync_pgvector(corpus, profile, settings, embedder, hnsw=kind == "hnsw")[0]
    return load_pg_index(corpus, profile, settings, model_id, hnsw=kind == "hnsw", precision=precision)


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
    retriever = retriever_for(corpus, index, embedder, make_reranker(reranker, embedder))
    rerank = entry(corpus).rerank if reranker is None else True
    choice = generator or ("openai" if config.get("LLM_BASE_URL") else "extractive")
    # the injection detector's regression and the extractive generator's sentence scores were fitted on
    # the packaged MiniLM's vectors: they keep it when the index is embedded by another model
    packaged = embedder if embedder.packaged else Embedder()
    detector = InjectionDetector(packaged)   # the rule and the learned layer, on every source sentence
    guard = Guard(detector)
    extractive = ExtractiveGenerator(packaged, detector=detector)
    gen = (OpenAIGenerator(**llm_settings(), visible=guard.visible,
                           narrow=extractive.narrow if reads == "sentences" else None)
           if choice == "openai" else extractive)
    signal = "rerank" if rerank else "dense"
    assistant = Assistant(retriever, gen, threshold if threshold is not None else 0.0, rerank=rerank, guard=guard,
                          evidence=None if rerank else NameRule(index.bm25.vocab),
                          attribute=attributor(embedder) if attribution else None,
                          trace=Tracer(config.work_dir() / "traces" / "asks.jsonl"))
    if threshold is None:
        assistant.threshold = (threshold_for(corpus, profile, signal) if registered(corpus)
                               else folder_refusal(assistant, signal)["threshold"])
    return assistant


def folder_refusal(assistant: Assistant, signal: str) -> dict:
    """The refusal record of a folder's index (``raglab.infra.calibration``): read from its manifest, or
    calibrated from the folder now and recorded there (again when the evidence signal changed)."""
    index = assistant.retriever.index
    refusal = index.manifest.get("refusal")
    if not refusal or refusal.get("signal") != signal:
        refusal = calibrate(index.chunks, lambda q: assistant.retrieve(q)[1]) | {"signal": signal}
        record(index, refusal)
    return refusal


def release_notes(rescore) -> dict:
    """The release-note demotion a retriever runs with, as the write-up names it."""
    if isinstance(rescore, ReleaseNotes):
        return {"demote": rescore.prefixes, "demote_factor": rescore.factor}
    return {"demote": (), "demote_factor": 1.0}


def describe(assistant: Assistant) -> dict:
    """The system in numbers and names, for the write-up: chunking, embedding model, index,
    BM25, fusion, reranker, prompt, generator and where it runs, refusal threshold."""
    index, embedder = assistant.retriever.index, assistant.retriever.embedder
    m = index.manifest
    base_url = getattr(assistant.generator, "base_url", None)
    runs = ("in this process, no model (quotes retrieved sentences)" if base_url is None else
            f"an OpenAI-compatible server at {base_url}" + (" (local)" if "127.0.0.1" in base_url
                                                          or "localhost" in base_url else ""))
    return {"corpus": m["corpus"], "profile": m["profile"], "chunking": m["chunking"], "chunks": m["n_chunks"],
            "embedding_model": m["model"], "dim": m["dim"], "max_tokens": embedder.max_tokens,
            "index": ("PostgreSQL + pgvector" if isinstance(index, PgIndex) else "FAISS")
            + (" exact inner product on unit vectors" if m["kind"] == "flat" else " HNSW"),
            "bm25": {"k1": K1, "b": B, "idf": "Lucene, log(1 + (N - n + 0.5) / (n + 0.5))"},
            "fusion": {"method": "reciprocal rank fusion", "k": RRF_K, "depth": CANDIDATES},
            "levers": asdict(assistant.retriever.levers) | release_notes(assistant.retriever.rescore),
            "reranker": (getattr(assistant.retriever.reranker, "name", type(assistant.retriever.reranker).__name__)
                         if assistant.rerank else "none (hybrid; refusal on the top dense cosine and unknown names)"),
            "top_k": assistant.k, "threshold": assistant.threshold,
            "prompt": prompt_text(build_messages("{question}", [], assistant.refusal)),
            "generator": getattr(assistant.generator, "name", type(assistant.generator).__name__), "runs": runs,
            "default_base_url": DEFAULT_BASE_URL}
