"""Statistics used by every report: bootstrap confidence intervals, paired bootstrap tests, quantiles."""
from __future__ import annotations

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
    """Is config B different from A on the same questions? Mean difference (B − A) with a paired
    bootstrap 95% interval, and a two-sided sign-flip randomization p-value."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    rng = np.random.default_rng(seed)
    boot = d[rng.integers(0, len(d), size=(reps, len(d)))].mean(axis=1)
    flips = rng.choice([-1.0, 1.0], size=(reps, len(d)))
    null = np.abs((flips * d).mean(axis=1))
    p = (1 + int((null >= abs(d.mean()) - 1e-12).sum())) / (reps + 1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"diff": round(float(d.mean()), 4), "ci_low": round(float(lo), 4), "ci_high": round(float(hi), 4),
            "p_value": round(p, 4), "significant": bool(p < 0.05 and (lo > 0 or hi < 0))}


def percentile(values, q):
    v = [x for x in values if x is not None]
    return round(float(np.percentile(v, q)), 1) if v else None
