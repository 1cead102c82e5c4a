"""Dev study, library unchanged: would a logistic regression over signals the project already computes choose
the sentences that hold a question's facts better than the extractive generator's hand-set score?

    python scripts/sentence_scorer_dev.py [--top-sources 5] [--budget 3] [--json OUT]

On the dev split of the whole docs (the test split is not read), for every question: the default
assistant's top 5 sources, the generator's candidate sentences of the first ``--top-sources`` of them
(injection layers applied as shipped), and for each candidate the signals below. A candidate's label is
whether it is part of the golden set's evidence quote (or holds it), the sentence that states the fact. The regression is fitted and scored
in 5 folds grouped by question (no question is scored by a model that saw it). Reported, for the
answerable questions: the share whose facts are all in the sentences picked, for the shipped rule (its
score, floor and pick at the same budget, on the same candidates) and for the learned probability (the best
``--budget`` sentences, no floor), before the citation and claim checks; the weights, on standardized signals; and how
well each question's best probability, and the evidence strength, tell answerable from unanswerable
questions (ROC AUC).

Signals: the shipped rule's score (best over the question and its parts), the same below the question's best
candidate and its rank among the question's candidates, the MiniLM cosine below the question's best, the cosine to the question (best over the question and its parts), the generator's
weighted term overlap, the source's rank and fused score, in the top source, code, under an API line,
continues a paragraph, position in its source, words (log), and the best neighbour's cosine.
"""
from __future__ import annotations

import argparse
import json

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from raglab.assistant import build_assistant
from raglab.evaluation.golden import fold, golden_file, load_golden, user_for
from raglab.evaluation.metrics import facts_present
from raglab.files import atomic_open
from raglab.generate import question_parts, source_at

SIGNALS = ("shipped score", "shipped score below the question's best", "shipped rank (log)",
           "cosine below the question's best", "cosine", "term overlap", "source rank", "fused score", "top source", "code", "under an API line",
           "continues a paragraph", "position in source", "log words", "neighbour cosine")


def question_rows(assistant, q) -> dict:
    """One question's candidates, their signals, labels, and the shipped rule's picks."""
    gen, index = assistant.generator, assistant.retriever.index
    hits, strength, _ = assistant.retrieve(q.question, user_for(q))
    sources = [source_at(n, *index.locate(h.id)) for n, h in enumerate(hits, 1)]
    out = {"id": q.id, "type": q.type, "strength": float(strength), "facts": list(q.facts), "texts": [],
           "X": np.zeros((0, len(SIGNALS))), "y": np.zeros(0), "shipped": []}
    cands = gen.candidates(sources)
    if not cands:
        return out
    questions = [q.question, *question_parts(q.question)]
    cos, score = gen.scores(questions, cands, sources)
    best_cos = cos.max(axis=0)
    lex = (score[0] - cos[0] - gen.top_bonus * np.array([c.n == sources[0].n for c in cands])
           + gen.code_penalty * np.array([c.code for c in cands])) / gen.lexical
    fused = {n: h.score for n, h in enumerate(hits, 1)}
    per_source: dict[int, list[int]] = {}
    for i, c in enumerate(cands):
        per_source.setdefault(c.n, []).append(i)
    top_score = score.max(axis=0)
    rank = np.argsort(np.argsort(-top_score, kind="stable"), kind="stable")
    rows = []
    for i, c in enumerate(cands):
        mates = per_source[c.n]
        at = mates.index(i)
        near = [best_cos[j] for j in (mates[at - 1] if at else None, mates[at + 1] if at + 1 < len(mates) else None)
                if j is not None]
        rows.append([top_score[i], top_score[i] - top_score.max(), np.log1p(rank[i]), best_cos[i] - best_cos.max(),
                     best_cos[i], lex[i], c.n, fused[c.n], c.n == sources[0].n, c.code, c.api is not None,
                     c.follows, at / max(1, len(mates) - 1), np.log(len(c.plain.split())), max(near, default=0.0)])
    quotes = [fold(e["quote"]) for e in q.evidence if e.get("quote")]
    out["X"] = np.array(rows, dtype=float)
    out["y"] = np.array([any(fold(c.plain) in e or e in fold(c.plain) for e in quotes) for c in cands], float)
    out["texts"] = [f"{c.api or ''} {c.text}" for c in cands]   # a quote may carry its API line
    out["shipped"] = [] if cos[0].max() < gen.floor else gen.pick(score)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--top-sources", type=int, default=5, help="sources whose sentences are candidates (shipped: 3)")
    p.add_argument("--budget", type=int, default=3, help="sentences the learned scorer picks (shipped: 3)")
    p.add_argument("--json", help="write the numbers as JSON")
    args = p.parse_args()
    assistant = build_assistant("python-docs", "full", generator="extractive")
    assistant.generator.top_sources = args.top_sources
    assistant.generator.max_sentences = args.budget     # the shipped rule is compared at the same budget
    questions = load_golden(golden_file("python-docs", "full"), None, split="dev")
    data = [question_rows(assistant, q) for q in questions]
    answerable = [d for d in data if d["type"] != "unanswerable"]
    X = np.vstack([d["X"] for d in data if len(d["y"])])
    y = np.concatenate([d["y"] for d in data if len(d["y"])])
    groups = np.concatenate([[k] * len(d["y"]) for k, d in enumerate(data) if len(d["y"])])
    prob = np.zeros(len(y))
    folds = GroupKFold(n_splits=5)
    for train, held in folds.split(X, y, groups):
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X[train], y[train])
        prob[held] = model.predict_proba(X[held])[:, 1]
    whole = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
    weights = dict(zip(SIGNALS, np.round(whole[-1].coef_[0], 3).tolist()))
    at, shipped_ok, learned_ok, any_ok, best = 0, 0, 0, 0, {}
    for d in data:
        n = len(d["y"])
        pk = prob[at:at + n]
        at += n
        best[d["id"]] = float(pk.max()) if n else 0.0
        if d["type"] == "unanswerable":
            continue
        learned = list(np.argsort(-pk, kind="stable")[: args.budget]) if n else []
        has = lambda idx: facts_present(" ".join(d["texts"][i] for i in idx), tuple(d["facts"]))  # noqa: E731
        any_ok += bool(n) and has(range(n))
        shipped_ok += bool(d["shipped"]) and has(d["shipped"])
        learned_ok += bool(learned) and has(learned)
    labels = [d["type"] != "unanswerable" for d in data]
    result = {
        "split": "dev", "top_sources": args.top_sources, "budget": args.budget,
        "questions": len(data), "answerable": len(answerable), "candidates": int(len(y)), "positives": int(y.sum()),
        "facts in the candidates": round(any_ok / len(answerable), 4),
        "facts in the picks, shipped rule": round(shipped_ok / len(answerable), 4),
        "facts in the picks, learned (held-out folds)": round(learned_ok / len(answerable), 4),
        "weights (standardized signals)": weights,
        "ROC AUC answerable vs not": {
            "evidence strength": round(roc_auc_score(labels, [d["strength"] for d in data]), 4),
            "best learned probability": round(roc_auc_score(labels, [best[d["id"]] for d in data]), 4)},
    }
    print(json.dumps(result, indent=1))
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
