"""Every third-party module the project imports is installed from the project's own requirement files.

A new virtual environment holds only what ``./setup.sh`` (and ``./setup.sh --tests``) install from
``requirements*.txt``; a package that happens to be on the developer's machine (the machine's own Python,
or a dependency of a dependency) is not a requirement. Each ``import`` in ``raglab/``, ``tests/``, ``bench/``
and ``scripts/`` and in the notebooks' code cells (at any depth: lazy imports inside functions count too) is mapped to the distributions that
provide it (``importlib.metadata.packages_distributions``), and one of them must be named in a requirement file.
"""
import ast
import importlib.metadata
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("raglab", "tests", "bench", "scripts", "notebooks")


def requirement_names(files) -> set[str]:
    """The distribution names in pip requirement files, normalized (PEP 503: ``PyYAML`` -> ``pyyaml``).

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "r.txt"
    >>> _ = f.write_text("# a comment\\nPyYAML==6.0.3\\nuvicorn[standard]==0.54.0\\npsycopg_binary >= 3\\n")
    >>> sorted(requirement_names([f]))
    ['psycopg-binary', 'pyyaml', 'uvicorn']
    """
    names = set()
    for path in files:
        for line in Path(path).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-"):
                names.add(normalize(re.split(r"[\s\[<>=!~;@]", line, maxsplit=1)[0]))
    return names


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imports(path: Path):
    """``(where, top-level module)`` for every absolute import in a Python file (``where``: its line), or in
    a notebook's code cells (``where``: ``cell N``; IPython's ``%`` and ``!`` lines left out)."""
    if path.suffix != ".ipynb":
        yield from _imports(ast.parse(path.read_text(), str(path)), "")
        return
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    for n, cell in enumerate(cells):
        lines = "".join(cell["source"]).splitlines()
        code = "\n".join("" if _magic(line) else line for line in lines)
        yield from _imports(ast.parse(code, f"{path} cell {n}"), f"cell {n} ")


def _magic(line: str) -> bool:
    """An IPython magic (``%time``) or shell line (``!ls``), not Python; ``!=`` continues an expression."""
    line = line.lstrip()
    return line.startswith("%") or (line.startswith("!") and not line.startswith("!="))


def _imports(tree, prefix: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((f"{prefix}line {node.lineno}" if prefix else node.lineno, alias.name.split(".")[0])
                        for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield f"{prefix}line {node.lineno}" if prefix else node.lineno, node.module.split(".")[0]


def local_modules(root: Path, folders) -> set[str]:
    """Names the project's own files and folders give a module (``raglab``, ``conftest``, a test file that
    another imports, a bench script)."""
    names = {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if p.is_dir()}
    for folder in folders:
        names |= {p.stem for p in (root / folder).rglob("*.py")}
        names |= {p.name for p in (root / folder).rglob("*") if p.is_dir()}
    return names


def unlisted_imports(root: Path, folders=SCANNED, requirement_files=None) -> list[str]:
    """``file:line: module`` for each import of a third-party module that no requirement file provides."""
    listed = requirement_names(requirement_files or sorted(root.glob("requirements*.txt")))
    provided = importlib.metadata.packages_distributions()
    local = local_modules(root, folders)
    problems = []
    for folder in folders:
        for path in sorted(p for pattern in ("*.py", "*.ipynb") for p in (root / folder).rglob(pattern)):
            for line, module in imports(path):
                if module in sys.stdlib_module_names or module in local or module == "__future__":
                    continue
                dists = {normalize(d) for d in provided.get(module, ())}
                if not dists & listed:
                    where = f"provided by {', '.join(sorted(dists))}" if dists else "no installed distribution provides it"
                    problems.append(f"{path.relative_to(root)}:{line}: {module} ({where}; in no requirements*.txt)")
    return problems


def test_every_imported_package_is_in_a_requirement_file():
    problems = unlisted_imports(ROOT)
    assert not problems, "imports that a new environment would not install:\n" + "\n".join(problems)


def test_the_notebooks_import_only_what_the_main_job_installs():
    """``./setup.sh`` without ``--tests`` installs requirements.txt alone, and the main job runs every notebook."""
    problems = unlisted_imports(ROOT, folders=("notebooks",), requirement_files=[ROOT / "requirements.txt"])
    assert not problems, "notebook imports that ./setup.sh does not install:\n" + "\n".join(problems)


def test_a_test_importing_an_unlisted_package_is_named(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("import json\nimport numpy as np\n\ndef f():\n    import yaml\n")
    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    assert unlisted_imports(tmp_path, folders=("tests",)) == [
        "tests/test_x.py:5: yaml (provided by pyyaml; in no requirements*.txt)"]
    (tmp_path / "requirements-tests.txt").write_text("PyYAML==6.0.3\n")
    assert unlisted_imports(tmp_path, folders=("tests",)) == []


def test_a_module_no_distribution_provides_is_named(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "b.py").write_text("from no_such_package_here import thing\nimport helper\n")
    (tmp_path / "bench" / "helper.py").write_text("")
    (tmp_path / "requirements.txt").write_text("")
    assert unlisted_imports(tmp_path, folders=("bench",)) == [
        "bench/b.py:1: no_such_package_here (no installed distribution provides it; in no requirements*.txt)"]
