"""The course around the pipeline: milestone artifacts (``artifacts``), the instructor's rubric
(``rubric``), the write-up (``report``), the main job (``workbook``) and the set-up check (``envcheck``)."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.course.<module>`` loads on first use

