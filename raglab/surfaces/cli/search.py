"""The retrieval verbs: ``index``, ``search`` and ``ask``, each option next to its handler."""
from __future__ import annotations

from raglab.base.cited import render_cited
from raglab.infra.embedder import Embedder
from raglab.infra.rerankers import make_reranker
from raglab.infra.assemble import get_index, retriever_for
from raglab.infra.index import build_index
from raglab.infra.pg_index import sync_pgvector
from raglab.surfaces.cli.options import (
    answer_opts,
    assistant_for,
    chunk_settings,
    chunking_opts,
    common_opts,
    emit,
    user_groups,
)
from raglab.surfaces.guard import guarded


def cmd_index(args) -> int:
    if args.store == "pgvector":
        index, report = sync_pgvector(args.corpus, args.profile, chunk_settings(args), Embedder(args.model),
                                      hnsw=args.kind == "hnsw")
        emit(args, {"store": "pgvector", "version_id": index.version, **report},
             [f"pgvector table {report['table']}: {report['chunks']:,} chunks; documents: {report['added']} added, "
              f"{report['updated']} updated, {report['deleted']} deleted, {report['unchanged']} unchanged",
              f"embeddings: {report['cache_hits']:,} from the cache, {report['cache_misses']:,} computed; "
              f"index version {index.version}"])
        return 0
    index = build_index(args.corpus, args.profile, chunk_settings(args), Embedder(args.model), args.kind)
    m = index.manifest
    stats, ch = m["embed_stats"], m["changes"]
    emit(args, {"path": str(index.path), **m},
         [f"indexed {m['n_chunks']:,} chunks of {args.corpus} ({m['profile']} profile, {chunk_settings(args).label()}, "
          f"{m['kind']}) -> {index.path}",
          f"documents: {len(ch['added'])} added, {len(ch['updated'])} updated, {len(ch['deleted'])} deleted, "
          f"{len(ch['unchanged'])} unchanged",
          f"embeddings: {stats['hits']:,} from the cache, {stats['misses']:,} computed; index version {m['version_id']}"])
    return 0


def cmd_search(args) -> int:
    embedder = Embedder(args.model)
    index = get_index(args.corpus, args.profile, chunk_settings(args), embedder, args.kind, args.store, build=False)
    reranker = make_reranker(args.reranker, embedder) if args.mode == "rerank" else None
    retriever = retriever_for(args.corpus, index, embedder, reranker)
    hits = retriever.search(args.query, args.mode, args.k, user_groups(args))
    rows = [h.to_dict(retriever.text(h)) for h in hits]
    lines = [f"{h.rank:>3}  {h.score:8.4f}  {h.id}" for h in hits] or ["no results"]
    emit(args, rows, lines)
    return 0


def cmd_ask(args) -> int:
    assistant = assistant_for(args, build=False)
    assistant.generator = guarded(assistant.generator)   # a model server's error is one line, not a traceback
    answer = assistant.ask(args.query, user_groups(args))
    lines = [render_cited(answer.answer, answer.citations, "text")]   # the answer, a blank line, a line a citation
    if answer.refused and answer.unknown_names:
        lines.append(f"(refused: {answer.reason}; the question names what no page contains: {', '.join(answer.unknown_names)})")
    elif answer.refused:
        d = answer.refusal_detail or {}
        named = {"sentence-floor": "the best sentence's cosine", "sentence-score": "the best sentence's probability"}
        at = (f"; {named[d['stage']]} {d['value']}, under {d['threshold']}" if d.get("stage") in named else "")
        lines.append(f"(refused: {answer.reason}{at}; evidence strength {answer.evidence:.3f}, threshold {assistant.threshold})")
    lines.append(f"generator: {answer.generator}")
    emit(args, answer.to_dict(), lines)
    return 0


def add_index(sub) -> None:
    """``raglab index``."""
    index = sub.add_parser("index", help="chunk, embed (cached) and index a corpus")
    common_opts(index)
    chunking_opts(index)
    index.set_defaults(func=cmd_index)


def question_parser(sub, verb: str, summary: str):
    """A verb that takes a question: the query, then the corpus and chunking options."""
    sp = sub.add_parser(verb, help=summary)
    sp.add_argument("query")
    common_opts(sp)
    chunking_opts(sp)
    return sp


def add_search(sub) -> None:
    """``raglab search``."""
    search = question_parser(sub, "search", "search an index")
    search.add_argument("--mode", choices=("dense", "bm25", "hybrid", "rerank"), default="hybrid")
    search.add_argument("--k", type=int, default=10)
    search.add_argument("--user", help="the caller's access groups, comma-separated (public is always included)")
    search.add_argument("--reranker", help="cross-encoder model name for --mode rerank (default: offline sentence reranker)")
    search.set_defaults(func=cmd_search)


def add_ask(sub) -> None:
    """``raglab ask``."""
    ask = question_parser(sub, "ask", "a cited answer, checked in code, or the refusal")
    answer_opts(ask)
    ask.add_argument("--user", help="the caller's access groups, comma-separated (public is always included)")
    ask.set_defaults(func=cmd_ask)
