"""The course's stretch experiments, each measured on a golden set with intervals and a paired test:
query rewriting (``rewrite``), long context instead of retrieval (``longcontext``), cost and latency
per answer (``cost``), chunk size against the model's limit (``chunksize``), and the retriever trained
on the docs themselves (``training``)."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.experiments.<module>`` loads on first use

