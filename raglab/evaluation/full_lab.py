"""The whole-docs lab's configurations (``evals/full_docs_lab.md``): its dev table read back, the selection
rule that chose the retrieval defaults from it, and each configuration's name in plain words (the names are
the lab's lever codes; a learner reads the labels)."""
from __future__ import annotations

import re
from pathlib import Path

from raglab.base import config

LAB = config.PROJECT_ROOT / "evals" / "full_docs_lab.md"


_LAB_ROW = re.compile(r"^\| `(?P<name>[^`]+)` \| (?P<doc_hit>[\d.]+) \| (?P<recall>[\d.]+) \| (?P<mrr>[\d.]+) \| "
                      r"(?P<hit1>[\d.]+) \| (?:\(reference\)|(?P<diff>[+-][\d.]+) \[(?P<lo>[+-][\d.]+), "
                      r"(?P<hi>[+-][\d.]+)\] p=(?P<p>[\d.]+)) \|")


def lab_levers(path: str | Path = LAB) -> list[dict]:
    """The lab's dev table (``evals/full_docs_lab.md``): one row per configuration tried on the dev split,
    with doc hit@5, evidence recall@5, MRR@10, hit@1 and MRR@10's paired difference from the reference
    (``diff``, its interval ``lo``..``hi`` and the lab's p-value ``p``, kept as recorded; None for the
    reference itself)."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = _LAB_ROW.match(line)
        if m:
            rows.append({k: (v if k == "name" or v is None else float(v)) for k, v in m.groupdict().items()})
    return rows


def dev_choice(rows: list[dict], reference: str = "ref-headings-prefix-hybrid") -> dict:
    """The lab's selection rule: the highest dev MRR@10 among the reference and the configurations that
    beat it (the paired 95% interval of the difference lies above 0, the course's one decision rule; the
    table's p-values are not used); cross-validated blends (``cv5``) are estimates of a model family,
    not configurations that can ship, so they are left out."""
    shippable = [r for r in rows if "cv5" not in r["name"]]
    better = [r for r in shippable if r["diff"] is not None and r["lo"] > 0]
    return max(better + [r for r in shippable if r["name"] == reference], key=lambda r: r["mrr"])


# The lab's configuration codes (``evals/full_docs_lab.md``) in plain words. Every configuration but the
# last three changes the reference: heading-aware chunks with the page's title path as a prefix, hybrid search
# (dense and BM25, each top 20, fused by reciprocal rank fusion).
LEVER_LABELS = {
    "ref-headings-prefix-hybrid": "the reference: heading chunks with a title prefix, hybrid",
    "dense-only": "dense search alone",
    "bm25-only": "BM25 alone",
    "L1a-bm25-without-prefix": "BM25 without the title prefix",
    "L1b-heading-field-x1": "+ heading path as a BM25 field (weight 1)",
    "C7-heading-field-x0.5": "+ heading path as a BM25 field (weight 0.5)",
    "L2a-title-field-x1": "+ page title as a BM25 field (weight 1)",
    "C8-title-field-x0.5": "+ page title as a BM25 field (weight 0.5)",
    "L2b-signature-field-x1": "+ API signatures as a BM25 field (weight 1)",
    "L2c-signature-field-x2": "+ API signatures as a BM25 field (weight 2)",
    "L2d-title+signature-x1": "+ page title and API signature fields (weight 1)",
    "L3a-identifier-route-w1": "+ a third list: chunks defining a named API (weight 1)",
    "L3b-identifier-route-w2": "+ a third list: chunks defining a named API (weight 2)",
    "L4a-depth-50": "fuse the top 50 of each list",
    "L4b-depth-100": "fuse the top 100 of each list",
    "L4c-bm25-weight-0.5": "BM25 weighted 0.5 in the fusion",
    "L4d-bm25-weight-0.75": "BM25 weighted 0.75 in the fusion",
    "L4e-bm25-weight-1.5": "BM25 weighted 1.5 in the fusion",
    "L4f-bm25-weight-2": "BM25 weighted 2 in the fusion",
    "L5a-max-1-per-page": "at most 1 chunk per page",
    "L5b-max-2-per-page": "at most 2 chunks per page",
    "L5c-max-3-per-page": "at most 3 chunks per page",
    "L6a-changelog-factor-0.5": "release notes demoted (score x 0.5)",
    "L6b-changelog-factor-0.8": "release notes demoted (score x 0.8)",
    "R0-sentencemax-on-ref": "+ the best-sentence reranker",
    "R-d20-1-hand-blend-pool20": "+ a hand-weighted reranker over the top 20",
    "R-d50-1-hand-blend-pool100": "+ a hand-weighted reranker over the top 100",
    "B-re-lr-all-pool20-cv5x5": "+ a trained reranker, 19 signals, top 20 (cross-validated)",
    "B-re-lr-all-C0.1-pool20-cv5x5": "+ a trained reranker, 19 signals, top 20, stronger regularisation (cross-validated)",
    "B-re-lr-small-pool20-cv5x5": "+ a trained reranker, 8 signals, top 20 (cross-validated)",
    "B-re-lr-small-C0.1-pool20-cv5x5": "+ a trained reranker, 8 signals, top 20, stronger regularisation (cross-validated)",
    "R-d20-2-lr-blend-pool30-cv5-seed0": "+ a trained reranker, 19 signals, top 30 (one cross-validation)",
    "R-d50-2-lr-blend-pool50-cv5-seed0": "+ a trained reranker, 19 signals, top 50 (one cross-validation)",
    "R-d50-2-lr-blend-pool100-cv5-seed0": "+ a trained reranker, 19 signals, top 100 (one cross-validation)",
    "C1-heading+title-fields": "+ heading path and page title fields",
    "C2-heading-field+changelog-0.5": "+ heading path field, release notes x 0.5",
    "C3-title-field+changelog-0.5": "+ page title field (weight 1), release notes x 0.5",
    "C4-heading+title+changelog-0.5": "+ heading path and page title fields, release notes x 0.5",
    "C5-heading+title+changelog-0.5+route": "+ heading path and page title fields, release notes x 0.5, named-API list",
    "C6-heading+title+changelog-0.5+depth50": "+ heading path and page title fields, release notes x 0.5, top 50 fused",
    "B-C3-lr-all-pool20-cv5x5": "+ page title field (weight 1), release notes x 0.5, trained reranker with 19 signals (cross-validated)",
    "B-C3-lr-small-pool20-cv5x5": "+ page title field (weight 1), release notes x 0.5, trained reranker with 8 signals (cross-validated)",
    "B-C8-lr-small-pool20-cv5x5": "+ page title field (weight 0.5), trained reranker with 8 signals (cross-validated)",
    "B-C8-lr-small+sigwin-pool20-cv5x5": "+ page title field (weight 0.5), trained reranker with 8 signals and API-entry vectors (cross-validated)",
    "B-C9-lr-small-pool20-cv5x5": "+ page title field (weight 0.5), release notes x 0.5, trained reranker with 8 signals (cross-validated)",
    "C9-title-x0.5+changelog-0.5": "+ page title field (weight 0.5), release notes x 0.5",
    "course-baseline-words-150-30": "the course baseline: 150-word windows, hybrid",
    "words-150-30-hybrid-no-rerank": "150-word windows, raglab's hybrid, no reranker",
    "current-default-words-150-30-sentencemax": "the default of that time: 150-word windows, hybrid, best-sentence reranker",
}


def lever_label(name: str) -> str:
    """A lab configuration's code in plain words.

    >>> lever_label("C9-title-x0.5+changelog-0.5")
    '+ page title field (weight 0.5), release notes x 0.5'
    """
    return LEVER_LABELS[name]


def lever_kind(name: str) -> str:
    """What a lab configuration changes: the reference, one retriever alone, one change, a combination of changes,
    a reranker on top, or the course's 150-word windows.

    >>> [lever_kind(n) for n in ("L4a-depth-50", "C9-title-x0.5+changelog-0.5", "B-C8-lr-small-pool20-cv5x5")]
    ['one change', 'combination', 'reranker']
    """
    label = LEVER_LABELS[name]
    if "words" in name:
        return "150-word windows"
    if name.startswith("ref-"):
        return "reference"
    if "alone" in label:
        return "one retriever"
    if "reranker" in label:
        return "reranker"
    return "combination" if ", " in label or " and " in label else "one change"


def lever_frame(rows: list[dict]):
    """The lab's dev table with plain labels: one row per configuration (its kind, doc hit@5, recall@5, MRR@10,
    hit@1, and MRR@10's paired difference from the reference with its 95% interval)."""
    import pandas as pd  # lazy: pandas is for notebooks

    frame = pd.DataFrame([{"configuration": lever_label(r["name"]), "kind": lever_kind(r["name"]),
                           "doc hit@5": r["doc_hit"], "recall@5": r["recall"], "MRR@10": r["mrr"], "hit@1": r["hit1"],
                           "ΔMRR@10": r["diff"], "low": r["lo"], "high": r["hi"]} for r in rows])
    return frame.set_index("configuration")


def lab_questions(path: str | Path = LAB) -> dict[str, int]:
    """How many dev questions the lab chose on (``{"dev": all, "answerable": with evidence}``), from its record."""
    text = Path(path).read_text(encoding="utf-8")
    m = re.search(r"dev split\*\* of `[^`]+` \((\d+) questions:\s+(\d+) answerable", text)
    return {"dev": int(m.group(1)), "answerable": int(m.group(2))}
