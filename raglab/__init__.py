"""raglab: the reusable steps of a cited RAG assistant over technical documentation.

A notebook starts with ``import raglab as rl`` and calls the pipeline by name::

    docs = rl.load_corpus("python-docs")
    chunks = rl.chunk_corpus(docs, rl.ChunkSettings("headings", prefix=True))
    assistant = rl.build_assistant("python-docs")

The top level holds the pipeline's main names and the packages by role:
``rl.book`` (one file per stage), ``rl.base``, ``rl.infra``, ``rl.answerer``, ``rl.guards``, ``rl.evaluation``,
``rl.experiments``, ``rl.course`` and ``rl.surfaces``, whose modules load on first use
(``rl.book.bm25.tokenize``, ``rl.course.exercises.check``). Every other name has one spelling: its module's.
``import raglab`` stays fast: nothing loads until it is used (no torch, FAISS or pandas until needed).
docs/reference.md lists every name.
"""
import importlib as _importlib

__version__ = "0.1.0"

# the pipeline's main names -> the module that defines each, in data-flow order
_PIPELINE = {
    "Document": "raglab.book.documents", "load_corpus": "raglab.infra.corpus", "corpus_stats": "raglab.infra.corpus",
    "Chunk": "raglab.book.chunking", "ChunkSettings": "raglab.book.chunking", "chunk_corpus": "raglab.book.chunking",
    "chunk_document": "raglab.book.chunking", "token_lengths": "raglab.infra.tokenizer",
    "Embedder": "raglab.infra.embedder", "BM25": "raglab.book.bm25", "Hit": "raglab.base.records",
    "rrf": "raglab.book.fusion", "SentenceMaxReranker": "raglab.book.rerank", "Retriever": "raglab.book.retrieve",
    "get_index": "raglab.infra.assemble", "Assistant": "raglab.book.assistant",
    "ExtractiveGenerator": "raglab.answerer.extractive", "ScriptedGenerator": "raglab.book.llm",
    "Guard": "raglab.guards.guard", "build_assistant": "raglab.infra.assemble",
    "golden_in_use": "raglab.course.golden_in_use", "corpus_in_use": "raglab.course.golden_in_use",
    "load_golden": "raglab.evaluation.golden", "evaluate": "raglab.evaluation.scoreboard",
    "per_question": "raglab.evaluation.scoreboard", "paired_test": "raglab.evaluation.statistics",
    "choose": "raglab.evaluation.statistics",
}
# short name -> a package by role
_PACKAGES = {
    "base": "raglab.base", "book": "raglab.book", "infra": "raglab.infra", "answerer": "raglab.answerer",
    "guards": "raglab.guards", "evaluation": "raglab.evaluation", "experiments": "raglab.experiments",
    "course": "raglab.course", "surfaces": "raglab.surfaces",
}
__all__ = [*_PIPELINE, *_PACKAGES]


def __getattr__(name: str):
    """Import a public name on first use (PEP 562)."""
    if name in _PACKAGES:
        value = _importlib.import_module(_PACKAGES[name])
    elif name in _PIPELINE:
        value = getattr(_importlib.import_module(_PIPELINE[name]), name)
    else:
        raise AttributeError(f"module 'raglab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
