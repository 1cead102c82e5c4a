"""``raglab serve``: the HTTP app of ``raglab.surfaces.web.app`` in one process, or a front and N answer processes.

With ``workers=1`` the one process answers (its own queue, deadline and answer cache). With more, this
process is a small front on the public port and each answer process runs the same app on a Unix socket
of its own::

    client --HTTP--> front (127.0.0.1:port) --HTTP over a Unix socket--> worker 1 .. worker N

The front holds no model and no index. It sends each request, unchanged, to the ready worker with the
fewest requests in flight, and relays the reply. When a worker dies (killed, out of memory), the front
notices on the request it had sent there (the connection breaks) and sends that request to another
worker; a request that finds no worker before its deadline gets a 503 with ``Retry-After``, never a
broken connection. A supervisor task starts a replacement for every worker that exits. The first
worker starts alone (it builds the index if it is missing), then the others, so that none builds it twice.

Each worker's queue, deadline, answer cache and trace lines are its own; the trace file is shared.
Worker processes get their share of the cores for torch's threads (``config.thread_env``) and exit
when the front does.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from raglab.base import config
from raglab.book.chunking import ChunkSettings
from raglab.surfaces.web.app import HOST, assistant_loader, create_app
from raglab.surfaces.web.limits import DEFAULT_MAX_BODY, BodyLimit, send_json
from raglab.surfaces.web.worker import deadline_setting, retry_after

log = logging.getLogger("raglab.surfaces.serving")

START_TIMEOUT_S = 1800.0          # a first start may build the full docs' index
POLL_S = 0.2                      # how often the supervisor looks at the workers
GRACE_S = 1.0                     # a worker answers 503 at its deadline; the front waits this much longer
HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"proxy-connection",
              b"host", b"content-length", b"date", b"server"}


def serve(port: int = 8000, corpus: str = "python-docs", profile: str | None = None, settings=None,
          generator: str | None = None, tokens_file: str | Path | None = None, max_body: int = DEFAULT_MAX_BODY,
          trace_path: str | Path | None = None, log_level: str = "info", queue_size: int | None = None,
          deadline_s: float | None = None, answer_cache: int = 1024, workers: int | None = None) -> None:
    """Run the service with uvicorn on 127.0.0.1:``port`` (never another interface) until interrupted.

    ``workers`` (default: the machine's cores): processes that answer at once, behind a front (``Front``);
    ``workers=1`` serves from this process."""
    import uvicorn  # lazy: only when serving

    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise ValueError(f"--workers {workers}: at least 1")
    options = {"tokens_file": str(tokens_file) if tokens_file else None, "max_body": max_body,
               "queue_size": queue_size, "deadline_s": deadline_s, "answer_cache": answer_cache, "corpus": corpus,
               "profile": profile, "settings": asdict(settings) if settings is not None else None,
               "generator": generator, "trace_path": str(trace_path) if trace_path else None,
               "log_level": log_level}
    common = {"host": HOST, "port": port, "log_level": log_level, "proxy_headers": False, "server_header": False}
    if workers == 1:
        uvicorn.run(app_from_options(options), **common)
        return
    front = Front(options, workers)
    uvicorn.run(BodyLimit(front, max_body), **common)


def app_from_options(options: dict):
    """The app one process serves, from ``serve``'s options (JSON-able: what a worker process is handed)."""
    settings = ChunkSettings(**options["settings"]) if options.get("settings") else None
    return create_app(tokens_file=options["tokens_file"], max_body=options["max_body"],
                      queue_size=options["queue_size"], deadline_s=options["deadline_s"],
                      answer_cache=options["answer_cache"],
                      loader=assistant_loader(options["corpus"], options["profile"], settings, options["generator"],
                                              options["trace_path"]))


# ---------------------------------------------------------------- a worker process

def worker_main(socket_path: str) -> None:
    """An answer process: the app over the options in ``$RAGLAB_SERVE``, on the Unix socket ``socket_path``,
    until its front exits."""
    import uvicorn  # lazy: only when serving

    raw = config.get("RAGLAB_SERVE")
    if not raw:
        raise RuntimeError("RAGLAB_SERVE is unset: a worker runs under raglab serve --workers N")
    options = json.loads(raw)
    threading.Thread(target=_exit_with, args=(os.getppid(),), daemon=True, name="raglab-front-watch").start()
    uvicorn.run(app_from_options(options), uds=socket_path, log_level=options.get("log_level") or "info",
                proxy_headers=False, server_header=False, date_header=False)


def _exit_with(front: int) -> None:
    """End this process when its front is gone (it was killed, so it could not stop us)."""
    while os.getppid() == front:
        time.sleep(1.0)
    os._exit(0)


# ---------------------------------------------------------------- the front

@dataclass
class Slot:
    """One answer process: its socket, its process, whether it answers yet, and its requests in flight."""
    number: int
    socket: Path
    process: subprocess.Popen | None = None
    client: httpx.AsyncClient | None = None
    ready: bool = False
    in_flight: int = 0
    retired: list = field(default_factory=list)   # clients of dead processes, closed at shutdown


class NoWorker(Exception):
    """No worker answered the request before its deadline."""


class Front:
    """ASGI app: starts and supervises ``workers`` answer processes and sends each request to one of them."""

    def __init__(self, options: dict, workers: int, deadline_s: float | None = None):
        self.options, self.workers = options, workers
        self.deadline_s = deadline_setting(deadline_s if deadline_s is not None else options.get("deadline_s"))
        self.slots: list[Slot] = []
        self.folder: Path | None = None
        self.retried = self.lost = 0          # requests sent again after a worker broke; requests given up
        self._supervisor: asyncio.Task | None = None

    # -- ASGI
    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self._lifespan(receive, send)
        if scope["type"] != "http":
            return
        body = b""
        while True:                       # BodyLimit has read and capped the body already
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            reply = await self.forward(scope, body)
        except NoWorker as exc:
            return await send_json(send, 503, {"detail": f"{exc}; try again later", "error": "no-worker"},
                                   headers=[(b"retry-after", retry_after(self.deadline_s).encode())])
        headers = [(k.lower(), v) for k, v in reply.headers.raw if k.lower() not in HOP_BY_HOP]
        headers.append((b"content-length", str(len(reply.content)).encode()))
        await send({"type": "http.response.start", "status": reply.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": reply.content})

    async def _lifespan(self, receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.start()
                except Exception as exc:          # noqa: BLE001 -- reported to uvicorn, which exits
                    await self.stop()
                    return await send({"type": "lifespan.startup.failed", "message": str(exc)})
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                return await send({"type": "lifespan.shutdown.complete"})

    # -- the workers
    async def start(self) -> None:
        """Start the workers (the first alone, then the rest) and the supervisor; return when all answer."""
        self.folder = Path(tempfile.mkdtemp(prefix="raglab-serve-"))
        self.slots = [Slot(i, self.folder / f"worker-{i}.sock") for i in range(self.workers)]
        self._spawn(self.slots[0])
        await self._until_ready(self.slots[:1])
        for slot in self.slots[1:]:
            self._spawn(slot)
        await self._until_ready(self.slots[1:])
        self._supervisor = asyncio.create_task(self._supervise())
        log.info("raglab: %d workers answer behind the front", self.workers)

    def _spawn(self, slot: Slot) -> None:
        slot.socket.unlink(missing_ok=True)
        env = {**os.environ, "RAGLAB_SERVE": json.dumps(self.options), **config.thread_env(self.workers)}
        slot.process = subprocess.Popen([sys.executable, "-m", "raglab.surfaces.serving", str(slot.socket)], env=env)
        if slot.client is not None:
            slot.retired.append(slot.client)
        slot.client = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(slot.socket)),
                                        base_url="http://worker", timeout=None)
        slot.ready = False

    async def _probe(self, slot: Slot) -> bool:
        try:
            return (await slot.client.get("/health", timeout=2.0)).status_code == 200
        except httpx.TransportError:
            return False

    async def _until_ready(self, slots: list[Slot]) -> None:
        end = time.monotonic() + START_TIMEOUT_S
        while not all(s.ready for s in slots):
            for s in slots:
                if s.process.poll() is not None:
                    raise RuntimeError(f"worker {s.number} exited with {s.process.returncode} while starting")
                if not s.ready and s.socket.exists():
                    s.ready = await self._probe(s)
            if time.monotonic() > end:
                raise RuntimeError(f"the workers did not answer within {START_TIMEOUT_S:g} s")
            await asyncio.sleep(POLL_S)

    async def _supervise(self) -> None:
        """Replace every worker that exits; mark a replacement ready when it answers."""
        while True:
            for s in self.slots:
                if s.process.poll() is not None:
                    log.warning("raglab: worker %d (pid %d) exited with %s; starting another",
                                s.number, s.process.pid, s.process.returncode)
                    self._spawn(s)
                elif not s.ready and s.socket.exists():
                    s.ready = await self._probe(s)
            await asyncio.sleep(POLL_S)

    async def stop(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
        for s in self.slots:
            if s.process is not None and s.process.poll() is None:
                s.process.send_signal(signal.SIGTERM)
        for s in self.slots:
            if s.process is not None:
                try:
                    s.process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    s.process.kill()
                    s.process.wait()
            for client in [s.client, *s.retired]:
                if client is not None:
                    await client.aclose()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def pick(self, broken: set[int]) -> Slot | None:
        """The ready, live worker with the fewest requests in flight, leaving out the processes in ``broken``
        (a replacement in the same slot is a new process)."""
        live = [s for s in self.slots if s.ready and s.process.pid not in broken and s.process.poll() is None]
        return min(live, key=lambda s: s.in_flight, default=None)

    async def forward(self, scope, body: bytes) -> httpx.Response:
        """The reply of a worker to this request; another worker's if the one it went to broke; ``NoWorker``
        when none answered before the deadline."""
        at = time.monotonic() + self.deadline_s
        path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        if scope.get("query_string"):
            path += "?" + scope["query_string"].decode("latin-1")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        broken: set[int] = set()                  # the processes (pids) this request broke on
        while time.monotonic() < at:
            slot = self.pick(broken)
            if slot is None:                      # every worker is starting, or broke on this request
                await asyncio.sleep(POLL_S)
                continue
            slot.in_flight += 1
            try:
                return await slot.client.request(scope["method"], path, headers=headers, content=body,
                                                 timeout=max(0.1, at - time.monotonic()) + GRACE_S)
            except httpx.TimeoutException:
                break
            except httpx.TransportError as exc:   # the worker died with this request (or refused it as it died)
                log.warning("raglab: worker %d broke on %s %s (%s); sending it to another",
                            slot.number, scope["method"], scope["path"], type(exc).__name__)
                broken.add(slot.process.pid)
                self.retried += 1
            finally:
                slot.in_flight -= 1
        self.lost += 1
        raise NoWorker(f"no worker answered within the {self.deadline_s:g} s deadline")


if __name__ == "__main__":          # a worker process of raglab serve --workers N
    logging.basicConfig(level=logging.INFO)
    worker_main(sys.argv[1])
