"""Fit a sentence scorer for the extractive generator on the dev split, choose its threshold and word budget
there, and (with --write PATH) write it for ``ExtractiveGenerator(scorer=SentenceScorer.load(PATH))``.

    python scripts/sentence_scorer_dev.py [--top-sources 5] [--length 1.15] [--write PATH] [--json OUT]

On the dev split of the whole docs (the test split is not read), for every question: the default
assistant's top 5 sources, the candidate sentences of the first ``--top-sources`` (injection layers
applied as shipped) and their ``raglab.answerer.selection.SIGNALS``. A candidate's label is whether it is part of the
golden set's evidence quote (or holds it): the sentence that states the fact. The logistic regression is
fitted in 5 folds grouped by question, so every probability below is held out (no question is scored by
a model that saw it).

With the held-out probabilities, every threshold (0 to 0.5) and word budget (40 to 100) is scored before the
citation and claim checks: answerable questions answered with all their facts in the chosen sentences,
unanswerable ones refused (by the evidence gate, which is unchanged, or by no sentence at the threshold),
and the median words chosen, on the docs' dev split and on the dev folders (``evals/folders``, rounds 2 and 3,
each with its own calibrated gate; their questions join the fit: round 4 is not read). The hand-set rule of earlier releases (floor 0.5, 3 sources, 3 sentences) is
scored the same way on the same questions. The setting kept is the one that carries the most facts (docs and folders) with
no fewer unanswerable questions refused on either and a docs median length at most ``--length`` times the rule's; the
shipped weights are then fitted on the whole dev split. Printed: every number, the weights on standardized
signals, and how each question's best probability and the evidence strength tell answerable from
unanswerable questions (ROC AUC).
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold
from sklearn.preprocessing import StandardScaler

from raglab.infra.assemble import build_assistant
from raglab.base.config import PROJECT_ROOT
from raglab.evaluation.golden import fold, golden_file, load_golden, user_for
from raglab.evaluation.metrics import facts_present
from raglab.base.files import atomic_open
from raglab.guards.widening import source_at
from raglab.answerer.selection import SIGNALS, SentenceScorer, budget_words, sentence_signals

THRESHOLDS = [round(t, 2) for t in np.arange(0.0, 0.51, 0.01)]
BUDGETS = list(range(40, 101, 5))


def said(c) -> str:
    """What quoting a sentence can put in an answer: its API line and its text."""
    return f"{c.api or ''} {c.text}"


DEV_FOLDERS = ("folders", "folders_round2", "folders_round3")   # round 4 stays blind


def question_rows(assistant, rule, learned, q) -> dict:
    """One question: gated or not, the rule's choice, and the scorer's candidates with signals and labels."""
    index = assistant.retriever.index
    hits, strength, _ = assistant.retrieve(q.question, user_for(q))
    sources = [source_at(n, *index.locate(h.id)) for n, h in enumerate(hits, 1)]
    out = {"id": q.id, "type": q.type, "facts": list(q.facts), "strength": float(strength),
           "gated": bool(strength < assistant.threshold)}
    shipped = rule.selection(q.question, sources)
    out["rule"] = [said(shipped["candidates"][i]) for i in shipped["chosen"]]
    cands = learned.candidates(sources)
    out["texts"], out["words"] = [said(c) for c in cands], [budget_words(c) for c in cands]
    out["X"], out["y"] = np.zeros((0, len(SIGNALS))), np.zeros(0)
    if cands:
        sel = learned.selection(q.question, sources)
        out["X"] = sentence_signals(sel["cos"], sel["score"], sel["lexical"][0], cands, sources)
        quotes = [fold(e["quote"]) for e in q.evidence if e.get("quote")]
        out["y"] = np.array([any(fold(c.plain) in e or e in fold(c.plain) for e in quotes) for c in cands], float)
    return out


def outcome(rows, chosen) -> dict:
    """Facts carried (answerable, answered, facts in the chosen text), unanswerable refused, median words."""
    carried, refused, words = 0, 0, []
    for r, texts in zip(rows, chosen):
        answered = not r["gated"] and bool(texts)
        if r["type"] == "unanswerable":
            refused += not answered
        elif answered:
            words.append(sum(len(t.split()) for t in texts))
            carried += facts_present(" ".join(texts), tuple(r["facts"]))
    answerable = sum(r["type"] != "unanswerable" for r in rows)
    return {"facts": round(carried / answerable, 4), "carried": carried,
            "unanswerable refused": refused, "median words": statistics.median(words) if words else 0}


def fit(X, y) -> tuple[StandardScaler, LogisticRegression]:
    scaler = StandardScaler().fit(X)
    return scaler, LogisticRegression(max_iter=2000).fit(scaler.transform(X), y)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--top-sources", type=int, default=5, help="sources whose sentences are candidates")
    p.add_argument("--length", type=float, default=1.15, help="longest median answer, times the rule's")
    p.add_argument("--write", metavar="PATH", help="write the scorer fitted on all of it (SentenceScorer.load reads it)")
    p.add_argument("--json", help="write the numbers as JSON")
    args = p.parse_args()
    assistant = build_assistant("python-docs", "full", generator="extractive")
    rule = copy.copy(assistant.generator)
    rule.scorer, rule.top_sources, rule.max_sentences, rule.floor = None, 3, 3, 0.5
    learned = copy.copy(rule)
    learned.top_sources = args.top_sources
    questions = load_golden(golden_file("python-docs", "full"), None, split="dev")
    rows = [question_rows(assistant, rule, learned, q) | {"set": "docs"} for q in questions]
    for folder in sorted(f.parent for d in DEV_FOLDERS for f in (PROJECT_ROOT / "evals" / d).glob("*/questions.jsonl")):
        there = build_assistant(str(folder / "pages"), "small", generator="extractive")
        here_rule, here_learned = copy.copy(rule), copy.copy(learned)
        here_rule.embedder = here_learned.embedder = there.generator.embedder
        here_rule.detector = here_learned.detector = there.generator.detector
        rows += [question_rows(there, here_rule, here_learned, q) | {"set": folder.name}
                 for q in load_golden(folder / "questions.jsonl", None)]
    docs = [r for r in rows if r["set"] == "docs"]
    folders = [r for r in rows if r["set"] != "docs"]
    keep = [k for k, r in enumerate(rows) if len(r["y"])]
    X = np.vstack([rows[k]["X"] for k in keep])
    y = np.concatenate([rows[k]["y"] for k in keep])
    groups = np.concatenate([[k] * len(rows[k]["y"]) for k in keep])
    held = np.zeros(len(y))
    for train, test in GroupKFold(n_splits=5).split(X, y, groups):
        scaler, model = fit(X[train], y[train])
        held[test] = model.predict_proba(scaler.transform(X[test]))[:, 1]
    prob, at = {}, 0
    for k in keep:
        prob[k] = held[at:at + len(rows[k]["y"])]
        at += len(rows[k]["y"])

    def both(chosen) -> dict:
        """The docs' dev split and the dev folders, apart."""
        return {"docs": outcome(docs, [chosen[k] for k, r in enumerate(rows) if r["set"] == "docs"]),
                "folders": outcome(folders, [chosen[k] for k, r in enumerate(rows) if r["set"] != "docs"])}

    base = both([r["rule"] for r in rows])
    grid = []
    for t in THRESHOLDS:
        for w in BUDGETS:
            probe = SentenceScorer(("x",), (0.0,), (1.0,), (0.0,), 0.0, t, w)
            chosen = [[r["texts"][i] for i in probe.choose(prob[k], r["words"])] if k in prob else []
                      for k, r in enumerate(rows)]
            grid.append({"threshold": t, "words": w} | both(chosen))
    allowed = [g for g in grid if all(g[s]["unanswerable refused"] >= base[s]["unanswerable refused"] for s in base)
               and g["docs"]["median words"] <= args.length * base["docs"]["median words"]]
    best = max(allowed, key=lambda g: (g["docs"]["carried"] + g["folders"]["carried"], -g["words"], g["threshold"]))

    scaler, model = fit(X, y)
    scorer = SentenceScorer(SIGNALS, tuple(scaler.mean_.round(6).tolist()), tuple(scaler.scale_.round(6).tolist()),
                            tuple(model.coef_[0].round(6).tolist()), round(float(model.intercept_[0]), 6),
                            best["threshold"], best["words"])
    labels = [r["type"] != "unanswerable" for r in rows]
    best_prob = [float(prob[k].max()) if k in prob else 0.0 for k in range(len(rows))]
    measured = {
        "split": "dev, and the dev folders (" + ", ".join(DEV_FOLDERS) + ")", "questions": len(rows),
        "answerable": sum(labels), "candidates from sources": args.top_sources,
        "candidates": int(len(y)), "positives": int(y.sum()),
        "rule (floor 0.5, 3 sources, 3 sentences), before the checks": base,
        "kept (held-out probabilities), before the checks": best,
        "length limit": f"median words at most {args.length} x the rule's",
        "ROC AUC answerable vs not, docs' dev split": {
            "evidence strength": round(roc_auc_score(labels[:len(docs)], [r["strength"] for r in docs]), 4),
            "best held-out probability": round(roc_auc_score(labels[:len(docs)], best_prob[:len(docs)]), 4)},
    }
    scorer = SentenceScorer(scorer.signals, scorer.mean, scorer.scale, scorer.coef, scorer.intercept,
                            scorer.threshold, scorer.words, measured)
    print(json.dumps(measured, indent=1))
    print("weights on standardized signals, largest first:")
    for name, weight in scorer.weights():
        print(f"  {weight:+.3f}  {name}")
    if args.write:
        scorer.save(args.write)
        print(f"wrote {args.write}")
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump(measured | {"grid": grid, "weights": scorer.weights()}, fh, indent=1)


if __name__ == "__main__":
    main()
