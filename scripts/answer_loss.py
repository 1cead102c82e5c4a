"""Where an answer loses the fact retrieval found: one stage per answerable question of a split, in the
pipeline's order, for the default assistant (extractive generator) on the whole docs.

    python scripts/answer_loss.py [--split dev] [--profile full] [--json OUT] [--markdown OUT]
                                  [--floor F] [--top-sources N] [--max-sentences N] [--context B]
                                  [--scorer PATH]

The last five change the extractive generator's settings for a dev study of what they would recover
(the shipped defaults: floor 0.5, 3 sources read, 3 sentences quoted); the library is not changed.

Each answerable question is put at the first stage where its required facts (``Question.facts``, compared
as ``metrics.facts_present`` compares them) are no longer all there:

1. ``not in the top 5``: no retrieved source (widened to whole sentences) holds them;
2. ``refused: weak evidence``: held, but the evidence strength is under the threshold (no generation);
3. ``only in sources 4-5``: the generator reads the top ``top_sources`` (3) sources only;
4. ``in a source, no sentence``: the sources read hold them, their quotable sentences do not (a heading,
   a signature line, text past the sentence cap);
5. ``removed: <layer>``: the quotable sentences hold them, the candidates do not: a sentence flagged by an
   injection layer (the rule's name, ``learned``, ``pair``, ``continues``, ``foreign-script``), or left out
   as too short or repeated (``removed: short or repeated``);
6. ``refused: sentence floor``: candidates hold them, but no candidate's cosine reaches the floor (0.5);
7. ``cut by the budget``: not among the quoted sentences, but among the first ten the same scores pick;
8. ``candidate not chosen``: candidates hold them, the picks (even ten) do not, because the sentences
   holding a fact score under the floor or are outranked;
9. ``refused: <reason>``: the picks hold them, the checks refused the answer (citations, claims);
10. ``answer lacks it``: answered, picks hold them, the final text does not (contact points omitted);
11. ``carried``: the answer holds them (checked first: exactly what ``metrics.answer_correct`` counts).

A sentence counts with the API line its quote may carry (``Quotable.api``).

The script reads the assistant's own methods (retrieve, the generator's candidates, scores and pick) and
changes nothing; the stage of a question is a fact about today's code, and every later change to the answer
step reports this table again.
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
from collections import Counter, defaultdict

import numpy as np

from raglab.infra.assemble import build_assistant
from raglab.evaluation.golden import golden_file, load_golden, user_for
from raglab.evaluation.metrics import evidence_recall, facts_present, normalize_answer
from raglab.base.files import atomic_open
from raglab.answerer.quotes import quotables
from raglab.guards.widening import source_at
from raglab.guards.injection import judged
from raglab.answerer.selection import SentenceScorer

STAGES = ("not in the top 5", "refused: weak evidence", "only in sources 4-5", "in a source, no sentence",
          "removed", "refused: sentence floor", "refused: sentence score", "cut by the budget", "candidate not chosen", "refused: checks",
          "answer lacks it", "carried")


def joined(texts) -> str:
    return " ".join(texts)


def said(c) -> str:
    """What quoting a sentence can put in an answer: its API line (signature or heading) and its text."""
    return f"{c.api or ''} {c.text} {c.plain}"


def stage_of(assistant, q) -> dict:
    """The stage where question ``q`` loses its facts, with the numbers that put it there."""
    gen, index = assistant.generator, assistant.retriever.index
    user = user_for(q)
    answer = assistant.ask(q.question, user)     # retrieves once: its sources and strength are read from it
    strength = answer.evidence
    chunks = [index.chunk(r["id"]) for r in answer.retrieved]
    sources = [source_at(n, *index.locate(r["id"])) for n, r in enumerate(answer.retrieved, 1)]
    row = {"id": q.id, "type": q.type, "evidence@5": evidence_recall(chunks, q, 5) > 0,
           "strength": round(float(strength), 4)}
    row["words"] = None if answer.refused else len(answer.answer.split())
    if not answer.refused and facts_present(answer.answer, q.facts):   # what metrics.answer_correct counts
        return row | {"stage": "carried"}
    read = sources[: gen.top_sources]
    has = lambda texts: facts_present(joined(texts), q.facts)  # noqa: E731
    if not has(s.chunk.text for s in sources):
        return row | {"stage": "not in the top 5"}
    if answer.reason == "weak-evidence":
        return row | {"stage": "refused: weak evidence"}
    if not has(s.chunk.text for s in read):
        return row | {"stage": "only in sources 4-5"}
    sentences = [(s, qt) for s in read for qt in quotables(s, gen.sentence_cap)]
    if not has(said(qt) for _, qt in sentences):
        return row | {"stage": "in a source, no sentence"}
    candidates = gen.candidates(sources)
    if not has(said(c) for c in candidates):
        flagged = []
        for s in read:
            qs = quotables(s, gen.sentence_cap)
            flags = judged([x.plain for x in qs], [x.follows for x in qs], gen.detector, s.before, s.after, s.script)
            flagged += [f for x, f in zip(qs, flags) if f and any(normalize_answer(fact) in normalize_answer(said(x)) for fact in q.facts)]
        layer = flagged[0] if flagged else "short or repeated"
        return row | {"stage": "removed", "layer": layer}
    sel = gen.selection(q.question, sources)
    cos = sel["cos"]
    holding = [i for i, c in enumerate(candidates) if any(normalize_answer(f) in normalize_answer(said(c)) for f in q.facts)]
    row |= {"best cosine": round(float(cos[0].max()), 4),
            "holding cosine": round(float(max(cos[:, i].max() for i in holding)), 4) if holding else None}
    if sel["refusal"]:
        return row | {"stage": "refused: sentence floor" if gen.scorer is None else "refused: sentence score",
                      "value": sel["refusal"]["value"]}
    picked = sel["chosen"]
    if not has(said(candidates[i]) for i in picked):
        # the first ten the same scores would choose without the budget
        if gen.scorer is None:
            wide, points, bar = replace_budget(gen, 10).pick(sel["score"]), sel["score"].max(axis=0), gen.floor
        else:
            points, bar = sel["probability"], -1.0     # the scorer's threshold is on the best sentence alone
            wide = list(np.argsort(-points, kind="stable")[:10])
        if has(said(candidates[i]) for i in wide):
            return row | {"stage": "cut by the budget"}
        low = not holding or max(points[i] for i in holding) < bar
        return row | {"stage": "candidate not chosen", "layer": "scored under the floor" if low else "outranked"}
    if answer.refused:
        return row | {"stage": "refused: checks", "reason": answer.reason}
    return row | {"stage": "answer lacks it"}


def replace_budget(gen, n: int):
    """The same generator quoting up to ``n`` sentences (its picks' order is unchanged for the first ones)."""
    other = copy.copy(gen)
    other.max_sentences = n
    return other


def table(rows: list[dict]) -> str:
    """Counts per stage, overall and per question type, as Markdown."""
    types = sorted({r["type"] for r in rows})
    label = lambda r: r["stage"] + (f": {r['layer']}" if "layer" in r else "") + (  # noqa: E731
        f" ({r['reason']})" if "reason" in r else "")
    counts = Counter(label(r) for r in rows)
    by_type = defaultdict(Counter)
    for r in rows:
        by_type[r["type"]][label(r)] += 1
    order = sorted(counts, key=lambda s: (STAGES.index(s.split(":")[0] if s.split(":")[0] in STAGES else
                                                        next(x for x in STAGES if s.startswith(x))), s))
    n = len(rows)
    lines = ["| stage | questions | share | " + " | ".join(types) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in types) + " |"]
    for s in order:
        lines.append(f"| {s} | {counts[s]} | {counts[s] / n:.1%} | " + " | ".join(str(by_type[t][s]) for t in types) + " |")
    lines.append(f"| all | {n} | 100% | " + " | ".join(str(sum(by_type[t].values())) for t in types) + " |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> dict:
    """The headline shares: evidence in the top 5 (the golden's quotes), facts in the top 5 sources, facts
    carried, and the share lost after retrieval (facts in the top 5, not in the answer)."""
    n = len(rows)
    in_top = [r for r in rows if r["stage"] != "not in the top 5"]
    carried = sum(r["stage"] == "carried" for r in rows)
    ev5 = [r for r in rows if r["evidence@5"]]
    words = [r["words"] for r in rows if r.get("words") is not None]
    return {"answerable": n, "evidence in the top 5": round(len(ev5) / n, 4),
            "facts in the top 5 sources": round(len(in_top) / n, 4), "facts carried": round(carried / n, 4),
            "lost after retrieval (facts in the top 5, not carried)": round((len(in_top) - carried) / n, 4),
            "lost after retrieval (evidence in the top 5, not carried)":
                round(sum(r["stage"] != "carried" for r in ev5) / n, 4),
            "median answer words (answered)": statistics.median(words) if words else None}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--split", default="dev", choices=("dev", "test"))
    p.add_argument("--profile", default="full")
    p.add_argument("--json", help="write every question's stage as JSON")
    p.add_argument("--markdown", help="write the tables as Markdown")
    p.add_argument("--floor", type=float, help="the generator's sentence floor (default: the shipped 0.5)")
    p.add_argument("--top-sources", type=int, help="sources the generator reads (default: the shipped 3)")
    p.add_argument("--max-sentences", type=int, help="sentences it quotes (default: the shipped 3)")
    p.add_argument("--context", type=float, help="how far a continuing sentence is scored up towards the one before it")
    p.add_argument("--scorer", help="choose and refuse with this sentence scorer (scripts/sentence_scorer_dev.py --write)")
    args = p.parse_args()
    if args.split == "test" and any(v is not None for v in (args.floor, args.top_sources, args.max_sentences, args.scorer, args.context)):
        p.error("settings are studied on dev only; the test split is read with the shipped generator")
    assistant = build_assistant("python-docs", args.profile, generator="extractive")
    gen = assistant.generator
    gen.floor = gen.floor if args.floor is None else args.floor
    gen.top_sources = gen.top_sources if args.top_sources is None else args.top_sources
    gen.max_sentences = gen.max_sentences if args.max_sentences is None else args.max_sentences
    gen.context = gen.context if args.context is None else args.context
    setting = (f"floor {gen.floor}, {gen.top_sources} sources read, {gen.max_sentences} sentences quoted"
               + (f", context {gen.context}" if gen.context else ""))
    if args.scorer:
        gen.scorer = SentenceScorer.load(args.scorer)
        setting = (f"{gen.top_sources} sources read, a sentence scorer (threshold {gen.scorer.threshold}, "
                   f"{gen.scorer.words} words)")
    questions = [q for q in load_golden(golden_file("python-docs", args.profile), None, split=args.split)
                 if q.type != "unanswerable"]
    rows = [stage_of(assistant, q) for q in questions]
    head = summary(rows)
    text = (f"# Where the answer loses the fact: {args.split} split, {args.profile} docs, extractive ({setting})\n\n"
            + "\n".join(f"- {k}: {v:.1%}" if isinstance(v, float) and "words" not in k else f"- {k}: {v}"
                        for k, v in head.items())
            + "\n\n" + table(rows) + "\n")
    print(text)
    if args.markdown:
        with atomic_open(args.markdown) as fh:
            fh.write(text)
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump({"split": args.split, "profile": args.profile, "setting": setting, "summary": head, "questions": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
