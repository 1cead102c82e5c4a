"""raglab: the reusable steps of a cited RAG assistant over technical documentation."""
from raglab.chunking import Chunk, ChunkSettings, chunk_corpus, chunk_document
from raglab.corpus import CorpusError, CorpusWarning, Document, load_corpus

__all__ = ["Chunk", "ChunkSettings", "CorpusError", "CorpusWarning", "Document",
           "chunk_corpus", "chunk_document", "load_corpus"]
__version__ = "0.1.0"
