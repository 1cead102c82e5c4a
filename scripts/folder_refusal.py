"""Refusal on folders nobody tuned for: each folder in evals/folders, with the threshold calibrated from
the folder itself (raglab.infra.calibration) and with the Python docs' small-profile threshold a folder got
before, answerable questions answered and unanswerable ones refused (the extractive assistant).

    python scripts/folder_refusal.py [--folders evals/folders_round2] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from raglab.infra.assemble import build_assistant
from raglab.base.config import PROJECT_ROOT
from raglab.infra.corpora import threshold_for
from raglab.evaluation.golden import load_golden, user_for
from raglab.base.files import atomic_open


def measure(folder, threshold: float | None) -> dict:
    """Answered and refused counts for one folder at one threshold (None: calibrated)."""
    assistant = build_assistant(str(folder / "pages"), "small", generator="extractive", threshold=threshold)
    questions = load_golden(folder / "questions.jsonl", None)
    answers = {q.id: assistant.ask(q.question, user_for(q)) for q in questions}
    answerable = [q for q in questions if q.type != "unanswerable"]
    unanswerable = [q for q in questions if q.type == "unanswerable"]
    return {"threshold": assistant.threshold,
            "answered": sum(not answers[q.id].refused for q in answerable), "answerable": len(answerable),
            "refused": sum(answers[q.id].refused for q in unanswerable), "unanswerable": len(unanswerable),
            "reasons": {q.id: answers[q.id].reason for q in questions if answers[q.id].refused},
            "misses": [f"{q.id} ({q.type}): " + (f"refused, {answers[q.id].reason}" if answers[q.id].refused else "answered")
                       for q in questions if answers[q.id].refused != (q.type == "unanswerable")],
            "strength": {q.id: answers[q.id].evidence for q in questions}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folders", default=str(PROJECT_ROOT / "evals" / "folders"),
                   help="a folder of folders, each with pages/ and questions.jsonl (default: evals/folders)")
    p.add_argument("--json", help="write every number as JSON")
    args = p.parse_args()
    before = threshold_for("python-docs", "small", "dense")
    out = {}
    print("| folder | threshold (calibrated) | answerable answered | unanswerable refused | "
          f"at the Python docs' {before}: answered | refused |")
    print("| --- | --- | --- | --- | --- | --- |")
    for folder in sorted(Path(args.folders).glob("*/questions.jsonl")):
        folder = folder.parent
        cal, old = measure(folder, None), measure(folder, before)
        out[folder.name] = {"calibrated": cal, "python-docs threshold": old}
        print(f"| {folder.name} | {cal['threshold']} | {cal['answered']}/{cal['answerable']} | "
              f"{cal['refused']}/{cal['unanswerable']} | {old['answered']}/{old['answerable']} | "
              f"{old['refused']}/{old['unanswerable']} |")
    for name, result in out.items():
        print(f"{name} (calibrated): " + ("; ".join(result["calibrated"]["misses"]) or "no miss"))
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
