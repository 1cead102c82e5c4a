"""Which sentences an extractive answer quotes: a logistic regression a reader can inspect.

Every candidate sentence of the sources read (``ExtractiveGenerator.candidates``) gets the signals in
``SIGNALS``, all computed from what the generator already has: the hand-set score of earlier releases
(MiniLM cosine plus weighted term overlap, a bonus in the top source, a penalty for code), its gap to the
question's best and its rank, the cosine and its gap, the term overlap, where the sentence sits (its
source's rank, the top source, under an API line, continuing a paragraph, position, length), and the
neighbours' cosine. ``SentenceScorer`` turns them into the probability that the sentence states the
question's fact: standardized signals, one weight each, a logistic link. ``scripts/sentence_scorer_dev.py``
fits one on the dev split of the full docs' golden set and the dev folders, their evidence quotes as
labels, and writes it with what it measured. It is not the default: on dev it does not choose better than
the hand-set rule, and as a refusal signal it is weaker than the floor
(``evals/results/answer-step-dev.md``).

Selection (``SentenceScorer.choose``): when the best sentence's probability reaches ``threshold``, sentences
in order of probability while their words fit ``words``; otherwise the answer is refused at this stage
(``Generation.refusal``), with the best probability as the number.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from raglab.base.files import atomic_open

SIGNALS = ("hand-set score", "hand-set score below the question's best", "hand-set rank (log)",
           "cosine below the question's best", "cosine", "term overlap", "source rank", "top source", "code",
           "under an API line", "continues a paragraph", "position in source", "words (log)", "neighbour cosine")


def budget_words(candidate) -> int:
    """The words a quoted sentence costs the answer's budget: its text and the API line it may carry."""
    return len(f"{candidate.api or ''} {candidate.text}".split())


def sentence_signals(cos: np.ndarray, score: np.ndarray, lexical: np.ndarray, candidates, sources) -> np.ndarray:
    """The ``SIGNALS`` of each candidate (rows), from the generator's ``scores``: ``cos`` and ``score`` per
    question part (rows) and candidate (columns), ``lexical`` the whole question's term overlap per candidate.

    >>> from raglab.answerer.quotes import Quotable
    >>> cands = [Quotable(1, "A b c d.", "A b c d.", None), Quotable(2, "E f g h i j.", "E f g h i j.", "f()", True)]
    >>> X = sentence_signals(np.array([[0.6, 0.2]]), np.array([[0.9, 0.3]]), np.array([0.5, 0.0]), cands, [1, 2])
    >>> X[:, :3].round(3).tolist()
    [[0.9, 0.0, 0.0], [0.3, -0.6, 0.693]]
    >>> X[1, 6:11].tolist()
    [2.0, 0.0, 1.0, 1.0, 0.0]
    """
    top_score, best_cos = score.max(axis=0), cos.max(axis=0)
    rank = np.argsort(np.argsort(-top_score, kind="stable"), kind="stable")
    first = getattr(sources[0], "n", sources[0]) if len(sources) else None
    per_source: dict[int, list[int]] = {}
    for i, c in enumerate(candidates):
        per_source.setdefault(c.n, []).append(i)
    rows = []
    for i, c in enumerate(candidates):
        mates = per_source[c.n]
        at = mates.index(i)
        near = [best_cos[j] for j in mates[max(0, at - 1):at] + mates[at + 1:at + 2]]
        rows.append([top_score[i], top_score[i] - top_score.max(), math.log1p(rank[i]), best_cos[i] - best_cos.max(),
                     best_cos[i], lexical[i], c.n, c.n == first, c.code, c.api is not None, c.follows,
                     at / max(1, len(mates) - 1), math.log(max(1, len(c.plain.split()))), max(near, default=0.0)])
    return np.array(rows, dtype=float).reshape(len(candidates), len(SIGNALS))


@dataclass(frozen=True)
class SentenceScorer:
    """A logistic regression over ``signals`` (standardized by ``mean`` and ``scale``), the probability
    ``threshold`` a quoted sentence needs, and the answer's budget in ``words``; ``measured``: what the
    fitting script measured on dev (held out), for the record."""

    signals: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    words: int
    measured: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        n = len(self.signals)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == n):
            raise ValueError(f"sentence scorer: {n} signals but {len(self.mean)} means, {len(self.scale)} scales "
                             f"and {len(self.coef)} weights")
        if self.words < 1 or not 0.0 <= self.threshold < 1.0:
            raise ValueError(f"sentence scorer: words must be at least 1 (got {self.words}) and threshold in [0, 1) "
                             f"(got {self.threshold})")

    def probability(self, X: np.ndarray) -> np.ndarray:
        """Each row's probability that its sentence states the fact."""
        z = (np.asarray(X, dtype=float) - np.array(self.mean)) / np.array(self.scale)
        return 1.0 / (1.0 + np.exp(-(z @ np.array(self.coef) + self.intercept)))

    def choose(self, prob: np.ndarray, words: list[int]) -> list[int]:
        """None when the best probability is under ``threshold`` (the answer is refused); otherwise candidates
        in order of probability while their words fit the budget (a sentence that would pass it is skipped
        for a shorter one); the first always fits.

        >>> s = SentenceScorer(("x",), (0.0,), (1.0,), (1.0,), 0.0, threshold=0.3, words=10)
        >>> s.choose(np.array([0.9, 0.5, 0.4, 0.2]), [6, 6, 3, 1])
        [0, 2, 3]
        >>> s.choose(np.array([0.2, 0.1]), [1, 1])
        []
        """
        picked, used = [], 0
        if not len(prob) or prob.max() < self.threshold:
            return picked
        for i in np.argsort(-prob, kind="stable"):
            if picked and used + words[i] > self.words:
                continue
            picked.append(int(i))
            used += words[i]
        return picked

    def weights(self) -> list[tuple[str, float]]:
        """``(signal, weight on the standardized signal)``, largest first in size."""
        return sorted(zip(self.signals, self.coef), key=lambda sw: -abs(sw[1]))

    def without(self, signal: str) -> "SentenceScorer":
        """The same scorer with one signal's weight set to 0 (it then cannot change a choice)."""
        if signal not in self.signals:
            raise KeyError(f"no signal {signal!r}; the signals are: {', '.join(self.signals)}")
        return SentenceScorer(self.signals, self.mean, self.scale,
                              tuple(0.0 if s == signal else w for s, w in zip(self.signals, self.coef)),
                              self.intercept, self.threshold, self.words, self.measured)

    def save(self, path: str | Path) -> None:
        with atomic_open(path) as fh:
            json.dump(asdict(self), fh, indent=1)

    @classmethod
    def load(cls, path: str | Path) -> "SentenceScorer":
        """A scorer written by ``save`` (``scripts/sentence_scorer_dev.py --write PATH``)."""
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: cannot read a sentence scorer ({exc})") from exc
        missing = [k for k in ("signals", "mean", "scale", "coef", "intercept", "threshold", "words") if k not in raw]
        if missing:
            raise ValueError(f"{path}: a sentence scorer needs the fields {', '.join(missing)}")
        if tuple(raw["signals"]) != SIGNALS:
            raise ValueError(f"{path}: its signals {raw['signals']} are not raglab.answerer.selection.SIGNALS")
        return cls(tuple(raw["signals"]), tuple(raw["mean"]), tuple(raw["scale"]), tuple(raw["coef"]),
                   float(raw["intercept"]), float(raw["threshold"]), int(raw["words"]), raw.get("measured", {}))
