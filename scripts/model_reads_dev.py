"""What the packaged model makes of whole chunks against the sentences the extractive selection chose:
the same dev questions, the same retrieval and checks, two prompts.

    python scripts/model_reads_dev.py [--split dev] [--profile full] [--every N] [--attribution] [--json OUT]

Starts the packaged SmolLM2-135M server (``raglab.infra.packaged_models.start_server``) on a free port of
127.0.0.1 and stops it by its PID at the end. ``chunks`` is today's model path (``OpenAIGenerator``: the top
5 sources, whole); ``sentences`` gives the generator the extractive generator as its ``selector``
(``selected_sources``: the chosen sentences, in the selection's order, with their source numbers; a
selection that refuses does not call the model). Per prompt: facts carried (``metrics.answer_correct`` on
the answerable), unanswerable refused, valid citations among answers, median answer words, the
generation's p50/p95 (``timings_ms``), and the refusal reasons. Dev only: the test split is not read
here.
"""
from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
from collections import Counter

import numpy as np

from raglab.infra.assemble import build_assistant
from raglab.evaluation.golden import golden_file, load_golden, user_for
from raglab.evaluation.metrics import answer_correct
from raglab.base.files import atomic_open
from raglab.book.llm import OpenAIGenerator
from raglab.infra.packaged_models import MODEL_ALIAS, free_port, start_server


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q * 100)) if values else float("nan")


def run(assistant, questions) -> dict:
    rows = []
    for q in questions:
        a = assistant.ask(q.question, user_for(q))
        rows.append({"id": q.id, "type": q.type, "correct": answer_correct(q, a), "refused": a.refused,
                     "reason": a.reason, "valid": not a.invalid_citations and bool(a.citations) if not a.refused else None,
                     "words": None if a.refused else len(a.answer.split()),
                     "generate_ms": a.timings_ms.get("generate")})
    answerable = [r for r in rows if r["type"] != "unanswerable"]
    unanswerable = [r for r in rows if r["type"] == "unanswerable"]
    answered = [r for r in rows if not r["refused"]]
    ms = [r["generate_ms"] for r in rows if r["generate_ms"] is not None]
    return {"facts": round(sum(r["correct"] for r in answerable) / len(answerable), 4),
            "facts carried": sum(int(r["correct"]) for r in answerable), "answerable": len(answerable),
            "unanswerable refused": sum(int(r["correct"]) for r in unanswerable), "unanswerable": len(unanswerable),
            "citations valid": round(sum(bool(r["valid"]) for r in answered) / len(answered), 4) if answered else None,
            "median words (answered)": statistics.median([r["words"] for r in answered]) if answered else None,
            "generate ms p50": round(pct(ms, 0.5), 1), "generate ms p95": round(pct(ms, 0.95), 1),
            "reasons": dict(Counter(r["reason"] or "answered" for r in rows)), "questions": rows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--split", default="dev", choices=("dev",))
    p.add_argument("--profile", default="full")
    p.add_argument("--every", type=int, default=1, help="every Nth question of the split (default: all)")
    p.add_argument("--attribution", action="store_true",
                   help="attach a source to each uncited sentence (raglab ask --attribution): the packaged model rarely cites")
    p.add_argument("--json", help="write both runs as JSON")
    args = p.parse_args()
    questions = load_golden(golden_file("python-docs", args.profile), None, split=args.split)[:: args.every]
    assistant = build_assistant("python-docs", args.profile, generator="extractive", attribution=args.attribution)
    extractive = assistant.generator
    out = {}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # so the server below is stopped by its PID
    with start_server(free_port()) as server:
        for name, selector in (("chunks", None), ("sentences", extractive)):
            assistant.generator = OpenAIGenerator(base_url=server.base_url, model=MODEL_ALIAS, timeout=300.0,
                                                  visible=assistant.guard.visible,
                                                  narrow=selector.narrow if selector else None)
            out[name] = run(assistant, questions)
            print(name, {k: v for k, v in out[name].items() if k != "questions"}, flush=True)
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump({"split": args.split, "profile": args.profile, "every": args.every, "attribution": args.attribution,
                       "runs": out}, fh, indent=1)


if __name__ == "__main__":
    main()
