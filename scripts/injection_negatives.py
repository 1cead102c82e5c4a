"""Write raglab/resources/docs_negatives.jsonl: ordinary sentences, labelled 0, for training the learned
injection detector (raglab.guards.detector): a seeded sample of Python-docs sentences, and, so that "not
the Python docs" is not learned as "injected", every sentence of the three fresh help folders in
evals/folders (customer-facing help text) and of this project's own prose (README files and the
notebooks' Markdown: text about models, prompts and answers written to people).

Only pages of the training half are sampled (``detector.train_half(page id)``: the first byte of the
sha256 of the id is even); the other half is where the detector's false positives are reported
without having trained on it. The docs hold no injected instruction (the rule flags none of their
sentences, and the rule's hits on the full docs are read by hand in the tests).

    python scripts/injection_negatives.py [--n 12000] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import random

from raglab.base.config import PROJECT_ROOT
from raglab.infra.corpus import load_corpus
from raglab.base.files import atomic_open
from raglab.guards.detector import train_half
from raglab.guards.injection import instruction_like
from raglab.base.text import sentence_spans, sentences

OUT = PROJECT_ROOT / "raglab" / "resources" / "docs_negatives.jsonl"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=12000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    pool = sorted({(d.id, s) for d in load_corpus("python-docs", "full") if train_half(d.id)
                   for s in sentences(d.text, limit=10**9) if 3 <= len(s.split()) <= 80})
    sample = sorted(random.Random(args.seed).sample(pool, args.n))
    rows = [{"text": text, "label": 0, "domain": "documentation", "lang": "en", "kind": "docs", "doc": doc}
            for doc, text in sample]
    rows += [{"text": t, "label": 0, "domain": "helpcenter", "lang": "en", "kind": "folder", "doc": doc}
             for doc, t in folder_sentences()]
    rows += [{"text": t, "label": 0, "domain": "documentation", "lang": "en", "kind": "prose", "doc": doc}
             for doc, t in prose_sentences()]
    with atomic_open(OUT) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    kinds = {k: sum(r["kind"] == k for r in rows) for k in ("docs", "folder", "prose")}
    print(f"{OUT}: {kinds} sentences; docs from {len({d for d, _ in sample})} pages of the training half "
          f"(pool {len(pool)} sentences)")


def usable(text: str) -> bool:
    """A sentence worth learning from: 3 to 80 words, and nothing the rule flags (quoted examples)."""
    return 3 <= len(text.split()) <= 80 and not instruction_like(text)


def folder_sentences() -> list[tuple[str, str]]:
    """Every usable sentence of the pages of evals/folders/*/pages."""
    out = []
    for folder in sorted((PROJECT_ROOT / "evals" / "folders").glob("*/pages")):
        for d in load_corpus(str(folder), "small"):
            out += [(f"{folder.parent.name}/{d.id}", s) for s in sentences(d.text, limit=10**9) if usable(s)]
    return out


def prose_sentences() -> list[tuple[str, str]]:
    """Every usable sentence of the project's README files and of the notebooks' Markdown cells."""
    texts = [(p.relative_to(PROJECT_ROOT).as_posix(), p.read_text(encoding="utf-8"))
             for p in sorted(PROJECT_ROOT.glob("*.md")) + sorted((PROJECT_ROOT / "evals").glob("*.md"))]
    for nb in sorted((PROJECT_ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        texts.append((nb.name, "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")))
    return [(name, " ".join(text[a:b].split())) for name, text in texts for a, b in sentence_spans(text)
            if usable(" ".join(text[a:b].split()))]


if __name__ == "__main__":
    main()
