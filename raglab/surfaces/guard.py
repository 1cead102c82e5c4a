"""A model server call that ends by a deadline and fails in one clear line.

``guarded(generator)`` returns a copy of an OpenAI-compatible generator whose client checks every
``chat.completions.create`` call: an error status (HTTP 500, 400 ...) or a malformed response becomes a
``ModelError`` with a one-line reason, never a traceback; an unreachable server stays the generator's
own ``GeneratorUnavailable``. Inside ``with deadline(t):`` (a ``time.monotonic()`` value, per thread)
each call's timeout is the time left, and a call past the deadline is a ``DeadlineExceeded``: this is
how ``raglab serve`` frees its worker when the model is slow. (The HTTP client applies the timeout to
connecting and to each read, so a server that trickles bytes can hold a call longer; the caller still
gets its answer at the deadline.) Generators without a client (extractive, scripted) are returned unchanged.
"""
from __future__ import annotations

import contextlib
import copy
import threading
import time

_LOCAL = threading.local()


class ModelError(RuntimeError):
    """The model server answered, but with an error status or a malformed response."""

    def __init__(self, reason: str, base_url: str):
        super().__init__(f"the model server at {base_url} failed: {reason}")
        self.reason = reason


class DeadlineExceeded(RuntimeError):
    """The request's deadline passed before the model answered."""


@contextlib.contextmanager
def deadline(at: float | None):
    """Model calls on this thread end by ``at`` (``time.monotonic()`` seconds; None: no deadline)."""
    before = getattr(_LOCAL, "at", None)
    _LOCAL.at = at
    try:
        yield
    finally:
        _LOCAL.at = before


def time_left() -> float | None:
    """Seconds until this thread's deadline, or None without one."""
    at = getattr(_LOCAL, "at", None)
    return None if at is None else at - time.monotonic()


def well_formed(resp) -> bool:
    """Whether a chat completion has ``choices[0].message.content`` as text (or None)."""
    try:
        content = resp.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return False
    return content is None or isinstance(content, str)


def _status_reason(exc) -> str:
    """``HTTP 500 Internal Server Error``: the status line, never the body (it may echo the prompt)."""
    phrase = getattr(getattr(exc, "response", None), "reason_phrase", "") or ""
    return f"HTTP {exc.status_code} {phrase}".strip()


class GuardedClient:
    """Stands in for an OpenAI client: ``chat.completions.create`` with the deadline and the checks."""

    def __init__(self, client, base_url: str):
        self.client, self.base_url = client, base_url

    @property
    def chat(self):
        return self

    @property
    def completions(self):
        return self

    def create(self, **kwargs):
        """The real call, its timeout cut to the time left; errors as ``ModelError`` or ``DeadlineExceeded``."""
        import openai  # lazy: only with a model server

        left = time_left()
        if left is not None and left <= 0:
            raise DeadlineExceeded("the deadline passed before the model was called")
        client = self.client if left is None else self.client.with_options(timeout=left, max_retries=0)
        try:
            resp = client.chat.completions.create(**kwargs)
        except openai.APITimeoutError as exc:
            if left is not None:
                raise DeadlineExceeded(f"the model did not answer within {left:.1f} s") from exc
            raise
        except openai.APIStatusError as exc:
            raise ModelError(f"it answered {_status_reason(exc)}", self.base_url) from exc
        except (openai.APIResponseValidationError, ValueError) as exc:   # ValueError: a body that is not JSON
            raise ModelError("malformed response (not a chat completion)", self.base_url) from exc
        if not well_formed(resp):
            raise ModelError("malformed response (no choices[0].message.content)", self.base_url)
        return resp


def guarded(generator, retries: int | None = None):
    """A copy of ``generator`` whose model calls are guarded (see the module); ``retries`` overrides its retries."""
    client = getattr(generator, "client", None)
    if client is None or not hasattr(client, "with_options"):
        return generator
    out = copy.copy(generator)
    out.client = GuardedClient(client, getattr(generator, "base_url", "?"))
    if retries is not None:
        out.retries = retries
    return out
