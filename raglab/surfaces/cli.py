"""The command line: one verb per stage, each with ``--json`` for machines.

    raglab corpus info  [--corpus C] [--json]
    raglab corpus fetch --version 3.X [--url URL] [--sha256 HEX]
    raglab chunk        [--corpus C] --strategy S [--size N] [--overlap N] [--prefix] --out FILE.jsonl
    raglab index        [--corpus C] [--strategy S ...] [--kind flat|hnsw] [--model NAME]
    raglab search "Q"   [--corpus C] [--mode dense|bm25|hybrid|rerank] [--k N] [--user G,...] [--json]
    raglab ask "Q"      [--corpus C] [--generator extractive|openai] [--user G,...] [--json]
    raglab eval         [--golden FILE] [--split dev|test|all] [--corpus C] [--retrieval-only] [--k N] [--json OUT]
    raglab golden check FILE [--corpus C] [--profile P] [--json]    # a student's own golden set: every problem
    raglab tune         [--corpus C] [--profile P] [--golden FILE] [--out FILE]   # the refusal threshold, chosen on dev only
    raglab train        [--corpus C] [--profile P] [--which bi|cross|both] [--pairs N] [--compare]   # models trained on the corpus
    raglab judge        [--judge facts|llm|both] [--local] [--json]   # the answer judge against hand labels
    raglab bakeoff      [--corpus C] [--golden FILE] [--json OUT] [--plots DIR]
    raglab race         [--corpus C] [--profile P] [--split dev|test|all] [--strategy S ...] [--json OUT] [--plots DIR]   # the chunking lab
    raglab llm serve    [--port N]
    raglab serve        [--port N] [--corpus C]          # HTTP endpoint and page on 127.0.0.1
    raglab experiment   rewrite|longcontext|cost|chunksize [--corpus C] [--n N] [--json OUT]
    raglab check        [DIR]                         # the instructor's rubric over the artifacts
    raglab release      [--out DIR] [--notebook STEM] [--prove]   # the student edition (nbgrader)
    raglab grade CLASS  [--out DIR] [--notebook STEM] [--jobs N | --scheduler ADDRESS] [--json]   # a class: gradebook + feedback
    raglab grade --self [FOLDER] [--out DIR]                      # a student's own notebooks, from the bundle
    raglab report       [--artifacts DIR] [--out DIR] # the write-up, HTML + Markdown
    raglab workbook     [--out build] [--inplace]     # the main job: run the notebooks, render HTML
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import shlex
import sys
import tempfile
import warnings
from pathlib import Path

from raglab.base import config
from raglab.book.assistant import build_assistant
from raglab.book.chunking import STRATEGIES, UNITS, ChunkSettings, chunk_corpus, chunk_stats
from raglab.book.documents import (
    CorpusError,
    CorpusWarning,
    corpus_stats,
    fetch_python_docs,
    folder_settings,
    load_corpus,
    page_access,
)
from raglab.infra.corpora import REGISTRY, entry, registered, threshold_for
from raglab.course.artifacts import jsonable, save_json
from raglab.course import bundle, classroom, grading
from raglab.course.report import write_report
from raglab.course.rubric import run_check
from raglab.course.workbook import run_workbook
from raglab.book.embed import Embedder
from raglab.evaluation import chunking_lab as lab
from raglab.evaluation.bakeoff import choose_winner, run_bakeoff
from raglab.evaluation.judge import CITATION_CHECKS_FILE, VERDICTS_FILE, format_agreement, judge_report
from raglab.evaluation.golden import check_student_golden, golden_file, load_golden
from raglab.evaluation.headline import format_headline, run_headline
from raglab.evaluation.scoreboard import format_scoreboard, run_golden
from raglab.evaluation.tuning import format_tuning, tune_threshold
from raglab.experiments import training as corpus_training
from raglab.experiments.registry import EXPERIMENTS
from raglab.experiments.rewriters import make_rewriter
from raglab.base.files import atomic_open, write_jsonl
from raglab.infra.index import IndexNotReady, build_index
from raglab.infra.packaged_models import TRAINED_PREFIX, serve_forever
from raglab.infra.pg_index import sync_pgvector
from raglab.book.rerank import make_reranker
from raglab.book.retrieve import Levers, Retriever, get_index
from raglab.surfaces.guard import guarded
from raglab.surfaces.plots import bakeoff_bars, hit_heatmap, quality_vs_cost, recall_vs_tokens, score_vs_size


def _emit(args, data: dict, lines: list[str]) -> None:
    """Print JSON with ``--json``, else the human lines."""
    print(json.dumps(data, indent=2) if getattr(args, "json", False) else "\n".join(lines))


def cmd_corpus_info(args) -> int:
    docs = load_corpus(args.corpus, args.profile)
    stats = {"corpus": args.corpus, "profile": config.profile(args.profile), **corpus_stats(docs),
             "folder_settings": folder_settings(docs), "pages": page_access(docs)}
    lines = [f"corpus     {args.corpus} (profile {stats['profile']})",
             f"documents  {stats['documents']:,}",
             f"words      {stats['words']:,}",
             f"characters {stats['characters']:,}",
             "access     " + ", ".join(f"{g}: {n}" for g, n in stats["access_groups"].items())
             + " (each page's access: --json)"]
    lines += [f"settings   {path}: default_access {', '.join(s['default_access'])}"
              for path, s in stats["folder_settings"].items()]
    stats["refusal"] = refusal_info(args.corpus, stats["profile"])
    lines.append(f"refusal    {stats['refusal']['text']}")
    _emit(args, stats, lines)
    return 0


def refusal_info(corpus: str, profile: str) -> dict:
    """The refusal threshold the default assistant uses on a corpus, and how it was chosen."""
    e = entry(corpus)
    if registered(corpus):
        t = threshold_for(corpus, profile)
        return {"threshold": t, "signal": e.signal, "method": "raglab.infra.corpora (chosen on the corpus's golden set)",
                "text": f"below {t} ({e.signal} signal), chosen on the corpus's golden set (raglab/infra/corpora.py)"}
    strategy, prefix = e.chunking
    try:
        index = get_index(corpus, profile, ChunkSettings(strategy, prefix=prefix), Embedder(), build=False)
    except IndexNotReady:
        index = None
    refusal = index.manifest.get("refusal") if index is not None else None
    if not refusal:
        return {"threshold": None, "text": "not calibrated yet: calibrated from the folder when its index is first "
                                           "built by raglab ask, eval or serve"}
    return refusal | {"text": f"below {refusal['threshold']} ({refusal['signal']} signal), {refusal['method']}"}


def cmd_corpus_fetch(args) -> int:
    dest = fetch_python_docs(args.version, url=args.url, sha256=args.sha256)
    source = json.loads((dest / ".raglab-source.json").read_text())
    _emit(args, {"version": args.version, "path": str(dest), **source},
          [f"Python {args.version} docs extracted to {dest}",
           f"sha256 {source['sha256']} (recorded; a later fetch must match it)",
           f"use it with: --corpus python-docs-{args.version}"])
    return 0


def cmd_chunk(args) -> int:
    settings = _settings(args)
    embed = Embedder().encode if settings.strategy == "semantic" else None
    chunks = chunk_corpus(load_corpus(args.corpus, args.profile), settings, embed=embed)
    write_jsonl(args.out, (c.to_dict() for c in chunks))
    stats = {"out": args.out, "strategy": settings.strategy, "size": settings.size,
             "overlap": settings.overlap, "unit": UNITS[settings.strategy], "prefix": settings.prefix,
             **chunk_stats(chunks)}
    _emit(args, stats, [f"{stats['chunks']:,} chunks from {stats['documents']} documents -> {args.out}",
                        f"{settings.label()} ({stats['unit']}); median {stats['words_p50']} words, "
                        f"{stats['tokens_p50']} tokens; {stats['over_256_tokens']} chunk(s) over the "
                        f"model's 256-token limit"])
    return 0


def _settings(args) -> ChunkSettings:
    """The chunking the options ask for; without ``--strategy``, the corpus's default (``raglab.infra.corpora``)."""
    strategy, prefix = entry(args.corpus).chunking if args.strategy is None else (args.strategy, False)
    if args.prefix is not None:
        prefix = args.prefix
    return ChunkSettings(strategy, args.size, args.overlap, prefix, getattr(args, "breakpoint", None)).resolved()


def cmd_index(args) -> int:
    if args.store == "pgvector":
        index, report = sync_pgvector(args.corpus, args.profile, _settings(args), Embedder(args.model),
                                      hnsw=args.kind == "hnsw")
        _emit(args, {"store": "pgvector", "version_id": index.version, **report},
              [f"pgvector table {report['table']}: {report['chunks']:,} chunks; documents: {report['added']} added, "
               f"{report['updated']} updated, {report['deleted']} deleted, {report['unchanged']} unchanged",
               f"embeddings: {report['cache_hits']:,} from the cache, {report['cache_misses']:,} computed; "
               f"index version {index.version}"])
        return 0
    index = build_index(args.corpus, args.profile, _settings(args), Embedder(args.model), args.kind)
    m = index.manifest
    stats, ch = m["embed_stats"], m["changes"]
    _emit(args, {"path": str(index.path), **m},
          [f"indexed {m['n_chunks']:,} chunks of {args.corpus} ({m['profile']} profile, {_settings(args).label()}, "
           f"{m['kind']}) -> {index.path}",
           f"documents: {len(ch['added'])} added, {len(ch['updated'])} updated, {len(ch['deleted'])} deleted, "
           f"{len(ch['unchanged'])} unchanged",
           f"embeddings: {stats['hits']:,} from the cache, {stats['misses']:,} computed; index version {m['version_id']}"])
    return 0


def cmd_search(args) -> int:
    embedder = Embedder(args.model)
    index = get_index(args.corpus, args.profile, _settings(args), embedder, args.kind, args.store, build=False)
    reranker = make_reranker(args.reranker, embedder) if args.mode == "rerank" else None
    retriever = Retriever(index, embedder, reranker, Levers.for_corpus(args.corpus))
    hits = retriever.search(args.query, args.mode, args.k, _user(args))
    rows = [h.to_dict(retriever.text(h)) for h in hits]
    lines = [f"{h.rank:>3}  {h.score:8.4f}  {h.id}" for h in hits] or ["no results"]
    _emit(args, rows, lines)
    return 0


def cmd_ask(args) -> int:
    assistant = _assistant(args, build=False)
    assistant.generator = guarded(assistant.generator)   # a model server's error is one line, not a traceback
    answer = assistant.ask(args.query, _user(args))
    lines = [answer.answer, ""]
    lines += [f"[{c.n}] {c.id}  ({c.heading})" for c in answer.citations]
    if answer.refused and answer.unknown_names:
        lines.append(f"(refused: {answer.reason}; the question names what no page contains: {', '.join(answer.unknown_names)})")
    elif answer.refused:
        d = answer.refusal_detail or {}
        named = {"sentence-floor": "the best sentence's cosine", "sentence-score": "the best sentence's probability"}
        at = (f"; {named[d['stage']]} {d['value']}, under {d['threshold']}" if d.get("stage") in named else "")
        lines.append(f"(refused: {answer.reason}{at}; evidence strength {answer.evidence:.3f}, threshold {assistant.threshold})")
    lines.append(f"generator: {answer.generator}")
    _emit(args, answer.to_dict(), lines)
    return 0


def _assistant(args, build: bool):
    """The assistant the CLI verbs share, from the chunking and answer options."""

    return build_assistant(args.corpus, args.profile, _settings(args), args.generator, args.reranker,
                           args.threshold, args.attribution, args.model, args.kind, build=build, store=args.store)


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
    board = run_golden(_assistant(args, build=True), path, args.k, args.mode, args.retrieval_only, split)
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
    _emit(args, data, report.lines())
    return 1 if report.problems else 0


def cmd_tune(args) -> int:
    """Choose the refusal threshold on the dev split (or in-sample on an unsplit set) and compare with the registry."""
    result = tune_threshold(args.corpus, config.profile(args.profile), args.golden, save=args.save)
    if args.out:
        with atomic_open(args.out) as fh:
            json.dump(result, fh, indent=2)
    _emit(args, result, [format_tuning(result)])
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
    _emit(args, data, lines)
    return 0


def cmd_judge(args) -> int:
    """Each judge's agreement with the hand-labelled answers, and the automatic citation support's."""
    report = judge_report(args.judge, args.verdicts, args.checks, args.golden, args.local)
    _emit(args, report, [format_agreement(report["judges"], report["citation_support"])])
    return 0


def cmd_bakeoff(args) -> int:
    table, per_question = run_bakeoff(args.corpus, args.profile, args.golden)
    _, rationale = choose_winner(table, per_question)
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


def _user(args) -> tuple[str, ...] | None:
    """The caller's groups from ``--user a,b`` (public is always added by the index)."""
    return tuple(g.strip() for g in args.user.split(",") if g.strip()) if args.user else None


def cmd_llm_serve(args) -> int:
    return serve_forever(args.port)


def cmd_serve(args) -> int:
    from raglab.surfaces.serving import serve  # lazy: FastAPI and uvicorn load only for the server (a cold ask skips them)

    serve(args.port, args.corpus, args.profile, generator=args.generator, tokens_file=args.tokens_file,
          trace_path=args.trace, log_level=args.log_level, queue_size=args.queue_size, deadline_s=args.deadline,
          answer_cache=args.answer_cache, workers=args.workers)
    return 0


def cmd_workbook(args) -> int:
    return 0 if run_workbook(out=args.out, inplace=args.inplace) else 1


def cmd_release(args) -> int:
    target = grading.release(args.out, only=args.notebook or None)
    released = grading.notebooks(target)
    print(f"student release: {target.resolve()}/ ({', '.join(p.name for p in released)})")
    archive, sha = bundle.build(args.out, target)
    print(f"student bundle:  {archive} (sha256 {sha}): hand this file out; START.md inside says how to begin")
    if not args.prove:
        return 0
    with tempfile.TemporaryDirectory(prefix="raglab-prove-") as blank_artifacts:   # the release's run, in order
        problems = [line for p in released for line in grading.prove(p.stem, target, artifacts_dir=Path(blank_artifacts))]
    for line in problems:
        print(line)
    print(f"proof: {'every self-check fails on the blank release and the milestones still run' if not problems else f'{len(problems)} problems'}")
    return 0 if not problems else 1


def cmd_grade(args) -> int:
    if args.self_grade:
        out = Path(args.out or "grade").resolve()
        grade = grading.grade_self(args.class_dir or ".", out, only=args.notebook or None)
        print(grading.format_grades([grade]))
        print(f"feedback: {out / 'feedback.html'} (the visible self-checks and the rubric on your artifacts; "
              "your instructor's grade adds hidden tests and the prose answers' points)")
        if args.json:
            with atomic_open(out / "grade.json") as fh:
                json.dump(jsonable(grading.json_grades([grade])[0]), fh, indent=1)
        return 0
    if not args.class_dir:
        raise SystemExit("raglab grade: give the CLASS folder (one folder per student), or --self for your own notebooks")
    grades = classroom.grade_class(args.class_dir, args.out or "build/grades", only=args.notebook or None,
                                   jobs=args.jobs, scheduler=args.scheduler, live_model=args.live_model)
    print(grading.format_grades(grades))
    out = Path(args.out or "build/grades").resolve()
    print(f"gradebook: {out / 'gradebook.csv'}\nfeedback:  {out / 'feedback'}/ (one page per student)")
    if args.json:
        with atomic_open(out / "grades.json") as fh:
            json.dump(jsonable(grading.json_grades(grades)), fh, indent=1)
    return 0


def cmd_check(args) -> int:
    return run_check(args.dir)


def cmd_report(args) -> int:
    md, page = write_report(args.artifacts, args.out)
    print(f"report: {page.resolve()}\nmarkdown: {md.resolve()}")
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every verb."""
    p = argparse.ArgumentParser(prog="raglab", description="A cited RAG assistant over technical docs, stage by stage.")
    sub = p.add_subparsers(dest="verb", required=True)

    def common(sp, corpus=True):
        if corpus:
            sp.add_argument("--corpus", default="python-docs", help="python-docs, helpcenter, python-docs-3.X or a folder")
            sp.add_argument("--profile", choices=config.PROFILES, help="default: $RAGLAB_PROFILE or small")
        sp.add_argument("--json", action="store_true", help="print JSON for machines")

    def chunking_opts(sp, index_opts=True):
        sp.add_argument("--strategy", choices=STRATEGIES,
                        help="default: the corpus's (python-docs and helpcenter: headings, with --prefix)")
        sp.add_argument("--size", type=int, help="window size (words for words/headings/parent, characters for "
                                                "chars/large, the model's tokens for recursive/tokens/semantic)")
        sp.add_argument("--overlap", type=int, help="overlap, in the same unit as --size")
        sp.add_argument("--breakpoint", type=int, help="semantic only: cut above this percentile of a page's "
                                                      "sentence-to-sentence distances (default 90)")
        sp.add_argument("--prefix", action=argparse.BooleanOptionalAction, default=None,
                        help="prepend 'Title > Section: ' to the indexed text (default: with the corpus's default "
                             "chunking, its choice; with --strategy, no)")
        if not index_opts:
            return
        sp.add_argument("--kind", choices=("flat", "hnsw"), default="flat", help="exact search (flat) or HNSW")
        sp.add_argument("--store", choices=("faiss", "pgvector"), default="faiss",
                        help="vector store: FAISS files (default) or PostgreSQL + pgvector ($RAGLAB_DATABASE_URL, "
                             "else an embedded server)")
        sp.add_argument("--model", help="sentence-transformers model (default: the packaged all-MiniLM-L6-v2)")

    corpus = sub.add_parser("corpus", help="inspect or fetch a corpus").add_subparsers(dest="action", required=True)
    info = corpus.add_parser("info", help="documents, words, access groups")
    common(info)
    info.set_defaults(func=cmd_corpus_info)
    fetch = corpus.add_parser("fetch", help="download the official plain-text docs of a Python version")
    fetch.add_argument("--version", required=True, help="e.g. 3.12")
    fetch.add_argument("--url", help="archive URL (default: the official archive on docs.python.org)")
    fetch.add_argument("--sha256", help="expected sha256 of the archive")
    common(fetch, corpus=False)
    fetch.set_defaults(func=cmd_corpus_fetch)

    chunk = sub.add_parser("chunk", help="cut a corpus into chunks and write them as JSONL")
    common(chunk)
    chunking_opts(chunk, index_opts=False)
    chunk.add_argument("--out", required=True, help="output .jsonl file (written atomically)")
    chunk.set_defaults(func=cmd_chunk)

    index = sub.add_parser("index", help="chunk, embed (cached) and index a corpus")
    common(index)
    chunking_opts(index)
    index.set_defaults(func=cmd_index)

    search = sub.add_parser("search", help="search an index")
    search.add_argument("query")
    common(search)
    chunking_opts(search)
    search.add_argument("--mode", choices=("dense", "bm25", "hybrid", "rerank"), default="hybrid")
    search.add_argument("--k", type=int, default=10)
    search.add_argument("--user", help="the caller's access groups, comma-separated (public is always included)")
    search.add_argument("--reranker", help="cross-encoder model name for --mode rerank (default: offline sentence reranker)")
    search.set_defaults(func=cmd_search)

    def answer_opts(sp):
        sp.add_argument("--generator", choices=("extractive", "openai"),
                        help="default: openai when LLM_BASE_URL is set, else the offline extractive generator")
        sp.add_argument("--reranker", help="rerank before answering: 'sentence' (the offline sentence reranker) or a "
                                           "cross-encoder model name (default: the corpus's choice; python-docs: none)")
        sp.add_argument("--threshold", type=float, help="evidence strength below which a question is refused")
        sp.add_argument("--attribution", action="store_true", help="attach sources to uncited sentences (post-hoc)")

    ask = sub.add_parser("ask", help="a cited answer, checked in code, or the refusal")
    ask.add_argument("query")
    common(ask)
    chunking_opts(ask)
    answer_opts(ask)
    ask.add_argument("--user", help="the caller's access groups, comma-separated (public is always included)")
    ask.set_defaults(func=cmd_ask)

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

    gold = sub.add_parser("golden", help="golden sets of your own").add_subparsers(dest="action", required=True)
    gcheck = gold.add_parser("check", help="check a golden set against the corpus and the required mix (exit 1 on any problem)")
    gcheck.add_argument("file", help="the golden set, JSONL (evals/student_template.jsonl shows the format)")
    common(gcheck)
    gcheck.set_defaults(func=cmd_golden_check)

    tune = sub.add_parser("tune", help="choose the refusal threshold on the dev split (never the test split)")
    common(tune)
    tune.add_argument("--golden", help="golden set JSONL (default: the corpus's set for the profile)")
    tune.add_argument("--out", help="write the choice and every dev question's evidence strength as JSON")
    tune.add_argument("--save", action="store_true",
                      help="a folder of your own: record the choice in its index in place of the calibrated threshold")
    tune.set_defaults(func=cmd_tune)

    trn = sub.add_parser("train", help="train a bi-encoder and a cross-encoder on the corpus's own text (no labels)")
    common(trn)
    trn.add_argument("--which", choices=("bi", "cross", "both"), default="both", help="which model (default: both)")
    trn.add_argument("--pairs", type=int, help="training pairs to mine (default: the profile's, small 192, full 6000)")
    trn.add_argument("--epochs", type=int, help="passes over the pairs (default 1)")
    trn.add_argument("--compare", action="store_true",
                     help="then score base and trained on the golden set's dev split (all of it when unsplit)")
    trn.set_defaults(func=cmd_train)
    jd = sub.add_parser("judge", help="the answer judge's agreement with hand-labelled answers, and citation support's")
    jd.add_argument("--judge", choices=("facts", "llm", "both"), default="facts",
                    help="facts: the offline fact check; llm: the model at LLM_BASE_URL (default: facts)")
    jd.add_argument("--local", action="store_true", help="llm: start the packaged SmolLM2-135M on 127.0.0.1 (a smoke test)")
    jd.add_argument("--verdicts", default=str(VERDICTS_FILE), help="hand-labelled answers (JSONL)")
    jd.add_argument("--checks", default=str(CITATION_CHECKS_FILE), help="hand-checked citations (JSONL)")
    jd.add_argument("--golden", default="python-docs", help="the golden set the answers come from")
    jd.add_argument("--json", action="store_true", help="print JSON: every judge, every verdict")
    jd.set_defaults(func=cmd_judge)

    bake = sub.add_parser("bakeoff", help="every chunker x every retriever on a golden set")
    bake.add_argument("--corpus", default="python-docs")
    bake.add_argument("--profile", choices=config.PROFILES)
    bake.add_argument("--golden", help="golden set JSONL (default: the one shipped for the corpus)")
    bake.add_argument("--json", metavar="OUT", help="write the table as JSON to OUT")
    bake.add_argument("--plots", metavar="DIR", help="write the charts as PNG into DIR")
    bake.set_defaults(func=cmd_bakeoff)

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

    llm = sub.add_parser("llm", help="a local OpenAI-compatible model server").add_subparsers(dest="action", required=True)
    serve = llm.add_parser("serve", help="serve the packaged SmolLM2-135M-Instruct on 127.0.0.1")
    serve.add_argument("--port", type=int, default=8088)
    serve.set_defaults(func=cmd_llm_serve)

    srv = sub.add_parser("serve", help="the HTTP endpoint (POST /ask) and its page, on 127.0.0.1")
    srv.add_argument("--port", type=int, default=8000)
    srv.add_argument("--corpus", default="python-docs")
    srv.add_argument("--profile", choices=config.PROFILES)
    srv.add_argument("--tokens-file", help="JSON {\"tokens\": {token: [groups]}} (default: $RAGLAB_TOKENS or config/tokens.json)")
    srv.add_argument("--generator", choices=("extractive", "openai"),
                     help="default: openai when LLM_BASE_URL is set, else extractive")
    srv.add_argument("--trace", help="append the JSONL traces here (default .raglab/infra/traces/asks.jsonl)")
    srv.add_argument("--queue-size", type=int, metavar="N",
                     help="questions that may wait for the worker; one more is a 503 (default $RAGLAB_QUEUE_SIZE or 64)")
    srv.add_argument("--deadline", type=float, metavar="S",
                     help="seconds a request may take, model call included; then 503 (default $RAGLAB_DEADLINE_S or 30)")
    srv.add_argument("--workers", type=int, metavar="N",
                     help="processes answering at once behind one front, each with the index loaded (default: the machine's cores)")
    srv.add_argument("--answer-cache", type=int, default=1024, metavar="N",
                     help="answers kept to serve again, per question, groups, index and settings (0: none; default 1024)")
    srv.add_argument("--log-level", default="info")
    srv.set_defaults(func=cmd_serve)

    chk = sub.add_parser("check", help="the instructor's rubric: every milestone's 'done when' against the artifacts")
    chk.add_argument("dir", nargs="?", help="artifacts folder (default: $RAGLAB_ARTIFACTS or build/artifacts)")
    chk.set_defaults(func=cmd_check)

    rel = sub.add_parser("release", help="the student edition: exercises blanked, hidden tests removed (nbgrader)")
    rel.add_argument("--out", default="build/course", help="writes OUT/release/ (default: build/course)")
    rel.add_argument("--notebook", action="append", metavar="STEM", help="only this notebook (repeatable), e.g. 01_ingest_and_chunking")
    rel.add_argument("--prove", action="store_true", help="run the release: every self-check must fail on the blanks, nothing else")
    rel.set_defaults(func=cmd_release)

    grd = sub.add_parser("grade", help="grade a class: autograder, rubric, clean runs -> gradebook.csv + feedback pages")
    grd.add_argument("class_dir", metavar="CLASS", nargs="?",
                     help="a folder per student, each holding their notebooks (and golden.jsonl); with --self, "
                          "the folder of your own notebooks (default: the current folder)")
    grd.add_argument("--out", help="gradebook.csv and feedback/ (default: build/grades; with --self: grade/)")
    grd.add_argument("--notebook", action="append", metavar="STEM", help="grade only this notebook (repeatable)")
    grd.add_argument("--json", action="store_true", help="also write OUT/grades.json")
    grd.add_argument("--self", dest="self_grade", action="store_true",
                     help="grade your own notebooks from the student bundle: self-checks, the rubric, a feedback page")
    grd.add_argument("--jobs", type=int, default=1, metavar="N", help="grade N students at a time on this machine (default 1)")
    grd.add_argument("--scheduler", metavar="ADDRESS", help="run the students on a Dask cluster (tcp://HOST:8786)")
    grd.add_argument("--live-model", action="store_true",
                     help="run notebook 08's local model for every student (default: once for the class)")
    grd.set_defaults(func=cmd_grade)

    rep = sub.add_parser("report", help="the course write-up (HTML + Markdown) from the run's results file")
    rep.add_argument("--artifacts", help="artifacts folder (default: $RAGLAB_ARTIFACTS or build/artifacts)")
    rep.add_argument("--out", help="output folder (default: report/ beside the artifacts folder)")
    rep.set_defaults(func=cmd_report)

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

    wb = sub.add_parser("workbook", help="the main job: execute the notebooks in order and render HTML")
    wb.add_argument("--out", default="build", help="folder for executed notebooks and HTML (default: build)")
    wb.add_argument("--inplace", action="store_true", help="also save the executed notebooks over the sources")
    wb.set_defaults(func=cmd_workbook)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one verb; errors print one clear line and exit 2."""
    args = build_parser().parse_args(argv)
    warnings.simplefilter("always", CorpusWarning)
    warnings.formatwarning = lambda msg, cat, *a, **k: f"warning: {msg}\n"
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except (CorpusError, ValueError, OSError, RuntimeError) as exc:
        print(f"raglab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())


def run_command(argv: list[str], name: str, where: Path | None = None) -> str:
    """Run one ``raglab`` command in this process, print its output, and save the command line
    and its output as ``NAME.json`` (so the checker can see what one command printed)."""
    pass

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    text = out.getvalue()
    print(text, end="")
    save_json(f"{name}.json", {"command": "raglab " + shlex.join(argv), "exit_code": code, "output": text}, where)
    return text
