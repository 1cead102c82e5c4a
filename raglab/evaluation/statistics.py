"""Statistics used by every report: bootstrap confidence intervals, paired bootstrap tests, quantiles, and the
course's one rule for choosing a setting (``choose``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def bootstrap_ci(values, reps: int = 2000, seed: int = 0, level: float = 0.95, stat=np.mean) -> dict:
    """A statistic (the mean by default) with a percentile bootstrap interval over questions:
    ``{"value", "ci_low", "ci_high"}``. Missing values (None) are left out."""
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if not len(v):
        return {"value": None, "ci_low": None, "ci_high": None}
    rng = np.random.default_rng(seed)
    samples = v[rng.integers(0, len(v), size=(reps, len(v)))]
    stats = stat(samples, axis=1)
    lo, hi = np.percentile(stats, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return {"value": round(float(stat(v)), 4), "ci_low": round(float(lo), 4), "ci_high": round(float(hi), 4)}


def quantile(q: float):
    """A statistic for ``bootstrap_ci``: the q-th percentile."""
    return lambda a, axis=None: np.percentile(a, q, axis=axis)


def paired_test(a, b, reps: int = 10000, seed: int = 0) -> dict:
    """Is config B different from A on the same questions? The course's one decision rule: yes when the
    95% paired bootstrap interval of the mean per-question difference excludes 0 (``significant``).

    With ``d_i = b_i - a_i`` for the n questions, each of ``reps`` resamples draws n questions with
    replacement and takes the mean of their ``d``; the interval is the 2.5th to 97.5th percentile of
    those means (the percentile bootstrap, Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993,
    ch. 13 and 16). Resampling whole questions keeps each question's two scores together, which is what
    makes the test paired. Also returned, for information only: ``p_value``, a two-sided sign-flip
    randomization p-value (not used to decide), and ``mde``, the smallest true difference a comparison
    with this spread on this many questions would detect (``minimum_detectable_difference``).

    >>> t = paired_test([0.0] * 10, [1.0, 0.5] * 5)          # B is ahead on every question
    >>> t["diff"], t["ci_low"] > 0, t["significant"]
    (0.75, True, True)
    >>> paired_test([0, 1, 0, 1], [1, 0, 1, 0])["significant"]  # ahead on half, behind on half
    False
    """
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    rng = np.random.default_rng(seed)
    boot = d[rng.integers(0, len(d), size=(reps, len(d)))].mean(axis=1)
    flips = rng.choice([-1.0, 1.0], size=(reps, len(d)))
    null = np.abs((flips * d).mean(axis=1))
    p = (1 + int((null >= abs(d.mean()) - 1e-12).sum())) / (reps + 1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"diff": round(float(d.mean()), 4), "ci_low": round(float(lo), 4), "ci_high": round(float(hi), 4),
            "p_value": round(p, 4), "significant": bool(lo > 0 or hi < 0),
            "mde": minimum_detectable_difference(d)}


RULE = "keep a change only when the 95% paired bootstrap interval of its gain on dev is above 0"


@dataclass(frozen=True)
class Choice:
    """What the one rule decided between a default setting and a candidate, and the numbers it read."""

    default: str
    candidate: str
    metric: str
    split: str
    n: int
    diff: float
    ci_low: float
    ci_high: float

    @property
    def verdict(self) -> str:
        """``better`` (the interval is above 0), ``worse`` (below 0) or ``no detectable difference``."""
        return "better" if self.ci_low > 0 else "worse" if self.ci_high < 0 else "no detectable difference"

    @property
    def kept(self) -> str:
        """The setting the rule keeps: the candidate only when it is better."""
        return self.candidate if self.verdict == "better" else self.default

    def __str__(self) -> str:
        return (f"{self.split}, {self.metric}, {self.candidate} minus {self.default}, paired over {self.n} questions: "
                f"{self.diff:+.3f} [{self.ci_low:+.3f}, {self.ci_high:+.3f}]: {self.verdict}; keep {self.kept}\n"
                f"(the rule: {RULE})")


def choose(default_scores, candidate_scores, default: str = "the default", candidate: str = "the change",
           metric: str = "MRR@10", split: str = "dev") -> Choice:
    """The course's one rule for every choice: keep the candidate setting only when the paired bootstrap
    interval (``paired_test``) of its per-question gain over the default, on the dev split, is above 0.
    An interval that holds 0 is "no detectable difference" and keeps the default.

    >>> c = choose([0.5, 0.0, 1.0, 0.5] * 5, [1.0, 0.5, 1.0, 1.0] * 5, "b = 0.75", "b = 1.0")
    >>> c.verdict, c.kept, c.diff
    ('better', 'b = 1.0', 0.375)
    >>> choose([1, 0, 1, 0], [0, 1, 0, 1], "b = 0.75", "b = 0.3").kept      # as often worse as better
    'b = 0.75'
    """
    if len(default_scores) != len(candidate_scores) or not len(default_scores):
        raise ValueError(f"choose needs one score per question for both settings, on the same questions: "
                         f"got {len(default_scores)} and {len(candidate_scores)}")
    t = paired_test(default_scores, candidate_scores)
    return Choice(default, candidate, metric, split, len(default_scores), t["diff"], t["ci_low"], t["ci_high"])


Z_975, Z_80 = 1.959964, 0.841621     # standard normal quantiles: two-sided 5% test, 80% power


def minimum_detectable_difference(d) -> float:
    """The smallest true mean difference a paired comparison on these questions finds with 80% power at
    a two-sided 5% level, from the spread of the observed per-question differences ``d``:
    ``(z_0.975 + z_0.8) * sd(d) / sqrt(n)`` (the normal approximation; ``sd`` with n - 1).

    >>> minimum_detectable_difference([1, -1] * 50)      # sd 1.005, n 100: 2.80 * 1.005 / 10
    0.2816
    """
    d = np.asarray(d, dtype=float)
    if len(d) < 2:
        return float("nan")
    return round(float((Z_975 + Z_80) * d.std(ddof=1) / np.sqrt(len(d))), 4)


def percentile(values, q):
    v = [x for x in values if x is not None]
    return round(float(np.percentile(v, q)), 1) if v else None


def interval_text(d: dict | None, digits: int = 3, missing: str = "n/a") -> str:
    """A ``bootstrap_ci`` dict as ``value [low, high]``; ``missing`` when there is no value.

    >>> interval_text({"value": 0.5, "ci_low": 0.25, "ci_high": 0.75}), interval_text(None)
    ('0.500 [0.250, 0.750]', 'n/a')
    """
    if not d or d.get("value") is None:
        return missing
    return f"{d['value']:.{digits}f} [{d['ci_low']:.{digits}f}, {d['ci_high']:.{digits}f}]"


def paired_text(d: dict, digits: int = 3) -> str:
    """A ``paired_test`` dict as ``+diff [low, high]``: the mean difference and its paired 95% interval,
    the two numbers the decision rule reads (the p-value is left out so that only one rule is in view).

    >>> paired_text({"diff": 0.1, "ci_low": -0.02, "ci_high": 0.2, "p_value": 0.04})
    '+0.100 [-0.020, +0.200]'
    """
    return f"{d['diff']:+.{digits}f} [{d['ci_low']:+.{digits}f}, {d['ci_high']:+.{digits}f}]"
