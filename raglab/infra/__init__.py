"""Infrastructure under the course: packaged models and the plain-torch MiniLM, the tokenizer, the embedding and
answer caches, index files (FAISS) and stores (FAISS, pgvector), the corpus registry and the Python docs archive,
traces, the model endpoint's settings, refusal calibration for a user's folder, and ``assemble`` (an assistant
built from a corpus's settings)."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.infra.<module>`` loads on first use

