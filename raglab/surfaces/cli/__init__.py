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
    raglab workbook     [--out build] [--inplace] [--corpus DIR --golden FILE]   # the main job: run the notebooks, render HTML

This file builds the parser and runs a verb; each verb's options and handler live together in its family's
module: ``corpus`` (corpus, chunk), ``search`` (index, search, ask), ``evaluate`` (eval, golden, tune, train,
judge, bakeoff, race, experiment), ``serve`` (llm serve, serve) and ``course`` (check, release, grade, report,
workbook); the options several verbs share are in ``options``.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import sys
import warnings
from pathlib import Path

from raglab.base.corpus_files import CorpusError, CorpusWarning
from raglab.course.artifacts import save_json
from raglab.surfaces.cli import corpus, course, evaluate, search, serve

# Each verb's parser, in the order ``raglab --help`` lists them.
VERBS = (corpus.add_corpus, corpus.add_chunk, search.add_index, search.add_search, search.add_ask,
         evaluate.add_eval, evaluate.add_golden, evaluate.add_tune, evaluate.add_train, evaluate.add_judge,
         evaluate.add_bakeoff, evaluate.add_race, serve.add_llm, serve.add_serve, course.add_check,
         course.add_release, course.add_grade, course.add_report, evaluate.add_experiment, course.add_workbook)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every verb."""
    p = argparse.ArgumentParser(prog="raglab", description="A cited RAG assistant over technical docs, stage by stage.")
    sub = p.add_subparsers(dest="verb", required=True)
    for add in VERBS:
        add(sub)
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
