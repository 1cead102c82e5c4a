"""The corpus verbs: ``corpus info``, ``corpus fetch`` and ``chunk``, each option next to its handler."""
from __future__ import annotations

import json

from raglab.base import config
from raglab.base.files import write_jsonl
from raglab.book.chunking import UNITS, ChunkSettings, chunk_corpus
from raglab.evaluation.chunk_checks import chunk_stats
from raglab.infra.corpus import corpus_stats
from raglab.infra.corpus import load_corpus
from raglab.base.folder_access import folder_settings, page_access
from raglab.infra.python_docs import fetch_python_docs
from raglab.infra.embedder import Embedder
from raglab.infra.assemble import get_index
from raglab.infra.corpora import entry, registered, threshold_for
from raglab.infra.index import IndexNotReady
from raglab.infra.tokenizer import load_tokenizer
from raglab.surfaces.cli.options import chunk_settings, chunking_opts, common_opts, emit


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
    emit(args, stats, lines)
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
    emit(args, {"version": args.version, "path": str(dest), **source},
         [f"Python {args.version} docs extracted to {dest}",
          f"sha256 {source['sha256']} (recorded; a later fetch must match it)",
          f"use it with: --corpus python-docs-{args.version}"])
    return 0


def cmd_chunk(args) -> int:
    settings = chunk_settings(args)
    embed = Embedder().encode if settings.strategy == "semantic" else None
    chunks = chunk_corpus(load_corpus(args.corpus, args.profile), settings, embed=embed,
                          tokenizer=load_tokenizer())
    write_jsonl(args.out, (c.to_dict() for c in chunks))
    stats = {"out": args.out, "strategy": settings.strategy, "size": settings.size,
             "overlap": settings.overlap, "unit": UNITS[settings.strategy], "prefix": settings.prefix,
             **chunk_stats(chunks)}
    emit(args, stats, [f"{stats['chunks']:,} chunks from {stats['documents']} documents -> {args.out}",
                       f"{settings.label()} ({stats['unit']}); median {stats['words_p50']} words, "
                       f"{stats['tokens_p50']} tokens; {stats['over_256_tokens']} chunk(s) over the "
                       f"model's 256-token limit"])
    return 0


def add_corpus(sub) -> None:
    """``raglab corpus info|fetch``."""
    corpus = sub.add_parser("corpus", help="inspect or fetch a corpus").add_subparsers(dest="action", required=True)
    info = corpus.add_parser("info", help="documents, words, access groups")
    common_opts(info)
    info.set_defaults(func=cmd_corpus_info)
    fetch = corpus.add_parser("fetch", help="download the official plain-text docs of a Python version")
    fetch.add_argument("--version", required=True, help="e.g. 3.12")
    fetch.add_argument("--url", help="archive URL (default: the official archive on docs.python.org)")
    fetch.add_argument("--sha256", help="expected sha256 of the archive")
    common_opts(fetch, corpus=False)
    fetch.set_defaults(func=cmd_corpus_fetch)


def add_chunk(sub) -> None:
    """``raglab chunk``."""
    chunk = sub.add_parser("chunk", help="cut a corpus into chunks and write them as JSONL")
    common_opts(chunk)
    chunking_opts(chunk, index_opts=False)
    chunk.add_argument("--out", required=True, help="output .jsonl file (written atomically)")
    chunk.set_defaults(func=cmd_chunk)
