"""The top level of ``raglab`` (what ``import raglab as rl`` gives): at most 40 public names, each documented in
docs/reference.md's list with the module that defines it, each one spelling only (no package module is reachable
twice), and no notebook cell reaches a private name (``obj._name``)."""
import importlib
import re
from pathlib import Path

import nbformat
import pytest

import raglab

ROOT = Path(__file__).parents[2]
PUBLIC = [n for n in dir(raglab) if not n.startswith("_")]


def _documented() -> dict[str, str]:
    text = (ROOT / "docs" / "reference.md").read_text()
    section = text.split("## The names `import raglab as rl` gives", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `rl\.(\w+)` \| `([\w.]+)` \|", section, re.M))


def test_at_most_40_public_names_and_each_is_in_the_reference():
    assert len(PUBLIC) <= 40, PUBLIC
    assert sorted(_documented()) == sorted(PUBLIC)


@pytest.mark.parametrize("name", PUBLIC)
def test_each_name_is_defined_where_the_reference_says(name):
    where = _documented()[name]
    value = getattr(raglab, name)
    assert value is importlib.import_module(where) or value is getattr(importlib.import_module(where), name)


def test_a_package_module_has_one_spelling():
    """``rl.book.bm25`` and not also ``rl.bm25``: no top-level name is a module inside a package."""
    modules = [n for n in PUBLIC if isinstance(getattr(raglab, n), type(raglab))]
    assert modules and [n for n in modules if getattr(raglab, n).__name__.count(".") > 1] == []


def test_no_notebook_cell_reaches_a_private_name():
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            found += [f"{path.name} cell {i}: {m}" for m in re.findall(r"\w\._[a-z]\w*", cell.source)]
    assert found == []
