"""The chunking lab on the whole docs: every strategy x {dense, BM25, hybrid} on the dev split, the
semantic breakpoint chosen there, then the test split read once for the chosen few.

    python scripts/chunking_lab.py dev              # all strategies, dev split -> evals/results/chunking-lab.json
    python scripts/chunking_lab.py test A B ...     # the chunkings labelled A, B... (and the default), test split
                                                    # -> evals/results/chunking-lab-test.json

Run it in a fresh working folder (``RAGLAB_WORKDIR``) to measure every index's build time cold: the
total wall time it prints is the cold bake-off time; a second run is the warm time.
"""
from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

from raglab.book.chunking import ChunkSettings
from raglab.evaluation.chunking_lab import RACE, run_race, save_race

RESULTS = Path(__file__).resolve().parents[1] / "evals" / "results"
# the semantic rule's candidates on dev (the percentile of a page's neighbour distances cut at)
BREAKPOINTS = (80, 90, 95)


def dev_chunkers():
    """Every strategy, with the semantic strategy at each candidate breakpoint."""
    return [s for s in RACE if s.strategy != "semantic"] + [ChunkSettings("semantic", breakpoint=b) for b in BREAKPOINTS]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("split", choices=("dev", "test"))
    p.add_argument("labels", nargs="*", help="test split: the chunkings (labels as in the dev table) to read")
    args = p.parse_args()
    started = time.perf_counter()
    if args.split == "dev":
        chunkers = dev_chunkers()
    else:
        by_label = {s.label(): s for s in dev_chunkers()}
        chunkers = [by_label[label] for label in args.labels]
    table, per_question = run_race("python-docs", "full", args.split, chunkers, progress=lambda m: print(m, flush=True))
    seconds = round(time.perf_counter() - started, 1)
    out = RESULTS / ("chunking-lab.json" if args.split == "dev" else "chunking-lab-test.json")
    save_race(out, table, per_question, {"corpus": "python-docs", "profile": "full", "split": args.split,
                                         "date": datetime.date.today().isoformat(), "wall_seconds": seconds})
    print(f"{len(table)} rows in {seconds} s -> {out}")


if __name__ == "__main__":
    main()
