"""A stand-in OpenAI-compatible model server on 127.0.0.1 that answers well, slowly or badly, for the
tests and the load bench of ``raglab serve`` under a slow or failing model.

    with FakeModel(mode="slow", delay=10) as model:   # LLM_BASE_URL=model.base_url
        ...
        model.mode = "ok"                             # the model recovers

Modes: ``ok`` (a cited one-line answer at once), ``slow`` (the same after ``delay`` seconds), ``error``
(HTTP 500), ``bad-request`` (HTTP 400), ``not-json`` (200 with a body that is not JSON), ``no-choices``
(200 with JSON that is not a chat completion). ``stop()`` (or leaving the ``with``) ends it, slow
answers included.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = ("ok", "slow", "error", "bad-request", "not-json", "no-choices")
ANSWER = "The documentation answers this [1]."


def completion(text: str = ANSWER, model: str = "fake") -> dict:
    """A minimal chat completion carrying ``text``."""
    return {"id": "fake-1", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def reply(mode: str) -> tuple[int, bytes]:
    """The status and body a mode answers with (``slow`` sleeps first, then answers like ``ok``)."""
    if mode in ("ok", "slow"):
        return 200, json.dumps(completion()).encode()
    if mode in ("error", "bad-request"):
        status = 500 if mode == "error" else 400
        return status, json.dumps({"error": {"message": f"fake {mode}", "type": mode}}).encode()
    return 200, (b"<html>oops</html>" if mode == "not-json" else b'{"unexpected": true}')


class FakeModel:
    """The server, in a background thread; ``mode`` may change while it runs."""

    def __init__(self, mode: str = "ok", delay: float = 10.0):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
        self.mode, self.delay, self.calls = mode, delay, 0
        self._lock, self._stopping = threading.Lock(), threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-model", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):   # noqa: N802 -- the http.server hook's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fake._lock:
                    fake.calls += 1
                mode = fake.mode
                if mode == "slow" and fake._stopping.wait(fake.delay):
                    return
                status, body = reply(mode)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):   # the client gave up (its deadline)
                    pass

            def log_message(self, *args):
                pass

        return Handler

    def stop(self) -> None:
        """Stop serving, end slow answers, close the socket."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "FakeModel":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
