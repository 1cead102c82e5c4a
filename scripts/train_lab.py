"""The training lab (issue 25): train on the full docs and score base and trained on the dev split only.

    python scripts/train_lab.py --pairs 6000 --which bi [--kinds heading,cloze] [--lr 2e-5] [--negatives page] ...

Trains with ``raglab.experiments.training.train`` (cached by content), compares with ``compare`` (each
trained system against the base in the same mode, paired), prints the comparison and appends one JSON
line per run to evals/results/training-lab.jsonl. The test split is never read here.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from raglab.base import config
from raglab.experiments import training
from raglab.experiments.mining import KINDS, NEGATIVES

OUT = config.PROJECT_ROOT / "evals" / "results" / "training-lab.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=6000)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--which", default="bi", choices=("bi", "cross", "both"))
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--cross-max-length", type=int, default=256)
    ap.add_argument("--negatives", default="page", choices=NEGATIVES)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    settings = training.settings_for("full", pairs=a.pairs, kinds=tuple(a.kinds.split(",")), epochs=a.epochs,
                                     batch_size=a.batch, learning_rate=a.lr, max_length=a.max_length,
                                     cross_max_length=a.cross_max_length, negatives=a.negatives)
    run = training.train("python-docs", "full", settings, training.WHICH if a.which == "both" else (a.which,))
    print(training.format_training(run))
    result = training.compare("python-docs", "full", run.get("bi"), run.get("cross"), split="dev")
    print(training.format_compare(result))
    models = {k: {f: run[k].record[f] for f in ("name", "seconds", "batches")}
              | {"loss_first10": sum(run[k].record["loss"][:10]) / 10, "loss_last10": sum(run[k].record["loss"][-10:]) / 10}
              for k in training.WHICH if k in run}
    row = {"label": a.label, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "settings": asdict(settings),
           "pairs": len(run["pairs"]), "models": models, "split": result["split"], "questions": result["questions"],
           "scores": result["scores"], "vs_base": result["vs_base"]}
    with OUT.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
