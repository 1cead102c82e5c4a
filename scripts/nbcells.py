"""Edit a notebook's cells from a small Python script (for maintainers): code(src), md(src), replace_from(nb, i, cells)."""
import json
import sys
from pathlib import Path


def md(src: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": src.strip("\n").splitlines(True)}


def code(src: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": src.strip("\n").splitlines(True)}


def load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def save(path, nb):
    import uuid
    for c in nb["cells"]:
        c.setdefault("id", uuid.uuid4().hex[:8])
    Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    nb = load(sys.argv[1])
    for i, c in enumerate(nb["cells"]):
        print(f"--- [{i}] {c['cell_type']}")
        print("".join(c["source"]))
