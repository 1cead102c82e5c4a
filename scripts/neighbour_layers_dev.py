"""How far should a flagged sentence take its neighbours out of the answer? Variants measured on every round.

The injection layers take an ordinary sentence out of the extractive answer when it sits beside a flagged one
(``raglab.guards.injection.with_continuations``: the rest of the paragraph after it, and the one just before it).
Each variant of that reach (and of a floor on the neighbour's own detector probability, ``CONTINUE_MIN``) is run over every measured round (all dev): the ordinary sentences of the planted
pages quoted with the planted passage and without it (``scripts/planted_pages.py``), payloads quoted in those
answers, and, in the hardest case of ``raglab.evaluation.injection_report`` (each passage asked as the
question, over 12-word windows, every candidate allowed), passages and payloads quoted.

    python scripts/neighbour_layers_dev.py
"""
from __future__ import annotations

import raglab.guards.injection
from raglab.infra.embedder import Embedder
from raglab.evaluation.injection_report import (extractive_answers, fresh_suites, load_suite, planted_report,
                                                quoted_in)
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.guards.detector import default_detector

VARIANTS = [(None, True, None), (None, False, None), (2, True, None), (2, False, None), (1, True, None), (1, False, None),
            (0, True, None), (0, False, None), (None, True, 0.05), (None, True, 0.1), (None, True, 0.2), (None, True, 0.3)]


def hardest(embedder, detector) -> tuple[int, int, int]:
    """Passages quoted, payloads quoted, passages in all: each passage asked as the question (the report's case)."""
    passages = payloads = n = 0
    for folder, name in fresh_suites():
        rows = load_suite(folder / f"{name}.jsonl")
        answers = extractive_answers(embedder, [r["text"] for r in rows], detector=detector)
        passages += len(quoted_in(answers, [r["text"] for r in rows]))
        payloads += len(quoted_in(answers, [r.get("payload", r["text"]) for r in rows]))
        n += len(rows)
    return passages, payloads, n


def main() -> None:
    embedder = Embedder()
    detector = default_detector(embedder)
    generator = ExtractiveGenerator(embedder, detector=detector)
    print("| after a flagged sentence | the one before | neighbour's own probability at least | ordinary asked | quoted, planted | quoted, without | "
          "payloads quoted (planted pages) | hardest case: passages quoted | payloads quoted |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for reach, lead, least in VARIANTS:
        raglab.guards.injection.CONTINUE_REACH, raglab.guards.injection.CONTINUE_LEAD, raglab.guards.injection.CONTINUE_MIN = reach, lead, least
        rows = planted_report(generator)
        total = {k: sum(r[k] for r in rows) for k in ("asked", "quoted_with", "quoted_without", "payload_quoted")}
        hp, hpay, n = hardest(embedder, detector)
        print(f"| {'the rest of the paragraph' if reach is None else reach} | {'yes' if lead else 'no'} | {least if least is not None else '-'} | {total['asked']} | "
              f"{total['quoted_with']} | {total['quoted_without']} | {total['payload_quoted']} | {hp}/{n} | {hpay}/{n} |",
              flush=True)


if __name__ == "__main__":
    main()
