"""Would training the injection detector on the measured rounds help? Leave one round out, on dev.

Every round of blind suites measured once (rounds 1 to 5, ``ROUNDS``) is dev: its payloads (the
labelled span that carries each instruction) are instructions written by someone who had not seen
the detector, and its ordinary companion sentences are the text around them. Training on them can
only be judged round by round: for each round, the detector is trained on the shipped training
files plus the other rounds' payloads (1) and ordinary sentences (0) (``round_rows``), and the
held-out round is scored beside the detector trained on the shipped files only: passages flagged
(the rule or the learned layer; and in an English page, where a passage in another script is also
flagged), its ordinary sentences flagged, and the false positives that bound a threshold: the help
center's sentences (none beyond the rule's) and a seeded sample of the Python docs' training-half
sentences the training set does not hold (at most 0.05%). No round after ``ROUNDS`` is read.

    python scripts/injection_rounds.py               # evals/results/injection-leave-one-round-out.md
"""
from __future__ import annotations

import argparse
import random

import numpy as np

from raglab.base.config import PROJECT_ROOT
from raglab.infra.corpus import load_corpus
from raglab.evaluation.injection_report import FRESH, in_page, load_suite, round_rows
from raglab.guards.detector import InjectionDetector, train_half, training_set
from raglab.guards.injection import instruction_like
from raglab.base.text import sentences

ROUNDS = ("injection", "injection_round2", "injection_round3", "injection_round4", "injection_round5")
THRESHOLDS = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
DOCS_SAMPLE = 8_000         # training-half docs sentences scored for false positives (seeded)
DOCS_LIMIT = 0.0005         # at most this share of them flagged


def with_rows(base, rows: list[dict]):
    """``training_set()``'s arrays with ``rows`` added (weight 1 each)."""
    texts, labels, weights = base
    return (texts + [r["text"] for r in rows], np.concatenate([labels, [r["label"] for r in rows]]).astype(np.int64),
            np.concatenate([weights, np.ones(len(rows))]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--c", type=float, default=1.0)
    args = p.parse_args()
    rounds = {folder: round_rows(folder) for folder in ROUNDS}
    base = training_set()
    trained = set(base[0])
    docs = [s for d in load_corpus("python-docs", "full") if train_half(d.id)
            for s in sentences(d.text, limit=10**9) if s not in trained]
    docs = random.Random(0).sample(docs, min(DOCS_SAMPLE, len(docs)))
    hc = [s for d in load_corpus("helpcenter", "small") for s in sentences(d.text, limit=10**9) if not instruction_like(s)]
    print(f"{len(docs)} docs sentences (training half, not trained on), {len(hc)} help-center sentences; C = {args.c}")
    print("| held out | trained on | threshold | flagged | flagged in an English page | its ordinary flagged | docs flagged | help center |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    shipped = InjectionDetector(c=args.c)
    shipped._weights = shipped.train(base)
    shipped_fp = (shipped.scores(docs), shipped.scores(hc))   # the same in every round: scored once
    for held in ROUNDS:
        passages = [r["text"] for n in FRESH[held] for r in load_suite(PROJECT_ROOT / "evals" / held / f"{n}.jsonl")]
        ordinary = [r["text"] for r in rounds[held] if r["label"] == 0]
        rule = [bool(instruction_like(t)) for t in passages]
        loro = InjectionDetector(c=args.c)
        loro._weights = loro.train(with_rows(base, [r for f in ROUNDS if f != held for r in rounds[f]]))
        for name, det in (("shipped files only", shipped), ("the other rounds too", loro)):
            doc_p, hc_p = shipped_fp if det is shipped else (det.scores(docs), det.scores(hc))
            pas_p, ord_p = det.scores(passages), det.scores(ordinary)
            for t in THRESHOLDS:
                flags = [r or p >= t for r, p in zip(rule, pas_p)]
                paged = sum(in_page(x, "learned" if f else None) for x, f in zip(passages, flags))
                fp = int((doc_p >= t).sum())
                ok = "" if fp <= DOCS_LIMIT * len(docs) and not (hc_p >= t).any() else " (over)"
                print(f"| {held} | {name} | {t} | {sum(flags)}/{len(passages)} | {paged}/{len(passages)} | "
                      f"{int((ord_p >= t).sum())}/{len(ordinary)} | {fp} ({fp / len(docs):.3%}){ok} | {int((hc_p >= t).sum())} |",
                      flush=True)


if __name__ == "__main__":
    main()
