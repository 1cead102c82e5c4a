"""raglab: the reusable steps of a cited RAG assistant over technical documentation.

A notebook starts with ``import raglab as rl`` and calls the pipeline by name::

    docs = rl.load_corpus("python-docs")
    chunks = rl.chunk_corpus(docs, rl.ChunkSettings("headings", prefix=True))
    assistant = rl.build_assistant("python-docs")

Names load on first use, so ``import raglab`` stays fast (no torch, FAISS or pandas until needed).
The packages by role are reachable the same way: ``rl.evaluation``, ``rl.experiments``,
``rl.course``, ``rl.surfaces`` (and the shortcuts ``rl.plots``, ``rl.widgets``, ``rl.artifacts``, ``rl.exercises``).
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> the module that defines it
_API = {
    "Document": "raglab.book.documents", "CorpusError": "raglab.base.corpus_files", "CorpusWarning": "raglab.base.corpus_files",
    "load_corpus": "raglab.infra.corpus", "corpus_stats": "raglab.infra.corpus", "attribution": "raglab.infra.corpus", "python_docs_dir": "raglab.infra.python_docs",
    "Chunk": "raglab.book.chunking", "ChunkSettings": "raglab.book.chunking", "chunk_corpus": "raglab.book.chunking",
    "chunk_document": "raglab.book.chunking", "register_chunker": "raglab.book.chunking",
    "find_headings": "raglab.book.sections",
    "load_tokenizer": "raglab.infra.tokenizer", "token_lengths": "raglab.infra.tokenizer",
    "model_windows": "raglab.infra.tokenizer",
    "check_chunks": "raglab.evaluation.chunk_checks", "compare_chunkings": "raglab.evaluation.chunk_checks",
    "Embedder": "raglab.infra.embedder", "EmbeddingCache": "raglab.infra.embedding_cache",
    "BM25": "raglab.book.bm25", "tokenize": "raglab.book.bm25",
    "build_index": "raglab.infra.index", "load_index": "raglab.infra.index", "IndexNotReady": "raglab.infra.index",
    "sync_pgvector": "raglab.infra.pg_index",
    "rrf": "raglab.book.fusion", "Hit": "raglab.base.records",
    "Retriever": "raglab.book.retrieve", "pages": "raglab.book.retrieve", "get_index": "raglab.infra.assemble",
    "SentenceMaxReranker": "raglab.book.rerank", "make_reranker": "raglab.infra.rerankers",
    "REFUSAL": "raglab.book.refusal", "choose_threshold": "raglab.book.refusal",
    "Source": "raglab.book.prompt", "build_messages": "raglab.book.prompt",
    "check_citations": "raglab.book.citations", "parse_citations": "raglab.book.citations",
    "OpenAIGenerator": "raglab.book.llm", "ScriptedGenerator": "raglab.book.llm",
    "Assistant": "raglab.book.assistant", "Answer": "raglab.book.assistant",
    "LearnerRetriever": "raglab.course.stages", "LearnerAssistant": "raglab.course.stages",
    "ExtractiveGenerator": "raglab.answerer.extractive", "Guard": "raglab.guards.guard",
    "default_detector": "raglab.guards.detector",
    "build_assistant": "raglab.infra.assemble", "llm_settings": "raglab.infra.endpoint",
    "golden_path": "raglab.infra.corpora", "threshold_for": "raglab.infra.corpora",
    "load_golden": "raglab.evaluation.golden", "golden_in_use": "raglab.course.golden_in_use",
    "corpus_in_use": "raglab.course.golden_in_use",
    "bootstrap_ci": "raglab.evaluation.statistics", "paired_test": "raglab.evaluation.statistics",
    "choose": "raglab.evaluation.statistics",
    "evaluate": "raglab.evaluation.scoreboard", "run_golden": "raglab.evaluation.scoreboard",
    "scoreboard": "raglab.evaluation.scoreboard", "format_scoreboard": "raglab.evaluation.scoreboard",
    "scores_frame": "raglab.evaluation.scoreboard", "per_question": "raglab.evaluation.scoreboard",
    "results_table": "raglab.evaluation.scoreboard", "failure_cases": "raglab.evaluation.scoreboard",
    "run_bakeoff": "raglab.evaluation.bakeoff", "choose_winner": "raglab.evaluation.bakeoff",
}
# short name -> a module reachable as ``rl.<name>``
_MODULES = {
    "config": "raglab.base.config", "text": "raglab.base.text", "corpora": "raglab.infra.corpora",
    "stores": "raglab.infra.stores", "model_chunkers": "raglab.infra.model_chunkers",
    # the book's files, in data-flow order
    "documents": "raglab.book.documents", "sections": "raglab.book.sections", "chunkers": "raglab.book.chunkers",
    "chunking": "raglab.book.chunking", "embed": "raglab.book.embed",
    "bm25": "raglab.book.bm25", "fusion": "raglab.book.fusion", "rerank": "raglab.book.rerank",
    "retrieve": "raglab.book.retrieve", "prompt": "raglab.book.prompt", "citations": "raglab.book.citations",
    "llm": "raglab.book.llm", "refusal": "raglab.book.refusal", "assistant": "raglab.book.assistant",
    "book": "raglab.book", "evaluation": "raglab.evaluation", "experiments": "raglab.experiments",
    "course": "raglab.course", "surfaces": "raglab.surfaces",
    "plots": "raglab.surfaces.plots", "widgets": "raglab.surfaces.widgets", "artifacts": "raglab.course.artifacts",
    "exercises": "raglab.course.exercises",
}
__all__ = sorted([*_API, *_MODULES])


def __getattr__(name: str):
    """Import a public name on first use (PEP 562)."""
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _API:
        value = getattr(importlib.import_module(_API[name]), name)
    else:
        raise AttributeError(f"module 'raglab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
