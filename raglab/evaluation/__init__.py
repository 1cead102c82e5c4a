"""Evaluation: golden sets (``golden``), metrics checked against pytrec_eval and ranx (``metrics``),
bootstrap intervals and paired tests (``statistics``), the scoreboard with failure tracing
(``scoreboard``) and the chunker x retriever bake-off (``bakeoff``)."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.evaluation.<module>`` loads on first use

