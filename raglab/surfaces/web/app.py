"""The assistant over HTTP: ``POST /ask``, ``GET /chunks/{id}``, ``GET /health`` and a one-page UI at ``/``.

``create_app`` returns a FastAPI app; ``raglab.surfaces.serving.serve`` runs it with uvicorn on 127.0.0.1 only::

    raglab serve --corpus helpcenter --port 8000 --tokens-file config/tokens.json

The assistant and its index load once, at start-up, and every question runs on one worker thread
(the retriever keeps per-call timings and the embedding cache is an SQLite connection), so the
event loop stays free for ``/health`` and for queueing while a question is answered. An answer the
answer cache holds is served from the event loop, before the queue. ``serving.serve(workers=N)`` runs N
such processes behind a front on one port, each loading its own assistant.

A model server that answers with an error or a malformed response is a 502 with a one-line reason.
``/health`` without a token says only that the service is up; with a token it adds the index, the
chunks that token may see, the generator and the queue.

The other parts, each a module of ``raglab.surfaces.web``: who the caller is (``auth``), the limits on a
request (``limits``), the queue and the deadline (``worker``), Markdown sources rendered to HTML
(``markdown``) and the page (``page``).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, StringConstraints

from raglab.infra.answer_cache import AnswerCache, CachedAssistant
from raglab.infra.assemble import build_assistant
from raglab.infra.traces import Tracer
from raglab.book.llm import GeneratorUnavailable
from raglab.guards.widening import whole_sentences
from raglab.surfaces import guard
from raglab.surfaces.web.auth import ApiError, Caller, caller_groups, load_tokens, parse_tokens
from raglab.surfaces.web.limits import DEFAULT_MAX_BODY, MAX_QUESTION, BodyLimit, NoStore
from raglab.base.markdown import is_markdown, markdown_html, markdown_text
from raglab.surfaces.web.markdown import markdown_answer
from raglab.surfaces.web.page import PAGE, PAGE_HEADERS
from raglab.surfaces.web.worker import QueueFull, Worker, deadline_setting, queue_size_setting

log = logging.getLogger("raglab.surfaces.web.app")

HOST = "127.0.0.1"


# ---------------------------------------------------------------- bodies

Question = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUESTION)]


class AskRequest(BaseModel):
    """The only body ``/ask`` accepts: a question. Access never comes from the body."""

    model_config = ConfigDict(extra="forbid")
    question: Question


def _field_errors(exc: RequestValidationError) -> list[dict]:
    """The validation errors without the rejected input: ``[{"field", "message", "type"}]``."""
    out = []
    for e in exc.errors():
        loc = [str(p) for p in e.get("loc", ()) if p != "body"] or ["body"]
        out.append({"field": ".".join(loc), "message": e.get("msg", "invalid"), "type": e.get("type", "")})
    return out


# ---------------------------------------------------------------- start-up

def embedders(assistant) -> list:
    """The distinct embedders an assistant uses: its retriever's, its reranker's and its generator's."""
    retriever = assistant.retriever
    found = (getattr(retriever, "embedder", None), getattr(retriever.reranker, "embedder", None),
             getattr(assistant.generator, "embedder", None))
    return list({id(e): e for e in found if e is not None}.values())


def warm(assistant) -> None:
    """Load and run the embedding models now (they load lazily, on the first text missing from the
    cache), build what the first search would build (``Retriever.warm``) and load the injection detector's
    weights, so that the first question is as fast as the later ones; nothing is written to the cache."""
    for e in embedders(assistant):
        if hasattr(e, "warm"):
            e.warm()
    if hasattr(assistant.retriever, "warm"):
        assistant.retriever.warm()
    detector = getattr(assistant.generator, "detector", None)
    if hasattr(detector, "weights"):
        detector.weights  # noqa: B018 -- the injection detector's weights load on first use


def assistant_loader(corpus: str = "python-docs", profile: str | None = None, settings=None,
                     generator: str | None = None, trace_path: str | Path | None = None) -> Callable:
    """A function that builds the assistant (index loaded, or built once if missing)."""
    def load():
        a = build_assistant(corpus, profile, settings, generator=generator)
        if trace_path is not None:
            a.trace = Tracer(trace_path)
        return a
    return load


# ---------------------------------------------------------------- the app

def ask_reply(answer) -> dict:
    """What ``POST /ask`` sends for an answer: its text, its Markdown rendering (``markdown_answer``,
    null for plain-text sources and refusals) and its citations, which the page's script lists and
    links to every ``[n]`` of the answer that names one (the snippet of a Markdown page as plain text)."""
    return {"answer": answer.answer,
            "answer_html": markdown_answer(answer.answer, answer.citations, answer.refused),
            "citations": [{"n": c.n, "id": c.id, "doc": c.doc,
                           "snippet": markdown_text(c.snippet) if is_markdown(c.doc) else c.snippet}
                          for c in answer.citations],
            "refused": answer.refused, "reason": answer.reason}


def create_app(assistant=None, tokens: dict[str, list[str]] | None = None, tokens_file: str | Path | None = None,
               max_body: int = DEFAULT_MAX_BODY, *, loader: Callable | None = None, corpus: str = "python-docs",
               profile: str | None = None, queue_size: int | None = None, deadline_s: float | None = None,
               answer_cache: int = 1024) -> FastAPI:
    """The HTTP app over ``assistant``, or over the one ``loader()`` returns at start-up (by default
    ``build_assistant(corpus, profile)``, with the chunking the corpus's threshold was chosen on).

    ``tokens`` (``{token: [group, ...]}``) wins over ``tokens_file``, which wins over ``$RAGLAB_TOKENS``
    and ``config/tokens.json``; they are read now, so a missing file fails here and not on a request.
    ``queue_size`` and ``deadline_s`` default to ``$RAGLAB_QUEUE_SIZE`` and ``$RAGLAB_DEADLINE_S`` (64, 30 s).
    ``answer_cache``: answers kept to serve again without the queue (``raglab.infra.answer_cache``; 0: none).
    """
    caller = Caller(parse_tokens(tokens, "tokens") if tokens is not None else load_tokens(tokens_file))
    loader = loader or assistant_loader(corpus, profile)
    queue_size, deadline_s = queue_size_setting(queue_size), deadline_setting(deadline_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        worker = Worker(queue_size, deadline_s)
        loop = asyncio.get_running_loop()
        a = own = None
        try:
            a = assistant if assistant is not None else await loop.run_in_executor(worker.pool, loader)
            await loop.run_in_executor(worker.pool, warm, a)
            # while served, the generator has no retries inside a deadline, each model call ends by the
            # request's deadline, and a model server's error is one line (raglab.surfaces.guard)
            own, a.generator = a.generator, guard.guarded(a.generator, retries=0)
            app.state.answers = CachedAssistant(a, AnswerCache(answer_cache)) if answer_cache else None
            app.state.assistant, app.state.worker = a, worker
            index = a.retriever.index
            log.info("raglab: index %s loaded (%d chunks, generator %s); queue %d, deadline %g s",
                     index.version, len(index.chunks), _generator_name(a), queue_size, deadline_s)
            yield
        finally:
            worker.shutdown()
            if own is not None:
                a.generator, app.state.answers = own, None

    app = FastAPI(title="raglab", summary="Cited answers from the documentation", lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.caller = caller
    app.add_middleware(BodyLimit, max_body=max_body)
    app.add_middleware(NoStore)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError):
        return JSONResponse({"detail": exc.message}, exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        errors = _field_errors(exc)
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return JSONResponse({"detail": f"invalid request: {detail}", "errors": errors}, 422)

    @app.exception_handler(GeneratorUnavailable)
    async def unavailable(request: Request, exc: GeneratorUnavailable):
        log.error("raglab: generator unavailable: %s", exc)
        return JSONResponse({"detail": "the answer model is unavailable right now; try again later",
                             "error": "generator-unavailable"}, 503, headers={"Retry-After": "30"})

    @app.exception_handler(QueueFull)
    async def queue_full(request: Request, exc: QueueFull):
        worker = request.app.state.worker
        log.warning("raglab: queue full (%d waiting), answered 503", worker.queue_size)
        detail = f"too many questions are waiting (queue of {worker.queue_size}); try again later"
        return JSONResponse({"detail": detail, "error": "queue-full"}, 503,
                            headers={"Retry-After": worker.retry_after()})

    @app.exception_handler(guard.DeadlineExceeded)
    async def late(request: Request, exc: guard.DeadlineExceeded):
        worker = request.app.state.worker
        log.warning("raglab: deadline: %s", exc)
        return JSONResponse({"detail": f"no answer within the {worker.deadline_s:g} s deadline; try again later",
                             "error": "deadline"}, 503, headers={"Retry-After": worker.retry_after()})

    @app.exception_handler(guard.ModelError)
    async def model_failed(request: Request, exc: guard.ModelError):
        log.error("raglab: %s", exc)
        return JSONResponse({"detail": f"the answer model failed: {exc.reason}", "error": "model-error"}, 502)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception):
        log.exception("raglab: unexpected error on %s", request.url.path)
        return JSONResponse({"detail": "internal error", "error": "internal"}, 500)

    @app.post("/ask")
    async def ask(body: AskRequest, request: Request, user: Annotated[tuple, Depends(caller_groups)]):
        a, answers = request.app.state.assistant, request.app.state.answers
        answer = answers.cached(body.question, user or None) if answers else None   # served again without the queue
        if answer is None:
            answer = await request.app.state.worker.run((answers or a).ask, body.question, user or None)
        return ask_reply(answer)

    @app.get("/chunks/{chunk_id:path}")
    async def chunk(chunk_id: str, request: Request, user: Annotated[tuple, Depends(caller_groups)]):
        index = request.app.state.assistant.retriever.index
        try:
            if not index.readable(chunk_id, user or None):
                raise KeyError(chunk_id)
        except KeyError:                                          # hidden and missing look the same
            raise ApiError(404, "no such chunk") from None
        c = whole_sentences(*index.locate(chunk_id))   # the cited source (a chunk or a parent) widened to whole sentences
        return {"id": c.id, "doc": c.doc, "heading": " > ".join(c.heading), "text": c.text,
                "html": markdown_html(c.text) if is_markdown(c.doc) else None}

    @app.get("/health")
    async def health(request: Request, authorization: Annotated[str | None, Header()] = None):
        if authorization is None:               # up or not, and nothing more, to anyone
            return {"status": "ok"}
        user = request.app.state.caller.groups(authorization)
        a, worker, answers = request.app.state.assistant, request.app.state.worker, request.app.state.answers
        index = a.retriever.index
        return {"status": "ok", "index_version": index.version, "chunks": int(index.allowed(user or None).sum()),
                "generator": _generator_name(a), "queue": {"size": worker.queue_size, "pending": worker.pending},
                "deadline_s": worker.deadline_s,
                "answer_cache": None if answers is None else {
                    "size": answers.cache.size, "held": len(answers.cache), "hits": answers.cache.hits,
                    "misses": answers.cache.misses}}

    @app.get("/", response_class=HTMLResponse)
    async def page():
        return HTMLResponse(PAGE, headers=PAGE_HEADERS)

    return app


def _generator_name(assistant) -> str:
    return getattr(assistant.generator, "name", type(assistant.generator).__name__)
