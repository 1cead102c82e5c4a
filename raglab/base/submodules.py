"""A package's submodules, loaded on first use: the package's ``__getattr__`` (PEP 562), so that
``rl.book.bm25`` works after ``import raglab as rl`` while ``import raglab`` itself imports no submodule (no
torch, FAISS or pandas until a module that needs them is used).

>>> here = lazy_submodules("raglab.base", __file__)
>>> here("text").__name__
'raglab.base.text'
>>> here("nothing")
Traceback (most recent call last):
AttributeError: module 'raglab.base' has no attribute 'nothing'
"""
import importlib
from pathlib import Path


def lazy_submodules(package: str, init_file: str):
    """The ``__getattr__`` of ``package`` (whose ``__init__.py`` is ``init_file``): a name that is a module or a
    subpackage beside that file is imported and returned; any other name is an ``AttributeError``."""
    here = Path(init_file).parent

    def __getattr__(name: str):
        if (here / f"{name}.py").exists() or (here / name / "__init__.py").exists():
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
