"""The one thread that answers questions: a bounded queue in front of it and a deadline for each request.

A slow or failing model must not hold every caller: at most ``queue_size`` questions wait for the
worker (``$RAGLAB_QUEUE_SIZE``, default 64; one more is a 503 with ``Retry-After``), and each request
has a deadline (``$RAGLAB_DEADLINE_S``, default 30 s) counted from its arrival: the model call gets
the time left as its timeout (``raglab.surfaces.guard``), so the worker is free again when the deadline
passes, and the caller gets a 503.
"""
from __future__ import annotations

import asyncio
import math
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from raglab.base import config
from raglab.surfaces import guard

QUEUE_ENV, DEADLINE_ENV = "RAGLAB_QUEUE_SIZE", "RAGLAB_DEADLINE_S"
DEFAULT_QUEUE_SIZE, DEFAULT_DEADLINE_S = 64, 30.0


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


class QueueFull(Exception):
    """The worker's queue is full."""


class Worker:
    """One thread answers the questions; at most ``queue_size`` wait, and each request ends by its deadline."""

    def __init__(self, queue_size: int, deadline_s: float):
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="raglab-ask")
        self.queue_size, self.deadline_s = queue_size, deadline_s
        self.pending = 0            # submitted and not finished: the one being answered and those waiting
        self._lock = threading.Lock()

    def submit(self, fn, *args) -> tuple[Future, float]:
        """Queue ``fn(*args)`` with a deadline from now: ``(future, deadline)``; ``QueueFull`` when the queue is full."""
        at = time.monotonic() + self.deadline_s
        with self._lock:
            if self.pending > self.queue_size:
                raise QueueFull()
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
        """``fn(*args)`` on the worker; ``QueueFull`` or ``guard.DeadlineExceeded`` instead of waiting past the deadline."""
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
