"""The corpora raglab knows by name, and what is known about each: one registry for every module.

For each bundled corpus: where it comes from, its golden sets by split, the chunking the
assistant uses by default, and the refusal threshold calibrated for it (per profile). A corpus
given as a folder path, or ``python-docs-3.X``, falls back to the Python docs' defaults.

>>> entry("helpcenter").chunking
('headings', True)
>>> golden_path("python-docs").name
'python_docs_golden.jsonl'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from raglab import config


@dataclass(frozen=True)
class CorpusEntry:
    """One bundled corpus: its source, golden sets (split -> file in ``evals/``), default chunking
    ``(strategy, prefix)`` and calibrated refusal thresholds (profile -> evidence strength)."""

    name: str
    source: str
    golden: dict[str, str] = field(default_factory=dict)
    chunking: tuple[str, bool] = ("words", False)
    thresholds: dict[str, float] = field(default_factory=dict)


# Thresholds are chosen from data by `raglab.assistant.choose_threshold` (notebook 04 plots it; a test
# recomputes both): the evidence strength that best separates a golden set's answerable questions from
# its unanswerable ones (small profile, sentence reranker; python-docs with words 150/30, J = 0.80;
# helpcenter with heading-aware chunks and prefixes, J = 0.49: its unanswerable questions sit close to
# real topics). The chunking is the one each threshold was chosen on.
REGISTRY: dict[str, CorpusEntry] = {e.name: e for e in (
    CorpusEntry("python-docs", "data/python-docs-text-3.11.tar.xz (Python 3.11 docs, plain text)",
                golden={"small": "python_docs_golden.jsonl"},
                chunking=("words", False), thresholds={"small": 0.607}),
    CorpusEntry("helpcenter", "data/helpcenter (Markdown, some pages premium)",
                golden={"small": "helpcenter_golden.jsonl"},
                chunking=("headings", True), thresholds={"small": 0.669}),
)}
DEFAULT = "python-docs"
DEFAULT_THRESHOLD = REGISTRY[DEFAULT].thresholds["small"]


def entry(corpus: str) -> CorpusEntry:
    """The registry entry of a corpus; any other corpus (a folder, another docs version) gets the default's."""
    return REGISTRY.get(str(corpus), REGISTRY[DEFAULT])


def threshold_for(corpus: str, profile: str | None = None) -> float:
    """The calibrated refusal threshold of a corpus for a profile (the small profile's when none is recorded)."""
    thresholds = entry(corpus).thresholds
    return thresholds.get(config.profile(profile), thresholds["small"])


def golden_path(corpus: str, split: str = "small") -> Path:
    """The golden set of a bundled corpus for a split, e.g. ``golden_path("python-docs")``."""
    sets = REGISTRY[corpus].golden if corpus in REGISTRY else {}
    if split not in sets:
        raise ValueError(f"no {split!r} golden set ships for corpus {corpus!r}: pass --golden FILE")
    return config.PROJECT_ROOT / "evals" / sets[split]
