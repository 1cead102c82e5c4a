"""What the injection defence costs an answer: the default assistant (hybrid retrieval, extractive
answers) on the Python docs' golden questions with the learned detector (the rule, the regressions
over each sentence, its parts and windows, and the paragraph rule) against the rule alone, measured
in the same run, answers interleaved. "Cold" is a fresh detector (nothing remembered: every source
sentence, part and window is embedded or read from the embedding cache and scored); "warm" asks the
same questions again (flags remembered per sentence).

    python bench/injection.py [--profile small] [--repeat 3]

Prints the median and p95 milliseconds of ``Assistant.ask`` for each arm and the ratios to the rule
alone, and whether the answers differ.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from raglab.infra.assemble import build_assistant
from raglab.infra.corpora import golden_path
from raglab.infra.corpus import load_corpus
from raglab.evaluation.golden import load_golden, user_for
from raglab.guards.detector import InjectionDetector, RuleOnly


def run(assistant, questions) -> tuple[list[float], list[str]]:
    """Milliseconds of each ``ask`` and the answers."""
    times, answers = [], []
    for q in questions:
        t = time.perf_counter()
        answers.append(assistant.ask(q.question, user_for(q)).answer)
        times.append((time.perf_counter() - t) * 1000)
    return times, answers


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="small")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    questions = load_golden(golden_path("python-docs", args.profile), load_corpus("python-docs", args.profile))
    assistant = build_assistant("python-docs", args.profile, generator="extractive")
    embedder = assistant.generator.embedder
    run(assistant, questions)                      # retrieval caches and the embedding cache warm for every arm
    arms: dict[str, list[float]] = {"rule alone": [], "detector, cold": [], "detector, warm": []}
    answers: dict[str, list[str]] = {}
    print(f"load average before: {os.getloadavg()[0]:.2f}; {len(questions)} questions, {args.repeat} rounds")
    for _ in range(args.repeat):
        assistant.generator.detector = assistant.guard.detector = RuleOnly()
        t, answers["rule alone"] = run(assistant, questions)
        arms["rule alone"] += t
        assistant.generator.detector = assistant.guard.detector = InjectionDetector(embedder)
        t, answers["detector"] = run(assistant, questions)
        arms["detector, cold"] += t
        t, _ = run(assistant, questions)
        arms["detector, warm"] += t
    base = np.median(arms["rule alone"])
    for name, t in arms.items():
        print(f"{name:16s} p50 {np.median(t):7.1f} ms   p95 {np.percentile(t, 95):7.1f} ms   "
              f"p50 ratio to the rule alone {np.median(t) / base:.2f}x")
    differ = sum(a != b for a, b in zip(answers["rule alone"], answers["detector"]))
    print(f"answers that differ between the rule alone and the detector: {differ} of {len(questions)}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
