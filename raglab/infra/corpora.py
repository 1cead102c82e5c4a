"""The corpora raglab knows by name, and what is known about each: one registry for every module.

For each bundled corpus: where it comes from, its golden sets by profile, and the defaults its
assistant runs with (chunking, reranking or not, BM25's title field, release-note demotion) and the
refusal thresholds calibrated for them (per evidence signal and profile). ``python-docs-3.X``
gets the Python docs' defaults; a folder of the user's own gets the course's baseline (``FOLDER``),
nothing tuned on another corpus.

>>> entry("helpcenter").chunking
('headings', True)
>>> golden_path("python-docs", "full").name
'python_docs_full.jsonl'
>>> golden_path("python-docs", "small").name
'python_docs_golden.jsonl'
>>> entry("python-docs-3.12").demote, entry("my/folder").demote, entry("my/folder").chunking
(('whatsnew/',), (), ('words', False))
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from raglab.base import config
from raglab.base.files import atomic_open
@dataclass(frozen=True)
class CorpusEntry:
    """One bundled corpus and the defaults its assistant runs with.

    - ``golden``: golden sets by profile (file names in ``evals/``); a set whose lines carry a
      ``split`` field is split into ``dev`` (every tuned choice reads it) and ``test`` (reported).
    - ``chunking``: the default ``(strategy, prefix)``.
    - ``rerank``: whether the assistant reorders the fused candidates with the reranker before
      answering; without it the evidence strength is the top dense cosine (``raglab.book.rerank``).
    - ``title_weight``: BM25 adds this times the BM25 score of the chunk's page title (0: off).
    - ``demote``, ``demote_factor``: pages whose id starts with one of ``demote`` (release notes)
      get their fused score multiplied by ``demote_factor`` unless the question asks about versions.
    - ``thresholds``: refusal thresholds by evidence signal (``rerank``: the top reranked score;
      ``dense``: the top dense cosine with the unknown-names rule) and profile.
    - ``tuned``: for each golden set (file name in ``evals/``) a default was chosen on, which part of it:
      ``dev`` (its test split stays held out) or ``all`` (the threshold was chosen on every question, test
      included: a score on that set is in-sample).
    - ``example``: the page the notebooks show a corpus by (``example_page``; a folder's: the page with the
      most headings).
    """

    name: str
    source: str
    golden: dict[str, str] = field(default_factory=dict)
    chunking: tuple[str, bool] = ("words", False)
    rerank: bool = True
    title_weight: float = 0.0
    demote: tuple[str, ...] = ()
    demote_factor: float = 1.0
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    tuned: dict[str, str] = field(default_factory=dict)
    example: str = ""

    @property
    def signal(self) -> str:
        """The evidence signal the default assistant refuses on: ``rerank`` or ``dense``."""
        return "rerank" if self.rerank else "dense"


# How each default was chosen (README "Quality on the whole docs", evals/full_docs_lab.md):
# - python-docs: everything on the dev split of evals/python_docs_full.jsonl (its first 49 questions) over the
#   full docs: heading-aware chunks with the contextual prefix, hybrid RRF 20 + 20, BM25 plus the page
#   title at weight 0.5, release notes (whatsnew/) demoted x0.5 unless the question asks about
#   versions, no reranker; refuse below a top dense cosine of 0.5004 or when the question names
#   something no chunk contains (re-tuned on the 158 dev questions of both batches: J = 0.747; the
#   first batch's 49 gave 0.4883, J = 0.976). `raglab tune` recomputes the thresholds (dev only);
#   tests/evaluation/test_tuning.py checks that these values are what it chooses. The small
#   profile's thresholds are chosen on its 36 questions, the same ones it reports (in-sample).
#   The `rerank` thresholds belong to the course's milestone set-up (words 150/30 + the sentence
#   reranker, notebook 04).
# - helpcenter: heading-aware chunks with prefixes and the sentence reranker, threshold chosen on its
#   31 questions (in-sample; J = 0.49: its unanswerable questions sit close to real topics).
REGISTRY: dict[str, CorpusEntry] = {e.name: e for e in (
    CorpusEntry("python-docs", "data/python-docs-text-3.11.tar.xz (Python 3.11 docs, plain text)",
                golden={"small": "python_docs_golden.jsonl", "full": "python_docs_full.jsonl"},
                chunking=("headings", True), rerank=False, title_weight=0.5, demote=("whatsnew/",),
                demote_factor=0.5,
                thresholds={"dense": {"full": 0.5004, "small": 0.4462}, "rerank": {"small": 0.607}},
                tuned={"python_docs_full.jsonl": "dev", "python_docs_golden.jsonl": "all"}, example="library/json.txt"),
    CorpusEntry("helpcenter", "data/helpcenter (Markdown, some pages premium)",
                golden={"small": "helpcenter_golden.jsonl"},
                chunking=("headings", True), thresholds={"rerank": {"small": 0.669}},
                tuned={"helpcenter_golden.jsonl": "all"}, example="returns/returns-and-refunds.md"),
)}
DEFAULT = "python-docs"
# A folder of the user's own: the course's baseline (raglab.evaluation.baseline), no lever tuned on another
# corpus (no title field, no release-note demotion): word windows 150/30 and plain hybrid search, until the
# folder's own bake-off (notebook 07, on its dev split) shows by the one rule that something else is better.
# Its refusal threshold is calibrated from the folder itself (raglab.infra.calibration). The milestones' set-up
# with the sentence reranker (notebook 04) starts from the course's threshold on the reranked score, which 04's
# exercise chooses again on the folder's dev split.
DEFAULT_THRESHOLD = REGISTRY[DEFAULT].thresholds["rerank"]["small"]   # an Assistant built by hand, with a reranker
FOLDER = CorpusEntry("a folder", "a folder of your own pages (.md, .txt)", chunking=("words", False), rerank=False,
                     thresholds={"rerank": {"small": DEFAULT_THRESHOLD}})


def entry(corpus: str) -> CorpusEntry:
    """The registry entry of a corpus: its own, the Python docs' for another docs version, ``FOLDER`` for a
    folder, with the chunking and reranking its own bake-off kept (``save_choice``), once there is one."""
    if str(corpus) in REGISTRY:
        return REGISTRY[str(corpus)]
    if registered(corpus):
        return REGISTRY[DEFAULT]
    chosen = choice_path(corpus)
    if not chosen.is_file():
        return FOLDER
    kept = json.loads(chosen.read_text(encoding="utf-8"))
    return replace(FOLDER, chunking=(kept["strategy"], kept["prefix"]), rerank=kept["rerank"],
                   source=f"{FOLDER.source}; {kept['why']}")


def choice_path(corpus: str) -> Path:
    """Where a folder's own choice of chunking and reranking is kept: the working folder, by the folder's path."""
    key = hashlib.sha256(str(Path(corpus).resolve()).encode()).hexdigest()[:16]
    return config.work_dir() / "choices" / f"{key}.json"


def save_choice(corpus: str, strategy: str, prefix: bool, rerank: bool, why: str) -> Path | None:
    """Keep a folder's bake-off decision (notebook 07, the one rule on its dev split) as its default: its
    assistant (``raglab serve --corpus DIR``, notebook 08) then chunks and reranks so. A bundled corpus keeps the
    registry's defaults, chosen on its own dev split (returns None)."""
    if registered(corpus):
        return None
    path = choice_path(corpus)
    with atomic_open(path) as fh:
        json.dump({"corpus": str(Path(corpus).resolve()), "strategy": strategy, "prefix": prefix, "rerank": rerank,
                   "why": why}, fh, indent=1)
    return path


def registered(corpus: str) -> bool:
    """Whether the registry's thresholds fit a corpus: a bundled one, or another version of the Python
    docs; a folder of the user's own is calibrated from itself (``raglab.infra.calibration``).

    >>> registered("helpcenter"), registered("python-docs-3.12"), registered("my/folder")
    (True, True, False)
    """
    return str(corpus) in REGISTRY or str(corpus).startswith("python-docs")


def threshold_for(corpus: str, profile: str | None = None, signal: str | None = None) -> float:
    """The calibrated refusal threshold of a corpus for a profile and evidence signal (default: the
    corpus's own signal); the small profile's when none is recorded for the profile."""
    e = entry(corpus)
    signal = signal or e.signal
    by_profile = e.thresholds.get(signal)
    if not by_profile:
        raise ValueError(f"no {signal!r} refusal threshold is calibrated for {corpus!r}: pass threshold=")
    return by_profile.get(config.profile(profile), by_profile["small"])


def golden_path(corpus: str, profile: str | None = None) -> Path:
    """The golden set of a bundled corpus for a profile (None reads ``RAGLAB_PROFILE``), e.g.
    ``golden_path("python-docs", "small")``."""
    profile = config.profile(profile)
    sets = REGISTRY[corpus].golden if corpus in REGISTRY else {}
    if profile not in sets:
        raise ValueError(f"no golden set ships for corpus {corpus!r} on the {profile} profile: pass --golden FILE")
    return config.PROJECT_ROOT / "evals" / sets[profile]
