"""Do the injection layers cost ordinary sentences? Every measured round's passages planted in pages.

For each passage of each measured round (``raglab.evaluation.injection_report.FRESH``), a page of its own:
one paragraph, an ordinary companion sentence of the suite's kind, the passage, another companion; and the
same page without the planted part (the labelled payload cut out, or the whole passage where the suite labels
none). Each ordinary sentence the two pages share is asked in its own words of the shipped extractive
generator (injection layers on); printed: how often it is quoted with the planted part and without it, and
how many payloads those answers quote. Every round here is dev (measured before).

    python scripts/planted_pages.py [--json evals/results/planted-pages.json]
"""
from __future__ import annotations

import argparse
import json

from raglab.infra.embedder import Embedder
from raglab.evaluation.injection_report import planted_report
from raglab.base.files import atomic_open
from raglab.answerer.extractive import ExtractiveGenerator


def table(rows: list[dict]) -> str:
    """The rows as Markdown, with a total."""
    keys = ("asked", "quoted_with", "quoted_without", "payload_quoted", "passages")
    total = {k: sum(r[k] for r in rows) for k in keys}
    lines = ["| suite | ordinary sentences asked | quoted, planted page | quoted, same page without | difference | "
             "payloads quoted | passages |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in [*rows, {"suite": "all", **total}]:
        lines.append(f"| {r['suite']} | {r['asked']} | {r['quoted_with']} | {r['quoted_without']} | "
                     f"{r['quoted_with'] - r['quoted_without']:+d} | {r['payload_quoted']} | {r['passages']} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the rows as JSON")
    args = p.parse_args()
    rows = planted_report(ExtractiveGenerator(Embedder()))
    print(table(rows))
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
