"""The book: one file per pipeline stage, in data-flow order."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.book.<module>`` loads on first use

