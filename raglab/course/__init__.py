"""The course around the pipeline: milestone artifacts (``artifacts``), the instructor's rubric
(``rubric``), the write-up (``report``), the main job (``workbook``) and the set-up check (``envcheck``)."""

import importlib as _importlib
from pathlib import Path as _Path


def __getattr__(name: str):
    """Submodules load on first use (``rl.experiments.cost`` after ``import raglab as rl``)."""
    if (_Path(__file__).parent / f"{name}.py").exists():
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
