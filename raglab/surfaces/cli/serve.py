"""The serving verbs: ``llm serve`` (the packaged model) and ``serve`` (the HTTP endpoint and its page),
each option next to its handler."""
from __future__ import annotations

from raglab.base import config
from raglab.infra.packaged_models import serve_forever


def cmd_llm_serve(args) -> int:
    return serve_forever(args.port)


def cmd_serve(args) -> int:
    from raglab.surfaces.serving import serve  # lazy: FastAPI and uvicorn load only for the server (a cold ask skips them)

    serve(args.port, args.corpus, args.profile, generator=args.generator, tokens_file=args.tokens_file,
          trace_path=args.trace, log_level=args.log_level, queue_size=args.queue_size, deadline_s=args.deadline,
          answer_cache=args.answer_cache, workers=args.workers)
    return 0


def add_llm(sub) -> None:
    """``raglab llm serve``."""
    llm = sub.add_parser("llm", help="a local OpenAI-compatible model server").add_subparsers(dest="action", required=True)
    serve = llm.add_parser("serve", help="serve the packaged SmolLM2-135M-Instruct on 127.0.0.1")
    serve.add_argument("--port", type=int, default=8088)
    serve.set_defaults(func=cmd_llm_serve)


def add_serve(sub) -> None:
    """``raglab serve``."""
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
