"""The README's reading order of the book is what the book holds: each file, its first docstring line, its
lines, and the notebooks that teach it (from its docstring), in data-flow order; and the book keeps its size."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "raglab" / "book"
ORDER = ["documents", "sections", "chunkers", "model_chunkers", "chunking", "embed", "bm25", "memory_index", "fusion", "rerank", "retrieve", "prompt",
         "citations", "llm", "refusal", "assistant"]
BEGIN, END = "<!-- reading order: made by tests/base/test_reading_order.py -->", "<!-- end of the reading order -->"


def row(name: str) -> str:
    path = BOOK / f"{name}.py"
    text = path.read_text()
    doc = ast.get_docstring(ast.parse(text)) or ""
    taught = sorted(set(re.findall(r"(?:notebooks? |, | and )(\d\d)\b", " ".join(doc.split()))))
    paragraph = " ".join(doc.split("\n\n")[0].split())
    first = re.split(r"(?<=\.)\s", paragraph)[0].rstrip(".").replace("``", "`")
    return f"| `raglab/book/{name}.py` | {len(text.splitlines())} | {', '.join(taught) or '-'} | {first} |"


def table() -> str:
    return "\n".join([BEGIN, "| file | lines | notebook | what it holds |", "| --- | --- | --- | --- |",
                      *map(row, ORDER), END])


def test_readme_reading_order_is_the_book():
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme
    shown = readme[readme.index(BEGIN):readme.index(END) + len(END)]
    assert shown == table(), "the README's reading order is stale; replace it with:\n" + table()


def test_every_book_file_is_in_the_reading_order():
    assert sorted(p.stem for p in BOOK.glob("*.py") if p.stem != "__init__") == sorted(ORDER)


def test_every_book_file_names_the_notebook_that_teaches_it():
    assert [name for name in ORDER if "| - |" in row(name)] == []


def test_no_book_file_is_over_300_lines():
    """A file a learner reads in one sitting, after the notebook that teaches it."""
    long = {p.name: n for p in BOOK.glob("*.py") if (n := len(p.read_text().splitlines())) > 300}
    assert long == {}


def test_every_book_file_has_its_test_file():
    """A reader who opens ``raglab/book/X.py`` finds its tests in ``tests/book/test_X.py``."""
    missing = [name for name in ORDER if not (ROOT / "tests" / "book" / f"test_{name}.py").is_file()]
    assert missing == []
