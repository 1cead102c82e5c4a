"""The measuring verbs: ``eval``, ``golden check``, ``tune``, ``train``, ``judge``, ``bakeoff``, ``race`` and
``experiment``, each option next to its handler."""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from raglab.base import config
from raglab.base.files import atomic_open
from raglab.book.chunking import STRATEGIES, ChunkSettings
from raglab.infra.corpus import load_corpus
from raglab.course.artifacts import jsonable
from raglab.evaluation import chunking_lab as lab
from raglab.evaluation.bakeoff import BASELINE_CELL, choose_winner, keep_or_default, run_bakeoff
from raglab.evaluation.golden import check_student_golden, golden_file, load_golden
from raglab.evaluation.headline import format_headline, run_headline
from raglab.evaluation.judge import CITATION_CHECKS_FILE, VERDICTS_FILE, format_agreement, judge_report
from raglab.evaluation.scoreboard import format_scoreboard, run_golden
from raglab.evaluation.tuning import format_tuning, tune_threshold
from raglab.experiments import training as corpus_training
from raglab.experiments.registry import EXPERIMENTS
from raglab.experiments.rewriters import make_rewriter
from raglab.infra.corpora import REGISTRY
from raglab.infra.packaged_models import TRAINED_PREFIX
from raglab.surfaces.cli.options import answer_opts, assistant_for, chunking_opts, common_opts, emit
from raglab.surfaces.plots import bakeoff_bars, score_vs_size
from raglab.surfaces.race_plots import hit_heatmap, quality_vs_cost, recall_vs_tokens


def cmd_eval(args) -> int:
    """Score a golden set. A split golden set (the full docs') with no --split gives the headline:
    the default assistant and the course baseline, dev and test side by side (``evaluation.headline``)."""
    golden = args.golden or args.corpus
    path = golden_file(golden, args.profile) if golden in REGISTRY else golden     # $RAGLAB_GOLDEN overrides
    if args.split is None and any(q.split for q in load_golden(path)):
        profile = config.profile(args.profile)
        if args.model and not args.model.startswith(TRAINED_PREFIX):
            raise SystemExit(f"--model {args.model}: the headline scores a trained bi-encoder (trained/bi-<hash>, "
                             "raglab train) beside the default; score another model with --split dev")
        report = run_headline(args.corpus, profile, path, model=args.model)
        report["command"] = f"RAGLAB_PROFILE={profile} raglab eval --corpus {args.corpus}" + \
            (f" --model {args.model}" if args.model else "") + (f" --json {args.json}" if args.json else "")
        if args.json:
            with atomic_open(args.json) as fh:
                json.dump(report, fh, indent=2)
        print(format_headline(report))
        return 0
    split = None if args.split == "all" else args.split
    board = run_golden(assistant_for(args, build=True), path, args.k, args.mode, args.retrieval_only, split)
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump(board, fh, indent=2)
    print(format_scoreboard(board))
    return 0


def cmd_golden_check(args) -> int:
    """Check a student's own golden set against the corpus and the required mix; exit 1 on any problem."""
    report = check_student_golden(args.file, load_corpus(args.corpus, args.profile))
    data = {"file": report.path, "questions": report.questions, "counts": report.counts,
            "copies": report.copies, "share_copied": round(report.share, 4), "problems": report.problems}
    emit(args, data, report.lines())
    return 1 if report.problems else 0


def cmd_tune(args) -> int:
    """Choose the refusal threshold on the dev split (or in-sample on an unsplit set) and compare with the registry."""
    result = tune_threshold(args.corpus, config.profile(args.profile), args.golden, save=args.save)
    if args.out:
        with atomic_open(args.out) as fh:
            json.dump(result, fh, indent=2)
    emit(args, result, [format_tuning(result)])
    return 0


def cmd_train(args) -> int:
    """Mine pairs from the corpus, train the bi-encoder and/or the cross-encoder (cached), and compare on dev."""
    profile = config.profile(args.profile)
    changes = {k: v for k, v in (("pairs", args.pairs), ("epochs", args.epochs)) if v is not None}
    which = corpus_training.WHICH if args.which == "both" else (args.which,)
    run = corpus_training.train(args.corpus, profile, corpus_training.settings_for(profile, **changes), which,
                                progress=not args.json)
    data = {"pairs": len(run["pairs"]), "settings": dataclasses.asdict(run["settings"]),
            **{k: {"model": run[k].model_id, "path": str(run[k].path), "cached": run[k].cached,
                   "seconds": run[k].record["seconds"]} for k in corpus_training.WHICH if k in run}}
    lines = [corpus_training.format_training(run)]
    if args.compare:
        result = corpus_training.compare(args.corpus, profile, run.get("bi"), run.get("cross"))
        data["compare"] = {k: result[k] for k in ("corpus", "profile", "split", "questions", "scores", "vs_base")}
        lines.append(corpus_training.format_compare(result))
    emit(args, data, lines)
    return 0


def cmd_judge(args) -> int:
    """Each judge's agreement with the hand-labelled answers, and the automatic citation support's."""
    report = judge_report(args.judge, args.verdicts, args.checks, args.golden, args.local)
    emit(args, report, [format_agreement(report["judges"], report["citation_support"])])
    return 0


def cmd_bakeoff(args) -> int:
    table, per_question = run_bakeoff(args.corpus, args.profile, args.golden)
    winner, rationale = choose_winner(table, per_question)
    if BASELINE_CELL in per_question and winner != BASELINE_CELL:     # the one rule: switch only on a real gain
        rationale += "\n" + str(keep_or_default(per_question, winner, split="every question"))
    cols = ["chunking", "retriever", "recall@3", "recall@5", "recall@5_lo", "recall@5_hi", "mrr", "latency_p50_ms"]
    print(table[cols].to_string(index=False))
    print(rationale)
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump({"table": table.to_dict(orient="records"), "rationale": rationale}, fh, indent=2)
    if args.plots:
        from pathlib import Path

        Path(args.plots).mkdir(parents=True, exist_ok=True)
        bakeoff_bars(table).savefig(Path(args.plots) / "bakeoff_recall5.png", dpi=120)
        score_vs_size(table).savefig(Path(args.plots) / "recall5_vs_chunk_tokens.png", dpi=120)
        print(f"plots written to {args.plots}")
    return 0


def cmd_race(args) -> int:
    chunkers = [ChunkSettings(s) for s in args.strategy] if args.strategy else lab.RACE
    split = None if args.split == "all" else args.split
    table, per_question = lab.run_race(args.corpus, args.profile, split, chunkers, golden=args.golden,
                                       progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(lab.race_frame(table, "hybrid").to_string())
    if args.json:
        lab.save_race(args.json, table, per_question, {"corpus": args.corpus, "profile": config.profile(args.profile),
                                                       "split": args.split})
        print(f"race written to {args.json}")
    if args.plots:
        out = Path(args.plots)
        out.mkdir(parents=True, exist_ok=True)
        default = lab.default_chunking(args.corpus).label()
        recall_vs_tokens(table, default=default).savefig(out / "race_recall_vs_tokens.png", dpi=120)
        quality_vs_cost(table, default=default).savefig(out / "race_recall_vs_index_time.png", dpi=120)
        hit_heatmap(per_question).savefig(out / "race_hit_by_type.png", dpi=120)
        print(f"plots written to {out}")
    return 0


def cmd_experiment(args) -> int:
    experiment = EXPERIMENTS[args.name]
    options = {"corpus": args.corpus, "profile": args.profile}
    if args.name == "rewrite":
        options["rewriter"] = make_rewriter(args.rewriter)
    if args.name in ("cost", "longcontext") and args.n:
        options["n"] = args.n
    if args.name == "longcontext":
        options["generator"] = args.generator or "extractive"
    result = experiment.run(**options)
    print(experiment.format(result))
    if args.json:
        with atomic_open(args.json) as fh:
            json.dump(jsonable(result), fh, indent=1)
    return 0


def add_eval(sub) -> None:
    """``raglab eval``."""
    ev = sub.add_parser("eval", help="score a golden set: retrieval, answers, citations, abstention, latency")
    ev.add_argument("--golden", help="golden set JSONL, or a bundled corpus name (default: the corpus's set for the profile)")
    ev.add_argument("--split", choices=("dev", "test", "all"), help="score one split of a split golden set, or all its "
                    "questions as one scoreboard (default: both, side by side with the course baseline)")
    ev.add_argument("--corpus", default="python-docs")
    ev.add_argument("--profile", choices=config.PROFILES)
    chunking_opts(ev)
    answer_opts(ev)
    ev.add_argument("--retrieval-only", action="store_true", help="skip answers: retrieval scores only")
    ev.add_argument("--k", type=int, default=5)
    ev.add_argument("--mode", choices=("dense", "bm25", "hybrid", "rerank"),
                    help="the retrieval scored (default: the one the assistant answers from)")
    ev.add_argument("--json", metavar="OUT", help="write the scores as JSON to OUT")
    ev.set_defaults(func=cmd_eval)


def add_golden(sub) -> None:
    """``raglab golden check``."""
    gold = sub.add_parser("golden", help="golden sets of your own").add_subparsers(dest="action", required=True)
    gcheck = gold.add_parser("check", help="check a golden set against the corpus and the required mix (exit 1 on any problem)")
    gcheck.add_argument("file", help="the golden set, JSONL (evals/student_template.jsonl shows the format)")
    common_opts(gcheck)
    gcheck.set_defaults(func=cmd_golden_check)


def add_tune(sub) -> None:
    """``raglab tune``."""
    tune = sub.add_parser("tune", help="choose the refusal threshold on the dev split (never the test split)")
    common_opts(tune)
    tune.add_argument("--golden", help="golden set JSONL (default: the corpus's set for the profile)")
    tune.add_argument("--out", help="write the choice and every dev question's evidence strength as JSON")
    tune.add_argument("--save", action="store_true",
                      help="a folder of your own: record the choice in its index in place of the calibrated threshold")
    tune.set_defaults(func=cmd_tune)


def add_train(sub) -> None:
    """``raglab train``."""
    trn = sub.add_parser("train", help="train a bi-encoder and a cross-encoder on the corpus's own text (no labels)")
    common_opts(trn)
    trn.add_argument("--which", choices=("bi", "cross", "both"), default="both", help="which model (default: both)")
    trn.add_argument("--pairs", type=int, help="training pairs to mine (default: the profile's, small 192, full 6000)")
    trn.add_argument("--epochs", type=int, help="passes over the pairs (default 1)")
    trn.add_argument("--compare", action="store_true",
                     help="then score base and trained on the golden set's dev split (all of it when unsplit)")
    trn.set_defaults(func=cmd_train)


def add_judge(sub) -> None:
    """``raglab judge``."""
    jd = sub.add_parser("judge", help="the answer judge's agreement with hand-labelled answers, and citation support's")
    jd.add_argument("--judge", choices=("facts", "llm", "both"), default="facts",
                    help="facts: the offline fact check; llm: the model at LLM_BASE_URL (default: facts)")
    jd.add_argument("--local", action="store_true", help="llm: start the packaged SmolLM2-135M on 127.0.0.1 (a smoke test)")
    jd.add_argument("--verdicts", default=str(VERDICTS_FILE), help="hand-labelled answers (JSONL)")
    jd.add_argument("--checks", default=str(CITATION_CHECKS_FILE), help="hand-checked citations (JSONL)")
    jd.add_argument("--golden", default="python-docs", help="the golden set the answers come from")
    jd.add_argument("--json", action="store_true", help="print JSON: every judge, every verdict")
    jd.set_defaults(func=cmd_judge)


def add_bakeoff(sub) -> None:
    """``raglab bakeoff``."""
    bake = sub.add_parser("bakeoff", help="every chunker x every retriever on a golden set")
    bake.add_argument("--corpus", default="python-docs")
    bake.add_argument("--profile", choices=config.PROFILES)
    bake.add_argument("--golden", help="golden set JSONL (default: the one shipped for the corpus)")
    bake.add_argument("--json", metavar="OUT", help="write the table as JSON to OUT")
    bake.add_argument("--plots", metavar="DIR", help="write the charts as PNG into DIR")
    bake.set_defaults(func=cmd_bakeoff)


def add_race(sub) -> None:
    """``raglab race``: the chunking lab."""
    race = sub.add_parser("race", help="the chunking lab: strategies x dense/BM25/hybrid, with their costs and "
                                       "paired differences from the default chunking")
    race.add_argument("--corpus", default="python-docs")
    race.add_argument("--profile", choices=config.PROFILES)
    race.add_argument("--split", choices=("dev", "test", "all"), default="all",
                      help="the golden set's split (tune on dev; the small profile's set has no splits: all)")
    race.add_argument("--strategy", nargs="+", choices=STRATEGIES, help="the strategies to race (default: all, "
                                                                        "each at its default settings)")
    race.add_argument("--golden", help="golden set JSONL (default: the one shipped for the corpus and profile)")
    race.add_argument("--json", metavar="OUT", help="write the race (table and per-question rows) as JSON to OUT")
    race.add_argument("--plots", metavar="DIR", help="write the race's charts as PNG into DIR")
    race.set_defaults(func=cmd_race)


def add_experiment(sub) -> None:
    """``raglab experiment``."""
    exp = sub.add_parser("experiment", help="a stretch experiment on the golden set, with intervals")
    exp.add_argument("name", choices=tuple(EXPERIMENTS), help="rewrite: query rewriting on multi-part questions; "
                     "longcontext: whole documents instead of retrieval; cost: tokens, price and latency per answer; "
                     "chunksize: chunk size against the model's 256-token limit")
    exp.add_argument("--corpus", default="python-docs")
    exp.add_argument("--profile", choices=config.PROFILES)
    exp.add_argument("--rewriter", choices=("auto", "rules", "llm"), default="auto",
                     help="rewrite: the configured model (LLM_BASE_URL) or the offline rules (default: auto)")
    exp.add_argument("--generator", choices=("extractive", "openai"), help="longcontext: the generator of both arms")
    exp.add_argument("--n", type=int, help="cost, longcontext: use this many golden questions (evenly spaced)")
    exp.add_argument("--json", metavar="OUT", help="write the result as JSON to OUT")
    exp.set_defaults(func=cmd_experiment)
