"""Refusal: one exact text, said whenever the assistant will not answer, and the cut that decides it.

An assistant that may say "I can't find this" must say it the same way every time, so that a person, a test
or a metric can tell a refusal from an answer. It refuses in three places (``raglab.book.assistant``):
before any model call when the evidence is weak (the best retrieval score is under a threshold), when the
model itself declines (``is_refusal``), and when the answer fails the citation check.

The threshold is chosen on the dev split of a golden set as the cut that best separates the evidence
strengths of answerable questions from those of unanswerable ones: Youden's J = TPR - FPR (Youden 1950,
"Index for rating diagnostic tests"), where TPR is the share of answerable questions answered and FPR the
share of unanswerable ones answered (``choose_threshold``). Taught in notebook 04.
"""
from __future__ import annotations

import re

REFUSAL = "I can't find this in the documentation."

_MODEL_REFUSALS = re.compile(r"\b(i|we) (can't|cannot|can not|could not|couldn't|am unable to|was unable to) (find|answer)"
                             r"|\b(i|we) (don't|do not) know\b"
                             r"|\b(sources?|documentation|documents?|context) (does|do) not (contain|mention|say|provide)"
                             r"|\bnot (mentioned|covered|provided|found) in the (sources?|documentation|documents?|context)", re.I)


def is_refusal(text: str, refusal: str = REFUSAL) -> bool:
    """Did the model decline: the exact refusal anywhere in the reply, an empty reply, or a plain "I can't find /
    don't know" answer in its first 300 characters (later, such a phrase qualifies an answer already given)?

    >>> is_refusal(REFUSAL), is_refusal("I could not find that in the sources."), is_refusal("Use json.loads [1].")
    (True, True, False)
    """
    t = " ".join(text.split())
    return not t or refusal.lower().rstrip(".") in t.lower() or bool(_MODEL_REFUSALS.search(t[:300]))


def choose_threshold(answerable: list[float], unanswerable: list[float], tolerance: float = 0.02) -> tuple[float, float]:
    """The cut that best separates two score lists: ``(threshold, J)`` with J = TPR − FPR (Youden's J).

    A question is answered when its evidence strength is at least the threshold. Cuts lie
    midway between neighbouring scores; among cuts within ``tolerance`` of the best J the lowest
    wins, so that an answerable question is not refused for a gain that is only noise.

    >>> choose_threshold([0.8, 0.7, 0.6], [0.3, 0.65])
    (0.675, 0.6666666666666666)
    """
    values = sorted(set(answerable) | set(unanswerable))
    cuts = [(a + b) / 2 for a, b in zip(values, values[1:])]
    if not answerable or not unanswerable or not cuts:
        raise ValueError(f"no cut to choose: {len(answerable)} answerable and {len(unanswerable)} unanswerable "
                         f"scores, {len(values)} distinct (a threshold needs both kinds and two distinct scores)")

    def j(t: float) -> float:
        tpr = sum(a >= t for a in answerable) / len(answerable)
        fpr = sum(u >= t for u in unanswerable) / len(unanswerable)
        return tpr - fpr

    scored = [(t, j(t)) for t in cuts]
    best = max(score for _, score in scored)
    return next((round(t, 4), score) for t, score in scored if score >= best - tolerance)
