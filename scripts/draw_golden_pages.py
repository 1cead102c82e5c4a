"""The seeded draw behind the golden set's second batch (issue 25): which ids, which types, which pages.

The full docs' 497 page ids are sorted and shuffled with ``random.Random(SEED)``; the new questions'
ids continue the set's numbering (``full-124`` on) until the split rule (``evals/README.md``) has put
``TEST_NEW`` of them in test; their types are a seeded shuffle of the set's type mix; the answerable
ones take the drawn pages in order, ``PER_PAGE`` questions a page (a ``multi`` question's second
passage may come from any page). A drawn page with nothing to ask (an index, a stub, a changelog
list) is skipped and named in the plan's ``skipped``; the next page of the draw takes its questions.

    python scripts/draw_golden_pages.py [--json OUT]     # the plan the question writers followed
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random

SEED = 25
FIRST = 124          # the first new id: full-124 (full-001..full-123 are the first batch)
TEST_NEW = 156       # new test questions: 74 + 156 = 230 in the test split
PER_PAGE = 2
MIX = {"fact": 0.40, "identifier": 0.15, "paraphrase": 0.15, "multi": 0.15, "unanswerable": 0.15}


def split_of(qid: str) -> str:
    """The split rule of evals/README.md."""
    return "test" if int(hashlib.sha256(qid.encode("utf-8")).hexdigest(), 16) % 5 < 3 else "dev"


def plan(page_ids: list[str]) -> dict:
    """Ids, types and pages of the new questions, from the sorted page ids alone."""
    ids, n = [], FIRST
    while sum(split_of(i) == "test" for i in ids) < TEST_NEW:
        ids.append(f"full-{n:03d}")
        n += 1
    counts = {t: round(share * len(ids)) for t, share in MIX.items()}
    counts["fact"] += len(ids) - sum(counts.values())
    types = [t for t, k in counts.items() for _ in range(k)]
    rng = random.Random(SEED)
    rng.shuffle(types)
    pages = sorted(page_ids)
    random.Random(SEED).shuffle(pages)
    rows, answerable = [], 0
    for qid, qtype in zip(ids, types):
        page = None if qtype == "unanswerable" else pages[answerable // PER_PAGE]
        answerable += qtype != "unanswerable"
        rows.append({"id": qid, "split": split_of(qid), "type": qtype, "page": page})
    return {"seed": SEED, "questions": rows, "draw": pages, "pages_used": (answerable + PER_PAGE - 1) // PER_PAGE,
            "counts": counts}


def main() -> None:
    from raglab.infra.corpus import load_corpus

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the plan as JSON")
    args = p.parse_args()
    result = plan([d.id for d in load_corpus("python-docs", "full")])
    qs = result["questions"]
    print(f"seed {SEED}: {len(qs)} questions ({sum(q['split'] == 'test' for q in qs)} test), "
          f"types {result['counts']}, the first {result['pages_used']} pages of the draw")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
