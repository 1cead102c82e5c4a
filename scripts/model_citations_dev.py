"""Can the packaged model give cited answers? Free text against a grammar, on the full docs' dev split.

    RAGLAB_PROFILE=full python scripts/model_citations_dev.py [--every 5] [--json evals/results/model-cited-answers-dev.json]

The evaluation text (written before the run) is evals/results/model-cited-answers.md. The script starts the
packaged SmolLM2-135M-Instruct on a free port of 127.0.0.1 (stopped by its PID at the end), builds the default
assistant with it as the generator, and asks every ``--every``-th dev question twice: with the prompt as it is,
and with llama.cpp's grammar below. The checks in code (weak-evidence refusal, citation check) are the same.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from raglab.book.llm import openai_client
from raglab.book.refusal import REFUSAL
from raglab.evaluation.golden import golden_path, load_golden, user_for
from raglab.evaluation.metrics import facts_present
from raglab.evaluation.statistics import paired_test
from raglab.infra.assemble import build_assistant
from raglab.infra.corpus import load_corpus
from raglab.infra.packaged_models import MODEL_ALIAS, free_port, start_server


def citing_grammar(refusal: str = REFUSAL, max_source: int = 5, max_sentences: int = 3) -> str:
    """A GBNF grammar: the refusal word for word, or 1 to ``max_sentences`` sentences each ending in ``[n]``.

    >>> print(citing_grammar().splitlines()[2])
    sentence ::= [A-Z`(] body " [" [1-5] "]."
    """
    words = refusal.replace("\\", "\\\\").replace('"', '\\"')
    more = " ".join(['(" " sentence)?'] * (max_sentences - 1))
    return "\n".join([
        f'root ::= refusal | sentence {more}',
        f'refusal ::= "{words}"',
        f'sentence ::= [A-Z`(] body " [" [1-{max_source}] "]."',
        'body ::= [^\\[\\]\\n.]{8,220}',
    ])


def ask_all(assistant, questions, extra_body) -> list[dict]:
    assistant.generator.extra_body = extra_body
    rows = []
    for q in questions:
        start = time.perf_counter()
        answer = assistant.ask(q.question, user_for(q))
        seconds = time.perf_counter() - start
        called = not (answer.refused and answer.reason == "weak-evidence")
        rows.append({"id": q.id, "type": q.type, "answerable": bool(q.evidence), "refused": answer.refused,
                     "reason": answer.reason, "cited": len(answer.citations), "invalid": answer.invalid_citations,
                     "facts": bool(q.evidence) and not answer.refused and facts_present(answer.answer, q.facts),
                     "model_called": called, "seconds": round(seconds, 2), "raw": answer.raw, "answer": answer.answer})
        print(f"{q.id} {'answerable' if q.evidence else 'unanswerable'}: refused={answer.refused} ({answer.reason}) "
              f"cited={len(answer.citations)} {seconds:.1f}s | {answer.raw[:100]!r}", flush=True)
    return rows


def summary(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    model_seconds = [r["seconds"] for r in rows if r["model_called"]]
    return {"answerable": len(answerable), "unanswerable": len(unanswerable),
            "valid cited answers": sum(valid_cited(r) for r in answerable),
            "facts": sum(r["facts"] for r in answerable),
            "refusals by reason": {k: sum(r["reason"] == k for r in answerable) for k in sorted({str(r["reason"]) for r in answerable if r["refused"]})},
            "unanswerable refused": sum(r["refused"] for r in unanswerable),
            "model calls": len(model_seconds),
            "seconds p50": round(float(np.percentile(model_seconds, 50)), 1) if model_seconds else None,
            "seconds p95": round(float(np.percentile(model_seconds, 95)), 1) if model_seconds else None}


def valid_cited(row: dict) -> bool:
    return not row["refused"] and row["cited"] > 0 and not row["invalid"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--json", default="evals/results/model-cited-answers-dev.json")
    args = parser.parse_args()
    docs = load_corpus("python-docs")
    dev = load_golden(golden_path("python-docs"), docs, split="dev")[::args.every]
    with start_server(free_port()) as server:
        import os
        os.environ.update(server.env)
        assistant = build_assistant("python-docs", generator="openai")
        # a long prompt on 2 shared cores can take minutes: wait rather than count a slow answer as a failure
        assistant.generator.client = openai_client(server.base_url, timeout=600)
        arms = {"free text": ask_all(assistant, dev, None),
                "grammar": ask_all(assistant, dev, {"grammar": citing_grammar()})}
    answerable = [i for i, q in enumerate(dev) if q.evidence]
    paired = {metric: paired_test([float(fn(arms["free text"][i])) for i in answerable],
                                  [float(fn(arms["grammar"][i])) for i in answerable])
              for metric, fn in [("valid cited answers", valid_cited), ("facts", lambda r: r["facts"])]}
    out = {"golden": str(golden_path("python-docs")), "split": "dev", "every": args.every, "questions": len(dev),
           "model": MODEL_ALIAS, "grammar": citing_grammar(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "summary": {arm: summary(rows) for arm, rows in arms.items()}, "grammar minus free text": paired,
           "rows": arms}
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"summary": out["summary"], "paired": paired}, indent=1))


if __name__ == "__main__":
    main()
