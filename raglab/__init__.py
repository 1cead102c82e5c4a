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
    "config": "raglab", "corpora": "raglab",
    "Document": "raglab.corpus", "CorpusError": "raglab.corpus", "CorpusWarning": "raglab.corpus",
    "load_corpus": "raglab.corpus", "corpus_stats": "raglab.corpus", "python_docs_dir": "raglab.corpus",
    "Chunk": "raglab.chunking", "ChunkSettings": "raglab.chunking", "chunk_corpus": "raglab.chunking",
    "chunk_document": "raglab.chunking", "compare_chunkings": "raglab.chunking", "find_headings": "raglab.chunking",
    "load_tokenizer": "raglab.chunking", "token_lengths": "raglab.chunking", "register_chunker": "raglab.chunking",
    "check_chunks": "raglab.chunking", "chunking": "raglab", "text": "raglab",
    "Embedder": "raglab.embeddings", "EmbeddingCache": "raglab.embeddings",
    "BM25": "raglab.bm25", "tokenize": "raglab.bm25",
    "build_index": "raglab.index", "load_index": "raglab.index", "IndexNotReady": "raglab.index",
    "sync_pgvector": "raglab.pg_index",
    "rrf": "raglab.fusion", "Hit": "raglab.records",
    "Retriever": "raglab.retrieval", "get_index": "raglab.retrieval",
    "SentenceMaxReranker": "raglab.rerank", "make_reranker": "raglab.rerank",
    "REFUSAL": "raglab.generate", "ExtractiveGenerator": "raglab.generate", "OpenAIGenerator": "raglab.generate",
    "ScriptedGenerator": "raglab.generate", "check_citations": "raglab.generate",
    "Assistant": "raglab.assistant", "Answer": "raglab.assistant", "build_assistant": "raglab.assistant",
    "choose_threshold": "raglab.assistant",
    "golden_path": "raglab.corpora", "threshold_for": "raglab.corpora",
    "load_golden": "raglab.evaluation.golden",
    "bootstrap_ci": "raglab.evaluation.statistics", "paired_test": "raglab.evaluation.statistics",
    "evaluate": "raglab.evaluation.scoreboard", "run_golden": "raglab.evaluation.scoreboard",
    "scoreboard": "raglab.evaluation.scoreboard", "format_scoreboard": "raglab.evaluation.scoreboard",
    "scores_frame": "raglab.evaluation.scoreboard", "per_question": "raglab.evaluation.scoreboard",
    "results_table": "raglab.evaluation.scoreboard", "failure_cases": "raglab.evaluation.scoreboard",
    "run_bakeoff": "raglab.evaluation.bakeoff", "choose_winner": "raglab.evaluation.bakeoff",
    "evaluation": "raglab", "experiments": "raglab", "course": "raglab", "surfaces": "raglab", "stores": "raglab",
    "plots": "raglab.surfaces", "widgets": "raglab.surfaces", "artifacts": "raglab.course",
    "exercises": "raglab.course",
}
__all__ = sorted(_API)


def __getattr__(name: str):
    """Import a public name on first use (PEP 562)."""
    if name not in _API:
        raise AttributeError(f"module 'raglab' has no attribute {name!r}")
    where = _API[name]
    module = importlib.import_module(f"{where}.{name}" if where in ("raglab", "raglab.surfaces", "raglab.course")
                                     else where)
    value = module if where in ("raglab", "raglab.surfaces", "raglab.course") else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
