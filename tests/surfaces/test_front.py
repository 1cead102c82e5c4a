"""The front of `raglab serve --workers N` (raglab.surfaces.serving.Front) on stand-in workers: httpx's
MockTransport plays each worker, so what is sent, retried and relayed is seen exactly."""
import asyncio
import json
import time

import httpx

from raglab.surfaces.serving import Front, Slot


class Alive:
    """A stand-in for a worker's process that has not exited."""

    def __init__(self, pid: int):
        self.pid = pid

    def poll(self):
        return None


def front_over(*handlers, deadline_s: float = 2.0) -> Front:
    front = Front({}, len(handlers), deadline_s=deadline_s)
    for i, handler in enumerate(handlers):
        front.slots.append(Slot(i, socket=None, process=Alive(1000 + i), ready=True,
                                client=httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://worker")))
    return front


def call(front: Front, method: str = "POST", path: str = "/ask", query: bytes = b"", body: bytes = b"{}"):
    """The front's reply to one request: (status, headers, body)."""
    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": query,
             "headers": [(b"host", b"127.0.0.1:8000"), (b"authorization", b"Bearer t"),
                         (b"content-length", str(len(body)).encode()), (b"connection", b"keep-alive")]}
    sent = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(front(scope, receive, send))
    start, reply = sent
    return start["status"], start["headers"], reply["body"]


def test_a_request_a_worker_broke_on_is_answered_by_another():
    seen = []

    def dies(request: httpx.Request):
        seen.append(("dies", request.method, request.url.raw_path, request.content))
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)

    def answers(request: httpx.Request):
        seen.append(("answers", request.method, request.url.raw_path, request.content))
        assert request.headers["authorization"] == "Bearer t"       # the caller's token goes through
        return httpx.Response(200, json={"answer": "ok"}, headers={"Connection": "close", "X-Kept": "1"})

    front = front_over(dies, answers)
    front.slots[1].in_flight = 1                 # the dying worker looks less busy, so it is tried first
    status, headers, body = call(front, path="/chunks/a%2Fb.txt", query=b"x=1", body=b'{"question": "q"}')
    assert status == 200 and json.loads(body) == {"answer": "ok"}
    assert [s[0] for s in seen] == ["dies", "answers"]
    assert seen[0][1:] == seen[1][1:] == ("POST", b"/chunks/a%2Fb.txt?x=1", b'{"question": "q"}')
    names = [k.lower() for k, _ in headers]
    assert b"connection" not in names and (b"x-kept", b"1") in headers
    assert dict(headers)[b"content-length"] == str(len(body)).encode()
    assert front.retried == 1 and front.lost == 0


def test_no_worker_before_the_deadline_is_a_503_with_retry_after():
    def dies(request: httpx.Request):
        raise httpx.ConnectError("No such file or directory", request=request)

    front = front_over(dies, dies, deadline_s=0.6)
    t = time.monotonic()
    status, headers, body = call(front)
    assert 0.6 <= time.monotonic() - t < 0.6 + 1.0
    assert status == 503 and json.loads(body)["error"] == "no-worker"
    assert dict(headers)[b"retry-after"] == b"1"
    assert front.retried == 2 and front.lost == 1


def test_a_worker_s_own_reply_is_relayed_as_it_is():
    """A worker's 503 (its queue is full) reaches the caller unchanged, and nothing is retried."""
    def busy(request: httpx.Request):
        return httpx.Response(503, json={"error": "queue-full"}, headers={"Retry-After": "30"})

    front = front_over(busy)
    status, headers, body = call(front)
    assert status == 503 and json.loads(body) == {"error": "queue-full"} and (b"retry-after", b"30") in headers
    assert front.retried == 0
