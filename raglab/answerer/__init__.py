"""The offline answerer: quote the retrieved sentences that answer (``extractive``), each under its API line
(``quotes``), scored by cosine and term overlap (``terms``) or a fitted scorer (``selection``); and post-hoc
attribution for models that do not cite (``attribution``)."""

from raglab.base.submodules import lazy_submodules as _lazy

__getattr__ = _lazy(__name__, __file__)   # ``rl.answerer.<module>`` loads on first use

