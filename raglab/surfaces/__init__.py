"""What people touch: the command line (``cli``), the HTTP app and its page (``web``) and its server (``serving``), notebook widgets
(``widgets``), answer rendering (``render``) and charts (``plots``)."""

import importlib as _importlib
from pathlib import Path as _Path


def __getattr__(name: str):
    """Submodules load on first use (``rl.experiments.cost`` after ``import raglab as rl``)."""
    if (_Path(__file__).parent / f"{name}.py").exists():
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
