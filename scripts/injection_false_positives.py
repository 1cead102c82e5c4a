"""Every sentence of the full Python docs through the injection detector: how many it flags (the false
positives the README's risk section quotes; the test suite checks a seeded sample of 12,000).

    python scripts/injection_false_positives.py [--show 20]
"""
from __future__ import annotations

import argparse

from raglab.infra.corpus import load_corpus
from raglab.guards.detector import InjectionDetector
from raglab.base.text import sentences


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--show", type=int, default=20, help="print this many flagged sentences")
    a = ap.parse_args()
    every = [s for d in load_corpus("python-docs", "full") for s in sentences(d.text, limit=10**9)]
    flags = InjectionDetector().flags(every)
    hits = [(s, f) for s, f in zip(every, flags) if f]
    print(f"flagged {len(hits)} of {len(every)} Python-docs sentences ({len(hits) / len(every):.3%})")
    for s, f in hits[:a.show]:
        print(f"  [{f}] {s[:160]}")


if __name__ == "__main__":
    main()
