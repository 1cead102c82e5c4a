"""Vector stores: exact or HNSW search over unit vectors, with access filters applied inside the search."""
from raglab.infra.stores.faiss_store import FaissStore

__all__ = ["FaissStore"]
