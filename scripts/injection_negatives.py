"""Write raglab/resources/docs_negatives.jsonl: a seeded sample of Python-docs sentences, labelled 0,
for training the learned injection detector (raglab.injection).

Only pages of the training half are sampled (``injection.train_half(page id)``: the first byte of the
sha256 of the id is even); the other half is where the detector's false positives are reported
without having trained on it. The docs hold no injected instruction (the rule flags none of their
sentences, and the rule's hits on the full docs are read by hand in the tests).

    python scripts/injection_negatives.py [--n 12000] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import random

from raglab.config import PROJECT_ROOT
from raglab.corpus import load_corpus
from raglab.files import atomic_open
from raglab.injection import train_half
from raglab.text import sentences

OUT = PROJECT_ROOT / "raglab" / "resources" / "docs_negatives.jsonl"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=12000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    pool = sorted({(d.id, s) for d in load_corpus("python-docs", "full") if train_half(d.id)
                   for s in sentences(d.text, limit=10**9) if 3 <= len(s.split()) <= 80})
    sample = sorted(random.Random(args.seed).sample(pool, args.n))
    with atomic_open(OUT) as fh:
        for doc, text in sample:
            fh.write(json.dumps({"text": text, "label": 0, "domain": "documentation", "lang": "en",
                                 "kind": "docs", "doc": doc}, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(sample)} sentences from {len({d for d, _ in sample})} pages of the training half "
          f"(pool {len(pool)} sentences)")


if __name__ == "__main__":
    main()
