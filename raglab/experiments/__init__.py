"""The course's stretch experiments, each measured on a golden set with intervals and a paired test:
query rewriting (``rewrite``), long context instead of retrieval (``longcontext``), cost and latency
per answer (``cost``), chunk size against the model's limit (``chunksize``), and the retriever trained
on the docs themselves (``training``)."""

import importlib as _importlib
from pathlib import Path as _Path


def __getattr__(name: str):
    """Submodules load on first use (``rl.experiments.cost`` after ``import raglab as rl``)."""
    if (_Path(__file__).parent / f"{name}.py").exists():
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
