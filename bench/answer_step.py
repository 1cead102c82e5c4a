"""The answer step alone, after retrieval: the shipped extractive generator's time per question (p50/p95)
beside the variants of issue 36 in the same run, and what a model would read.

    python bench/answer_step.py [--profile full] [--every 2] [--scorer PATH] [--repeats 3]

For every ``--every``-th question of the dev split (answerable and not), the sources are retrieved once; the
timed part is ``generate`` only (the injection layers, the sentence scores, the quotes). A first pass warms
the embedding cache and the detector's memo for every variant alike, then the variants alternate
question by question, ``--repeats`` times. Variants:

- ``rule``: the shipped generator (floor 0.5, 3 sources, 3 sentences);
- ``scorer``: the same with a learned ``SentenceScorer`` (``--scorer PATH``, from
  ``scripts/sentence_scorer_dev.py --write PATH``), if given;
- ``model prompt``: what ``OpenAIGenerator`` sends, whole chunks against the selected sentences
  (``selector=``): the selection's time, and the prompt's characters (a model's prompt time grows with
  them; the model's own times are in ``scripts/model_reads_dev.py``).

The target of issue 36 for a new selection: p50 and p95 at most 1.3x the rule's.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from raglab.infra.assemble import build_assistant
from raglab.evaluation.golden import golden_file, load_golden, user_for
from raglab.answerer.extractive import ExtractiveGenerator, selected_sources
from raglab.answerer.quotes import asks_for_api
from raglab.guards.guard import Guard
from raglab.book.prompt import build_messages
from raglab.guards.widening import source_at
from raglab.answerer.selection import SentenceScorer


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="full")
    p.add_argument("--every", type=int, default=2, help="every Nth dev question (default 2)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--scorer", help="a SentenceScorer file to time beside the rule")
    args = p.parse_args()
    assistant = build_assistant("python-docs", args.profile, generator="extractive")
    rule, index = assistant.generator, assistant.retriever.index
    variants = {"rule": rule}
    if args.scorer:
        variants["scorer"] = ExtractiveGenerator(rule.embedder, top_sources=5, detector=rule.detector,
                                                 scorer=SentenceScorer.load(args.scorer))
    questions = load_golden(golden_file("python-docs", args.profile), None, split="dev")[:: args.every]
    cases = []
    for q in questions:
        hits = assistant.retriever.search(q.question, "rerank", assistant.k, user_for(q))
        cases.append((q.question, [source_at(n, *index.locate(h.id)) for n, h in enumerate(hits, 1)]))
    for question, sources in cases:                      # warm every variant alike
        for gen in variants.values():
            gen.generate(question, sources)
    times: dict[str, list[float]] = {name: [] for name in variants} | {"selection for a model": []}
    chars = {"whole chunks": [], "selected sentences": []}
    for _ in range(args.repeats):
        for question, sources in cases:
            for name, gen in variants.items():
                t = time.perf_counter()
                gen.generate(question, sources)
                times[name].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            sel = rule.selection(question, sources)
            sent = [] if sel["refusal"] else selected_sources(sel, sources, asks_for_api(question))
            times["selection for a model"].append((time.perf_counter() - t) * 1000)
            if sent:
                chars["whole chunks"].append(len(build_messages(question, sources, visible=Guard().visible)[1]["content"]))
                chars["selected sentences"].append(len(build_messages(question, sent, visible=Guard().visible)[1]["content"]))
    base = times["rule"]
    print(f"{len(cases)} dev questions, python-docs {args.profile}, {args.repeats} timed passes after a warm one")
    print("| variant | p50 ms | p95 ms | p50 vs rule | p95 vs rule |")
    print("| --- | --- | --- | --- | --- |")
    for name, ts in times.items():
        print(f"| {name} | {pct(ts, 50):.1f} | {pct(ts, 95):.1f} | {pct(ts, 50) / pct(base, 50):.2f}x | "
              f"{pct(ts, 95) / pct(base, 95):.2f}x |")
    w, s = chars["whole chunks"], chars["selected sentences"]
    if w:
        print(f"model prompt (user message), median characters: whole chunks {statistics.median(w):.0f}, "
              f"selected sentences {statistics.median(s):.0f} ({statistics.median(s) / statistics.median(w):.2f}x)")


if __name__ == "__main__":
    main()
