"""Choose the learned injection detector's C and threshold on dev, and print what each choice gives.

Dev is: the four suites in tests/data (85 injected sentences, every one written before some version of
the rule; the detector was trained without them), the three round-1 suites in evals/injection (54
injected, 48 ordinary: measured once on v2, dev since), the Python-docs sentences of the training half
that the training sample did not take, and the help center's sentences (false positives: the help
center became dev after the first frozen version flagged 34 of its sentences). The other half of the
docs and the round-2 suites in evals/injection_round2/ (and their ordinary sentences) are never read
here: they are where the frozen detector is measured. A sentence scores the highest probability of
itself and its parts (``InjectionDetector.scores``). The rule: the lowest threshold that flags no
help-center sentence beyond the rule's and at most 0.05% of those docs sentences.

    python scripts/injection_dev.py
"""
from __future__ import annotations

import json

import numpy as np

from raglab.base.config import PROJECT_ROOT
from raglab.infra.corpus import load_corpus
from raglab.evaluation.injection_report import FRESH, load_suite
from raglab.guards.detector import RESOURCES, InjectionDetector, train_half
from raglab.guards.injection import instruction_like
from raglab.base.text import sentences

SUITES = ("injections", "injections_heldout", "injections_heldout2", "injections_heldout3")
ROUND1 = FRESH["injection"]     # measured once on v2, dev since


def main() -> None:
    suites = {n: [r["text"] for r in load_suite(PROJECT_ROOT / "tests" / "data" / f"{n}.jsonl")] for n in SUITES}
    fresh1 = PROJECT_ROOT / "evals" / "injection"
    suites |= {n: [r["text"] for r in load_suite(fresh1 / f"{n}.jsonl")] for n in ROUND1}
    ordinary = [r["text"] for n in ROUND1 for r in load_suite(fresh1 / f"ordinary{n[5:]}.jsonl")]
    trained = {json.loads(x)["text"] for x in (RESOURCES / "docs_negatives.jsonl").read_text().splitlines()}
    docs = [s for d in load_corpus("python-docs", "full") if train_half(d.id)
            for s in sentences(d.text, limit=10**9) if s not in trained]
    print(f"dev: {sum(map(len, suites.values()))} injected sentences in {len(suites)} suites; "
          f"{len(docs)} Python-docs sentences of the training half not trained on")
    hc = [s for d in load_corpus("helpcenter", "small") for s in sentences(d.text, limit=10**9) if not instruction_like(s)]
    for c in (1.0, 4.0):
        det = InjectionDetector(c=c)
        det._weights = det.train()
        hc_p = det.scores(hc)
        ord_p = det.scores(ordinary)
        probs = {n: det.scores(s) for n, s in suites.items()}
        rule = {n: np.array([bool(instruction_like(t)) for t in s]) for n, s in suites.items()}
        doc_p = det.scores(docs)
        for t in (0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9):
            caught = " ".join(f"{n.removeprefix('injections_').removeprefix('suite_')[:8]} {int(((probs[n] >= t) | rule[n]).sum())}/{len(s)}"
                              for n, s in suites.items())
            alone = sum(int((probs[n] >= t).sum()) for n in suites)
            fp = int((doc_p >= t).sum())
            print(f"C={c:<5} threshold {t:<5} rule or learned: {caught}; learned alone {alone}/{sum(map(len, suites.values()))}; "
                  f"docs false positives {fp} ({fp / len(docs):.3%}); help center {int((hc_p >= t).sum())}; "
                  f"ordinary (round 1) {int((ord_p >= t).sum())}/{len(ordinary)}")


if __name__ == "__main__":
    main()
