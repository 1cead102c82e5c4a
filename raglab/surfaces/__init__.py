"""What people touch: the command line (``cli``), the HTTP app and its page (``web``) and its server (``serving``), notebook widgets
(``widgets``), answer rendering (``render``) and charts (``plots``)."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.surfaces.<module>`` loads on first use

