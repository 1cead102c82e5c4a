"""The options several verbs share: their definitions (corpus, chunking, answer), reading them back
(the chunk settings, the caller's groups, the assistant), and the one output rule (``--json`` for machines)."""
from __future__ import annotations

import argparse
import json

from raglab.base import config
from raglab.infra.assemble import build_assistant
from raglab.book.chunking import STRATEGIES, ChunkSettings
from raglab.infra.corpora import entry


def common_opts(sp, corpus=True):
    """``--corpus`` and ``--profile`` (unless ``corpus=False``), and ``--json``."""
    if corpus:
        sp.add_argument("--corpus", default="python-docs", help="python-docs, helpcenter, python-docs-3.X or a folder")
        sp.add_argument("--profile", choices=config.PROFILES, help="default: $RAGLAB_PROFILE or small")
    sp.add_argument("--json", action="store_true", help="print JSON for machines")


def chunking_opts(sp, index_opts=True):
    """The chunking options, and (unless ``index_opts=False``) the index's: kind, store, model."""
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


def answer_opts(sp):
    """The options of the answer: generator, reranker, threshold, attribution."""
    sp.add_argument("--generator", choices=("extractive", "openai"),
                    help="default: openai when LLM_BASE_URL is set, else the offline extractive generator")
    sp.add_argument("--reranker", help="rerank before answering: 'sentence' (the offline sentence reranker) or a "
                                       "cross-encoder model name (default: the corpus's choice; python-docs: none)")
    sp.add_argument("--threshold", type=float, help="evidence strength below which a question is refused")
    sp.add_argument("--attribution", action="store_true", help="attach sources to uncited sentences (post-hoc)")


def emit(args, data: dict, lines: list[str]) -> None:
    """Print JSON with ``--json``, else the human lines."""
    print(json.dumps(data, indent=2) if getattr(args, "json", False) else "\n".join(lines))


def chunk_settings(args) -> ChunkSettings:
    """The chunking the options ask for; without ``--strategy``, the corpus's default (``raglab.infra.corpora``)."""
    strategy, prefix = entry(args.corpus).chunking if args.strategy is None else (args.strategy, False)
    if args.prefix is not None:
        prefix = args.prefix
    return ChunkSettings(strategy, args.size, args.overlap, prefix, getattr(args, "breakpoint", None)).resolved()


def user_groups(args) -> tuple[str, ...] | None:
    """The caller's groups from ``--user a,b`` (public is always added by the index)."""
    return tuple(g.strip() for g in args.user.split(",") if g.strip()) if args.user else None


def assistant_for(args, build: bool):
    """The assistant the CLI verbs share, from the chunking and answer options."""
    return build_assistant(args.corpus, args.profile, chunk_settings(args), args.generator, args.reranker,
                           args.threshold, args.attribution, args.model, args.kind, build=build, store=args.store)
