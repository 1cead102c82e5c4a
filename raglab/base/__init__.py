"""The lowest base, which every room may import: settings (``config``, the one place the environment is read),
atomic files and locks (``files``), records (``records``), text helpers (``text``), progress bars (``progress``)."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.base.<module>`` loads on first use

