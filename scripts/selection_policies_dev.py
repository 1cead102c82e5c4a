"""Ways to spend the extractive answer's budget, on the dev split of the full docs, before the checks.

    python scripts/selection_policies_dev.py [--profile full] [--cache PICKLE]

The shipped generator's selection (``ExtractiveGenerator.selection``: candidates, cosines, scores) is
computed once per dev question from 3 and from 5 sources and kept in ``--cache`` (a pickle in the work
dir by default); each policy then re-chooses from those numbers. A policy is ``k`` picks (``pick``'s order:
the best for the question, then for each part, then the next best), optionally each with its
**continuation** (the next sentence of the same paragraph, ``Quotable.follows``), optionally a
**context boost** ``beta`` (a sentence that continues another scores ``score + beta * (previous - score)``
when that is higher), optionally a word cap ``W``. Printed: questions whose facts are in the chosen
sentences (with the API lines they may carry, as ``scripts/answer_loss.py`` counts them), of the answerable,
and the median words quoted, against the shipped choice (3 sources, 3 picks). Dev only.
"""
from __future__ import annotations

import argparse
import itertools
import pickle
import statistics
import sys
from pathlib import Path

import numpy as np

from raglab.base import config
from raglab.infra.assemble import build_assistant
from raglab.evaluation.golden import golden_file, load_golden, user_for
from raglab.evaluation.metrics import facts_present
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.guards.widening import source_at

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answer_loss import said  # noqa: E402  -- what quoting a sentence can put in an answer


def selections(profile: str) -> list[dict]:
    a = build_assistant("python-docs", profile, generator="extractive")
    gen, index = a.generator, a.retriever.index
    wide = ExtractiveGenerator(gen.embedder, top_sources=5, detector=gen.detector)
    out = []
    for q in load_golden(golden_file("python-docs", profile), None, split="dev"):
        ans = a.ask(q.question, user_for(q))
        sources = [source_at(n, *index.locate(r["id"])) for n, r in enumerate(ans.retrieved, 1)]
        out.append(dict(id=q.id, type=q.type, facts=q.facts, sel5=wide.selection(q.question, sources),
                        sel3=gen.selection(q.question, sources)))
    return out


def pick(score, k, floor=0.5):
    picked = []
    for row in [0, *range(1, len(score)), *[0] * k]:
        best = next((i for i in np.argsort(-score[row], kind="stable") if i not in picked), None)
        if best is not None and score[row][best] >= floor and len(picked) < k:
            picked.append(int(best))
    return picked


def nxt(c, i):
    return i + 1 if i + 1 < len(c) and c[i + 1].n == c[i].n and c[i + 1].follows else None


def words(c, idx):
    return sum(len(c[i].text.split()) for i in idx)


def policy(d, key, k=3, cont=0, beta=0.0, W=None):
    sel = d[key]
    if sel["refusal"]:
        return None
    c, score = sel["candidates"], sel["score"].copy()
    if beta:
        prev = np.full(score.shape, -np.inf)
        for i in range(1, len(c)):
            if c[i].n == c[i - 1].n and c[i].follows:
                prev[:, i] = score[:, i - 1]
        score = np.where(np.isfinite(prev), np.maximum(score, score + beta * (prev - score)), score)
    order = pick(score, 10)
    chosen = []
    for i in order:
        unit = [i] + ([j] if cont and (j := nxt(c, i)) is not None else [])
        new = [u for u in unit if u not in chosen]
        if not new:
            continue
        if W is not None and chosen and words(c, chosen + new) > W:
            break
        chosen += new
        if len([x for x in order if x in chosen]) >= k:
            break
    return chosen


def evaluate(data, key, **kw):
    n = carried = 0
    wl = []
    for d in data:
        if d["type"] == "unanswerable":
            continue
        n += 1
        ch = policy(d, key, **kw)
        if ch is None:
            continue
        c = d[key]["candidates"]
        carried += facts_present(" ".join(said(c[i]) for i in ch), d["facts"])
        wl.append(words(c, ch))
    return carried, n, statistics.median(wl)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="full")
    p.add_argument("--cache", default=str(config.work_dir() / "cache" / "selection-policies-dev.pkl"))
    args = p.parse_args()
    path = Path(args.cache)
    if path.exists():
        data = pickle.loads(path.read_bytes())
    else:
        data = selections(args.profile)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(data))
        tmp.replace(path)
    base = evaluate(data, "sel3")
    print(f"shipped (3 sources, 3 picks): {base[0]} of {base[1]}, median {base[2]} words quoted")
    print("| sources | picks | continuation | context boost | word cap | facts in the choice | median words | vs shipped |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, k, cont, beta, W in itertools.product(("sel3", "sel5"), (2, 3, 4), (0, 1), (0.0, 0.3, 0.5), (None, 70, 80, 90)):
        r = evaluate(data, key, k=k, cont=cont, beta=beta, W=W)
        print(f"| {key[-1]} | {k} | {'yes' if cont else 'no'} | {beta} | {W or '-'} | {r[0]} | {r[2]} | {r[2] / base[2]:.2f}x |")


if __name__ == "__main__":
    main()
