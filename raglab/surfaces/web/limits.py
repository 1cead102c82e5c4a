"""The limits on a request and the ASGI middlewares around the app: a question's length (``MAX_QUESTION``),
the body's size (``BodyLimit``, a 413 past ``max_body``) and ``Cache-Control: no-store`` on every response
(``NoStore``). ``send_json`` answers from a middleware, before the app (the multi-worker front uses it too)."""
from __future__ import annotations

import json

MAX_QUESTION = 2000
DEFAULT_MAX_BODY = 16_384


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
                return await send_json(send, 400, {"detail": "invalid Content-Length header"})
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
        await send_json(send, 413, {"detail": f"request body too large: the limit is {self.max_body} bytes"},
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


async def send_json(send, status: int, payload: dict, close: bool = False, headers: list | None = None) -> None:
    """Answer ``payload`` as JSON straight through ASGI (from a middleware, before the app)."""
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(headers or [])]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
