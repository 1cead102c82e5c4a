"""Hardening the assistant is handed (``guard.Guard``), each rule defined once: sources widened to whole sentences
(``widening``), the injection rule (``injection``, ``scripts``) and the learned detector (``detector``, ``ngrams``),
contact points (``contacts``) and specifics no source holds (``grounding``)."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.guards.<module>`` loads on first use

