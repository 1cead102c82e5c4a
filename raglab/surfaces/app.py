"""The assistant over HTTP: ``POST /ask``, ``GET /chunks/{id}``, ``GET /health`` and a one-page UI at ``/``.

``create_app`` returns a FastAPI app; ``raglab.surfaces.serving.serve`` runs it with uvicorn on 127.0.0.1 only::

    raglab serve --corpus helpcenter --port 8000 --tokens-file config/tokens.json

Who the caller is comes only from ``Authorization: Bearer <token>``: the tokens file maps each
token to its access groups (``{"tokens": {"<token>": ["premium"]}}``; its path is ``tokens_file``,
else ``$RAGLAB_TOKENS``, else ``config/tokens.json`` in the project; ``config/tokens.example.json``
holds two demo tokens). The request body can never set access: ``/ask`` takes ``{"question": ...}``
and nothing else. A chunk the caller may not see is a 404, exactly like one that does not exist.

The assistant and its index load once, at start-up, and every question runs on one worker thread
(the retriever keeps per-call timings and the embedding cache is an SQLite connection), so the
event loop stays free for ``/health`` and for queueing while a question is answered. An answer the
answer cache holds is served from the event loop, before the queue. ``serving.serve(workers=N)`` runs N
such processes behind a front on one port, each loading its own assistant.

A slow or failing model must not hold every caller: at most ``queue_size`` questions wait for the
worker (``$RAGLAB_QUEUE_SIZE``, default 64; one more is a 503 with ``Retry-After``), and each request
has a deadline (``$RAGLAB_DEADLINE_S``, default 30 s) counted from its arrival: the model call gets
the time left as its timeout (``raglab.surfaces.guard``), so the worker is free again when the deadline
passes, and the caller gets a 503. A model server that answers with an error or a malformed
response is a 502 with a one-line reason. ``/health`` without a token says only that the service is
up; with a token it adds the index, the chunks that token may see, the generator and the queue.

Sources written in Markdown (a ``.md`` document, such as the help center's pages) are also sent
rendered, server-side, by markdown-it with raw HTML off (``markdown_html``): ``GET /chunks/{id}`` adds
``html`` and ``POST /ask`` adds ``answer_html`` (see ``markdown_answer``); both are null for plain-text
sources (the Python docs' ``.txt`` pages use reST markup such as ``*ensure_ascii*``, which is not
Markdown). The text fields stay as they were.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from markdown_it import MarkdownIt
from pydantic import BaseModel, ConfigDict, StringConstraints

from raglab.base import config
from raglab.infra.answer_cache import AnswerCache
from raglab.infra.traces import Tracer
from raglab.infra.assemble import build_assistant
from raglab.book.llm import GeneratorUnavailable
from raglab.guards.widening import whole_sentences
from raglab.surfaces import guard

log = logging.getLogger("raglab.surfaces.app")

HOST = "127.0.0.1"
MAX_QUESTION = 2000
DEFAULT_MAX_BODY = 16_384
TOKENS_ENV = "RAGLAB_TOKENS"
QUEUE_ENV, DEADLINE_ENV = "RAGLAB_QUEUE_SIZE", "RAGLAB_DEADLINE_S"
DEFAULT_QUEUE_SIZE, DEFAULT_DEADLINE_S = 64, 30.0


def default_tokens_path() -> Path:
    """``$RAGLAB_TOKENS``, else ``config/tokens.json`` in the project."""
    return Path(config.get(TOKENS_ENV) or config.PROJECT_ROOT / "config" / "tokens.json")


def queue_size_setting(value: int | None = None) -> int:
    """Questions that may wait for the worker: ``value``, else ``$RAGLAB_QUEUE_SIZE``, else 64."""
    raw = value if value is not None else config.get(QUEUE_ENV) or DEFAULT_QUEUE_SIZE
    try:
        size = int(raw)
    except ValueError:
        raise ValueError(f"{QUEUE_ENV}={raw!r}: expected a whole number") from None
    if size < 0:
        raise ValueError(f"queue size {size}: must be 0 or more")
    return size


def deadline_setting(value: float | None = None) -> float:
    """Seconds a request may take: ``value``, else ``$RAGLAB_DEADLINE_S``, else 30."""
    raw = value if value is not None else config.get(DEADLINE_ENV) or DEFAULT_DEADLINE_S
    try:
        seconds = float(raw)
    except ValueError:
        raise ValueError(f"{DEADLINE_ENV}={raw!r}: expected a number of seconds") from None
    if not seconds > 0 or math.isinf(seconds):
        raise ValueError(f"deadline {seconds}: must be a positive number of seconds")
    return seconds


# ---------------------------------------------------------------- identity

class ApiError(Exception):
    """An error answered as ``{"detail": message}`` with this status."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def parse_tokens(data: object, source: str = "tokens") -> dict[str, tuple[str, ...]]:
    """``{"tokens": {token: [group, ...]}}`` (or the inner mapping) as ``{token: groups}``.

    >>> parse_tokens({"tokens": {"reader-token-1": [], "plus-token-22": ["premium"]}})
    {'reader-token-1': (), 'plus-token-22': ('premium',)}
    """
    mapping = data.get("tokens") if isinstance(data, dict) and "tokens" in data else data
    if not isinstance(mapping, dict):
        raise TypeError(f"{source}: expected an object {{\"tokens\": {{\"<token>\": [\"group\", ...]}}}}")
    out = {}
    for token, groups in mapping.items():
        if not isinstance(token, str) or len(token) < 8 or token != token.strip():
            raise ValueError(f"{source}: a token must be a string of at least 8 characters without surrounding spaces")
        if not isinstance(groups, list) or not all(isinstance(g, str) and g.strip() for g in groups):
            raise ValueError(f"{source}: the groups of a token must be a list of group names")
        out[token] = tuple(dict.fromkeys(g.strip() for g in groups))
    return out


def load_tokens(path: str | Path | None = None) -> dict[str, tuple[str, ...]]:
    """Read a tokens file (see ``parse_tokens``); a missing or malformed file is a clear error."""
    path = Path(path) if path is not None else default_tokens_path()
    if not path.exists():
        example = config.PROJECT_ROOT / "config" / "tokens.example.json"
        raise FileNotFoundError(f"no tokens file at {path}: write one (e.g. copy {example} and replace its demo tokens), "
                                f"or point ${TOKENS_ENV} at it")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    return parse_tokens(data, str(path))


class Caller:
    """Maps a bearer token to access groups (compared in constant time)."""

    def __init__(self, tokens: dict[str, tuple[str, ...]]):
        self._tokens = [(t.encode(), groups) for t, groups in tokens.items()]

    def groups(self, authorization: str | None) -> tuple[str, ...]:
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ApiError(401, "missing bearer token: send 'Authorization: Bearer <token>'",
                           {"WWW-Authenticate": "Bearer"})
        found = None
        for known, groups in self._tokens:   # no early exit: every token is compared
            if hmac.compare_digest(known, token.encode()):
                found = groups
        if found is None:
            raise ApiError(401, "unknown token", {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        return found


def caller_groups(request: Request, authorization: Annotated[str | None, Header()] = None) -> tuple[str, ...]:
    """The FastAPI dependency: the access groups of the bearer token (401 when missing or unknown)."""
    return request.app.state.caller.groups(authorization)


# ---------------------------------------------------------------- bodies

Question = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUESTION)]


class AskRequest(BaseModel):
    """The only body ``/ask`` accepts: a question. Access never comes from the body."""

    model_config = ConfigDict(extra="forbid")
    question: Question


class BodyLimit:
    """ASGI middleware: 413 when the declared ``Content-Length`` or the bytes actually received exceed ``max_body``.

    The body (at most ``max_body`` bytes) is read here and replayed to the app.
    """

    def __init__(self, app, max_body: int):
        self.app, self.max_body = app, max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                return await _send_json(send, 400, {"detail": "invalid Content-Length header"})
            if length > self.max_body:
                return await self._too_large(send)
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return await self._too_large(send)
            parts.append(chunk)
            if not message.get("more_body"):
                break
        body, delivered = b"".join(parts), False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send):
        await _send_json(send, 413, {"detail": f"request body too large: the limit is {self.max_body} bytes"},
                         close=True)


class NoStore:
    """ASGI middleware: ``Cache-Control: no-store`` on every response that does not set it (answers and
    chunks carry restricted text)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_no_store(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_no_store)


async def _send_json(send, status: int, payload: dict, close: bool = False, headers: list | None = None) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _field_errors(exc: RequestValidationError) -> list[dict]:
    """The validation errors without the rejected input: ``[{"field", "message", "type"}]``."""
    out = []
    for e in exc.errors():
        loc = [str(p) for p in e.get("loc", ()) if p != "body"] or ["body"]
        out.append({"field": ".".join(loc), "message": e.get("msg", "invalid"), "type": e.get("type", "")})
    return out


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


# ---------------------------------------------------------------- Markdown

MARKDOWN_SUFFIX = ".md"
_MARKERS = re.compile(r"\[(\d+)\]")
_OPEN, _CLOSE = "\ue000", "\ue001"       # private-use characters that stand in for the brackets of [n]
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:", re.IGNORECASE)
_LINK_SCHEMES = ("http:", "https:", "mailto:")


def _markdown() -> MarkdownIt:
    """CommonMark plus tables, raw HTML off (a tag in the source is shown as text, escaped), and links
    kept only to http, https, mailto or a relative address (on top of markdown-it's own check, which
    already refuses ``javascript:``, ``vbscript:``, ``file:`` and most ``data:``)."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    builtin = md.validateLink

    def validate(url: str) -> bool:
        url = url.strip()
        return builtin(url) and (not _SCHEME.match(url) or url.lower().startswith(_LINK_SCHEMES))

    md.validateLink = validate
    return md


_MD = _markdown()


def is_markdown(doc: str) -> bool:
    """Whether a document's source is Markdown: its id ends with ``.md``."""
    return doc.lower().endswith(MARKDOWN_SUFFIX)


def markdown_html(text: str) -> str:
    """``text`` (Markdown) as HTML that the page can show as it is.

    markdown-it renders it with raw HTML off, so a tag in the source comes out escaped, and a link
    whose address is not http, https, mailto or relative stays text. On top of that, for the page's
    content security policy (no inline styles, nothing loaded from elsewhere): a table cell's
    alignment is a class (``align-right``) and not a ``style`` attribute, an image is its alt text,
    and a link gets ``rel="noopener noreferrer"``.

    >>> markdown_html("**3 business days** <script>alert(1)</script> [x](javascript:alert(1))")
    '<p><strong>3 business days</strong> &lt;script&gt;alert(1)&lt;/script&gt; [x](javascript:alert(1))</p>\\n'
    """
    env: dict = {}
    tokens = _MD.parse(text, env)
    for token in tokens:
        if token.type in ("th_open", "td_open"):
            style = str(token.attrs.pop("style", ""))
            if style.startswith("text-align:"):
                token.attrSet("class", "align-" + style.partition(":")[2])
        for child in token.children or ():
            if child.type == "image":                   # the alt text, escaped as any text
                child.type, child.tag, child.attrs, child.children = "text", "", {}, None
            elif child.type == "link_open":
                child.attrSet("rel", "noopener noreferrer")
    return _MD.renderer.render(tokens, _MD.options, env)


def markdown_text(text: str) -> str:
    r"""What a reader sees of a Markdown excerpt, as plain text: the words without their markup
    (emphasis stars, heading hashes, table pipes, link targets), for a citation's snippet under the
    answer, which is cut mid-sentence, where rendered Markdown would often be unbalanced.

    >>> markdown_text("## Refund timeline\n| days | what |\n|---|---|\n| **3 business days** | [refund](/r) |")
    'Refund timeline days what 3 business days refund'
    """
    words = []
    for token in _MD.parse(text):
        for child in token.children or ():
            if child.type in ("text", "code_inline"):
                words.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                words.append(" ")
        if token.type == "inline" or token.type.endswith("_close"):
            words.append(" ")
    return " ".join("".join(words).split())


def markdown_answer(answer: str, citations, refused: bool = False) -> str | None:
    """The answer's text rendered as Markdown when every source it cites is a Markdown page, else None.

    Why this design: the answer is built from the sources' text (the extractive generator quotes
    their sentences; a model writes in their style), so its markup is the sources' markup. When all
    the cited pages are Markdown, the answer is rendered here, on the server, with ``markdown_html``
    (raw HTML off); with one plain-text source (reST's ``*ensure_ascii*`` is not emphasis), or none
    (a refusal), it stays text. Rendering on the server keeps the page's script small and its
    content security policy as strict as it was: no Markdown library and no ``'unsafe-inline'`` in the
    browser, which copies the HTML node by node into the page through an allowlist of tags and attributes.

    The citation markers ``[n]`` stay recognisable: each is replaced by private-use characters before
    rendering and restored after, so Markdown can never read ``[1]`` as a link (``[1]: url`` in a
    model's answer stays text) and the page turns the ``[n]`` in the HTML's text into the same cite
    links as in a plain answer. The citation snippets of Markdown pages are shown as plain text without
    their markup (``markdown_text``): they are cut mid-sentence, where Markdown would often be unbalanced.

    >>> markdown_answer("Call **+1 (888) 555-0199**. [1]", [type("C", (), {"doc": "plus/priority-support.md"})])
    '<p>Call <strong>+1 (888) 555-0199</strong>. [1]</p>\\n'
    """
    if refused or not citations or not all(is_markdown(c.doc) for c in citations):
        return None
    text = answer.replace(_OPEN, "").replace(_CLOSE, "")
    text = _MARKERS.sub(lambda m: f"{_OPEN}{m.group(1)}{_CLOSE}", text)
    return markdown_html(text).replace(_OPEN, "[").replace(_CLOSE, "]")


# ---------------------------------------------------------------- the worker

class Busy(Exception):
    """The worker's queue is full."""


class Worker:
    """One thread answers the questions; at most ``queue_size`` wait, and each request ends by its deadline."""

    def __init__(self, queue_size: int, deadline_s: float):
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="raglab-ask")
        self.queue_size, self.deadline_s = queue_size, deadline_s
        self.pending = 0            # submitted and not finished: the one being answered and those waiting
        self._lock = threading.Lock()

    def submit(self, fn, *args) -> tuple[Future, float]:
        """Queue ``fn(*args)`` with a deadline from now: ``(future, deadline)``; ``Busy`` when the queue is full."""
        at = time.monotonic() + self.deadline_s
        with self._lock:
            if self.pending > self.queue_size:
                raise Busy()
            self.pending += 1
        try:
            future = self.pool.submit(_with_deadline, at, fn, *args)
        except BaseException:
            self._done(None)
            raise
        future.add_done_callback(self._done)
        return future, at

    def _done(self, _future) -> None:
        with self._lock:
            self.pending -= 1

    async def run(self, fn, *args):
        """``fn(*args)`` on the worker; ``Busy`` or ``guard.DeadlineExceeded`` instead of waiting past the deadline."""
        future, at = self.submit(fn, *args)
        waiting = asyncio.wrap_future(future)
        waiting.add_done_callback(_retrieved)   # a result nobody awaits any more is not logged as lost
        try:
            return await asyncio.wait_for(asyncio.shield(waiting), max(0.0, at - time.monotonic()))
        except asyncio.TimeoutError:
            raise guard.DeadlineExceeded(f"no answer within the {self.deadline_s:g} s deadline") from None
        finally:
            future.cancel()         # drops it if it still waits; a running call ends by the deadline itself

    def retry_after(self) -> str:
        return retry_after(self.deadline_s)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def retry_after(deadline_s: float) -> str:
    """Seconds after which the queue has moved on: every question now waiting is answered or dropped by then."""
    return str(max(1, math.ceil(deadline_s)))


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


def _with_deadline(at: float, fn, *args):
    """Run ``fn(*args)`` with its model calls ending by ``at``; skip it if ``at`` passed while it waited."""
    if time.monotonic() >= at:
        raise guard.DeadlineExceeded("the deadline passed while the question waited")
    with guard.deadline(at):
        return fn(*args)


# ---------------------------------------------------------------- the app

def assistant_loader(corpus: str = "python-docs", profile: str | None = None, settings=None,
                     generator: str | None = None, trace_path: str | Path | None = None) -> Callable:
    """A function that builds the assistant (index loaded, or built once if missing)."""
    def load():
        a = build_assistant(corpus, profile, settings, generator=generator)
        if trace_path is not None:
            a.trace = Tracer(trace_path)
        return a
    return load


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
            a.answer_cache = AnswerCache(answer_cache) if answer_cache else None
            app.state.assistant, app.state.worker = a, worker
            index = a.retriever.index
            log.info("raglab: index %s loaded (%d chunks, generator %s); queue %d, deadline %g s",
                     index.version, len(index.chunks), _generator_name(a), queue_size, deadline_s)
            yield
        finally:
            worker.shutdown()
            if own is not None:
                a.generator, a.answer_cache = own, None

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

    @app.exception_handler(Busy)
    async def busy(request: Request, exc: Busy):
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
        a = request.app.state.assistant
        answer = a.cached(body.question, user or None)     # an answer given before is served without the queue
        if answer is None:
            answer = await request.app.state.worker.run(a.ask, body.question, user or None)
        return {"answer": answer.answer,
                "answer_html": markdown_answer(answer.answer, answer.citations, answer.refused),
                "citations": [{"n": c.n, "id": c.id, "doc": c.doc,
                               "snippet": markdown_text(c.snippet) if is_markdown(c.doc) else c.snippet}
                              for c in answer.citations],
                "refused": answer.refused, "reason": answer.reason}

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
        a, worker = request.app.state.assistant, request.app.state.worker
        index = a.retriever.index
        return {"status": "ok", "index_version": index.version, "chunks": int(index.allowed(user or None).sum()),
                "generator": _generator_name(a), "queue": {"size": worker.queue_size, "pending": worker.pending},
                "deadline_s": worker.deadline_s,
                "answer_cache": None if a.answer_cache is None else {
                    "size": a.answer_cache.size, "held": len(a.answer_cache), "hits": a.answer_cache.hits,
                    "misses": a.answer_cache.misses}}

    @app.get("/", response_class=HTMLResponse)
    async def page():
        return HTMLResponse(PAGE, headers=PAGE_HEADERS)

    return app


def _generator_name(assistant) -> str:
    return getattr(assistant.generator, "name", type(assistant.generator).__name__)


# ---------------------------------------------------------------- the page

_CSS = """
body{font:16px/1.5 system-ui,sans-serif;max-width:54rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}label{font-weight:600}
input,textarea,button{font:inherit}#token{width:22rem}textarea{width:100%;box-sizing:border-box}
button{padding:.3rem 1rem;cursor:pointer}#status{color:#666;margin-left:.6rem}
#answer{border-left:4px solid #4c72b0;padding:.4rem .8rem;margin:1rem 0;white-space:pre-wrap}
#answer:empty{display:none}
#answer.refused{border:2px solid #c44e52;border-left-width:6px;background:#fbeaea}
.reason{display:block;color:#8c1c1f;font-size:.85rem;margin-top:.3rem}
a.cite{color:#1f5fa8;text-decoration:none;font-weight:600;cursor:pointer;padding:0 .1rem}a.cite:hover{text-decoration:underline}
a.cite.active{background:#dfe9f7}
#sources{font-size:.9rem;padding-left:1.2rem}#sources:empty{display:none}
#error{color:#8c1c1f;font-weight:600}#error:empty{display:none}
#chunk{border:1px solid #ccc;background:#f7f7f7;padding:.6rem .8rem;margin-top:1rem}#chunk[hidden]{display:none}
#chunk-text{white-space:pre-wrap;font:.9rem/1.45 ui-monospace,monospace;margin:.4rem 0 0}
#answer[data-format=markdown],#chunk-text[data-format=markdown]{white-space:normal;font-family:inherit}
#answer p:first-child,#chunk-text>:first-child{margin-top:0}#answer p:last-child,#chunk-text>:last-child{margin-bottom:0}
#chunk-text h1,#chunk-text h2,#chunk-text h3,#chunk-text h4{font-size:1rem;margin:.6rem 0 .3rem}
table{border-collapse:collapse;margin:.4rem 0}th,td{border:1px solid #bbb;padding:.15rem .5rem;text-align:left}
th.align-center,td.align-center{text-align:center}th.align-right,td.align-right{text-align:right}
"""

_JS = r"""
const $ = (id) => document.getElementById(id);
const KEY = 'raglab-token';
$('token').value = localStorage.getItem(KEY) || '';
$('token').addEventListener('input', () => localStorage.setItem(KEY, $('token').value.trim()));
function headers() { return {'Authorization': 'Bearer ' + $('token').value.trim(), 'Content-Type': 'application/json'}; }
function message(status, data) {
  if (data && typeof data.detail === 'string') return 'Error ' + status + ': ' + data.detail;
  return 'Error ' + status;
}
function citeLink(c) {
  const a = document.createElement('a');
  a.className = 'cite'; a.href = '#'; a.textContent = '[' + c.n + ']';
  a.dataset.id = c.id; a.dataset.n = String(c.n); a.title = c.doc;
  return a;
}
// HTML rendered by the server (Markdown, raw HTML off) enters the page node by node: the parsed copy is
// inert (nothing in it runs or loads), only the tags in TAGS are rebuilt, an element of any other tag
// keeps its text only, and the only attributes kept are a link's http(s)/mailto address and a table
// cell's alignment class. Every text goes through onText (which makes text nodes, and cite links in
// an answer); no HTML string is ever written into the live page.
const TAGS = new Set(['P', 'BR', 'HR', 'STRONG', 'EM', 'CODE', 'PRE', 'BLOCKQUOTE', 'UL', 'OL', 'LI',
  'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'A']);
function safeHref(href) {
  try {
    const url = new URL(href, location.href);
    return ['http:', 'https:', 'mailto:'].includes(url.protocol) ? url.href : null;
  } catch (e) { return null; }
}
function copyHtml(html, into, onText) {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const walk = (src, dst) => {
    for (const node of src.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) { onText(dst, node.data); continue; }
      if (node.nodeType !== Node.ELEMENT_NODE) continue;
      if (!TAGS.has(node.tagName)) { onText(dst, node.textContent); continue; }
      const el = document.createElement(node.tagName.toLowerCase());
      if (node.tagName === 'A') {
        const href = safeHref(node.getAttribute('href') || '');
        if (href) { el.href = href; el.rel = 'noopener noreferrer'; }
      }
      const align = node.getAttribute('class') || '';
      if ((node.tagName === 'TH' || node.tagName === 'TD') && /^align-(left|center|right)$/.test(align)) el.className = align;
      dst.append(el);
      walk(node, el);
    }
  };
  walk(doc.body, into);
}
function plainText(dst, text) { dst.append(document.createTextNode(text)); }
function render(data) {
  const box = $('answer'); box.replaceChildren(); $('sources').replaceChildren();
  box.className = data.refused ? 'refused' : 'answered'; box.dataset.format = 'text';
  box.dataset.refused = String(data.refused);
  if (data.refused) {
    const p = document.createElement('strong'); p.id = 'refusal'; p.textContent = data.answer;
    const r = document.createElement('span'); r.className = 'reason'; r.textContent = 'Refused: ' + data.reason;
    box.append(p, r); return;
  }
  const byN = new Map(data.citations.map((c) => [String(c.n), c]));
  const withCites = (dst, text) => text.split(/\[(\d+)\]/).forEach((part, i) => {
    if (i % 2 === 0) { if (part) dst.append(document.createTextNode(part)); }
    else if (byN.has(part) && !dst.closest('a')) dst.append(citeLink(byN.get(part)));
    else dst.append(document.createTextNode('[' + part + ']'));
  });
  box.dataset.format = data.answer_html ? 'markdown' : 'text';
  if (data.answer_html) copyHtml(data.answer_html, box, withCites);
  else withCites(box, data.answer);
  for (const c of data.citations) {
    const li = document.createElement('li');
    li.append(citeLink(c), document.createTextNode(' ' + c.doc + ' \u2014 ' + c.snippet));
    $('sources').append(li);
  }
}
async function ask() {
  const question = $('question').value.trim();
  $('error').textContent = ''; $('chunk').hidden = true;
  if (!question) { $('error').textContent = 'Type a question first.'; return; }
  $('ask').disabled = true; $('status').textContent = 'Searching the documentation\u2026';
  try {
    const res = await fetch('/ask', {method: 'POST', headers: headers(), body: JSON.stringify({question})});
    const data = await res.json().catch(() => null);
    if (!res.ok) { $('answer').replaceChildren(); $('sources').replaceChildren(); $('error').textContent = message(res.status, data); return; }
    render(data);
  } catch (e) {
    $('error').textContent = 'The server cannot be reached.';
  } finally {
    $('ask').disabled = false; $('status').textContent = '';
  }
}
async function showChunk(link) {
  document.querySelectorAll('a.cite.active').forEach((a) => a.classList.remove('active'));
  link.classList.add('active');
  const path = link.dataset.id.split('/').map(encodeURIComponent).join('/');
  const res = await fetch('/chunks/' + path, {headers: headers()});
  const data = await res.json().catch(() => null);
  const panel = $('chunk'), text = $('chunk-text');
  text.replaceChildren(); text.dataset.format = 'text';
  if (!res.ok) { $('chunk-title').textContent = message(res.status, data); }
  else {
    $('chunk-title').textContent = '[' + link.dataset.n + '] ' + data.doc + (data.heading ? ' \u2014 ' + data.heading : '');
    if (data.html) { text.dataset.format = 'markdown'; copyHtml(data.html, text, plainText); }
    else text.textContent = data.text;
  }
  panel.dataset.id = link.dataset.id; panel.hidden = false;
}
$('ask').addEventListener('click', ask);
$('question').addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) ask(); });
document.addEventListener('click', (e) => {
  const link = e.target.closest('a.cite');
  if (link) { e.preventDefault(); showChunk(link); }
});
"""

PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>raglab: ask the documentation</title>
<style>{_CSS}</style></head>
<body>
<h1>Ask the documentation</h1>
<p><label for="token">Access token</label><br><input id="token" type="password" autocomplete="off" placeholder="Bearer token"></p>
<p><label for="question">Question</label><br><textarea id="question" rows="3" maxlength="{MAX_QUESTION}"
placeholder="How long do I have to return an item?"></textarea></p>
<p><button id="ask" type="button">Ask</button><span id="status" role="status"></span></p>
<div id="error" role="alert"></div>
<div id="answer" aria-live="polite"></div>
<ol id="sources"></ol>
<section id="chunk" hidden><strong id="chunk-title"></strong><div id="chunk-text"></div></section>
<script>{_JS}</script>
</body></html>
"""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


PAGE_HEADERS = {
    "Content-Security-Policy": (f"default-src 'none'; script-src {_sha256(_JS)}; style-src {_sha256(_CSS)}; "
                                "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
