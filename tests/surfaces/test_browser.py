"""The web page in a real headless browser: Debian's Chromium driven by playwright-core (tests/browser/ui.mjs).

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``) and ``tests/browser/node_modules``
(``npm ci --prefix tests/browser``); without them the test fails saying so (set RAGLAB_SKIP_BROWSER=1 to skip).
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from raglab.book.assistant import Assistant
from raglab.guards.guard import Guard
from raglab.infra.traces import Tracer
from raglab.guards.detector import default_detector
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.book.refusal import REFUSAL
from raglab.surfaces.web.app import create_app

pytestmark = pytest.mark.slow   # a model, a server, PostgreSQL or many subprocess builds

HERE = Path(__file__).parents[1] / "browser"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PREMIUM_TOKEN = "browser-premium-token-0003"
SETUP = ("apt-get update && apt-get install -y chromium && "
         "npm ci --prefix tests/browser --no-audit --no-fund")


def _prerequisites() -> list[str]:
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"Chromium at {CHROMIUM}")
    if shutil.which("node") is None:
        missing.append("node")
    if not (HERE / "node_modules" / "playwright-core").exists():
        missing.append("tests/browser/node_modules/playwright-core")
    return missing


def _check_prerequisites() -> None:
    missing = _prerequisites()
    if missing:
        message = f"browser test prerequisites missing: {', '.join(missing)}; install them with: {SETUP}"
        if os.environ.get("RAGLAB_SKIP_BROWSER") == "1":
            pytest.skip(message)
        pytest.fail(message)


@contextmanager
def _serving(retriever, embedder, threshold: float, trace_path: Path):
    """The app over an extractive assistant on ``retriever``, on 127.0.0.1, on a free port, in a background
    thread (uvicorn): its URL."""
    _check_prerequisites()
    import uvicorn

    assistant = Assistant(retriever, ExtractiveGenerator(embedder), threshold=threshold,
                          guard=Guard(default_detector(embedder)), trace=Tracer(trace_path))
    app = create_app(assistant, tokens={PREMIUM_TOKEN: ["premium"]})
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def server(retriever, embedder, workdir):
    """The page over the help-center index (Markdown pages)."""
    with _serving(retriever, embedder, 0.669, workdir / "traces" / "browser.jsonl") as url:
        yield url


@pytest.fixture(scope="module")
def docs_server(json_retriever, embedder, workdir):
    """The page over one Python-docs page (library/json.txt: plain text with reST markup)."""
    with _serving(json_retriever, embedder, 0.0, workdir / "traces" / "browser-docs.jsonl") as url:
        yield url


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


def _browse(opts: dict) -> dict:
    """Run tests/browser/ui.mjs with ``opts``: what it saw, checked to have gone through."""
    t = time.perf_counter()
    run = subprocess.run(["node", str(HERE / "ui.mjs"), json.dumps(opts)], capture_output=True, text=True,
                         timeout=180, cwd=HERE, check=False)
    seconds = time.perf_counter() - t
    assert run.stdout.strip(), f"no output from the browser script (rc {run.returncode}): {run.stderr[-2000:]}"
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["ok"], seen.get("error")
    print(f"\nbrowser run {seconds:.1f}s; markers {seen['markers']}; chunk {seen['chunkId']}")
    return seen


def _no_csp_errors_nothing_from_elsewhere(seen: dict, url: str) -> None:
    assert not seen["pageErrors"] and not [m for m in seen["console"] if "Content Security Policy" in m], seen
    assert all(u.startswith(url) for u in seen["requests"]), seen["requests"]   # nothing from elsewhere


def test_ask_click_a_citation_and_read_the_chunk(server, tmp_path, index):
    shot = tmp_path / "page.png"
    seen = _browse({"url": server, "token": PREMIUM_TOKEN, "question": "What is the Parcelo Plus Concierge phone number?",
                    "tableQuestion": "What are the Parcelo Plus API rate limits?",
                    "refusedQuestion": "Does Parcelo offer gift wrapping?", "screenshot": str(shot)})

    assert seen["title"].startswith("raglab")
    assert seen["answerClass"] == "answered" and "555-0199" in seen["answer"]
    assert seen["markers"] and all(m["text"] == f"[{m['n']}]" for m in seen["markers"])
    first = seen["markers"][0]["id"]
    assert seen["chunkId"] == first and first in index.row_of
    chunk = index.chunks[index.row_of[first]]
    assert seen["chunkTitle"].startswith(f"[{seen['markers'][0]['n']}] {chunk.doc}")

    # the help center's Markdown reads as a page: bold, lists and tables, no literal ** or table pipes
    assert seen["answerFormat"] == "markdown" and "strong" in seen["answerTags"] and "**" not in seen["answer"]
    assert "+1 (888) 555-0199" in seen["answer"] and "**+1 (888) 555-0199**" in chunk.text
    assert seen["chunkFormat"] == "markdown" and {"strong", "ul", "li", "h2"} <= set(seen["chunkTags"])
    assert "**" not in seen["chunkText"] and "555-0199" in seen["chunkText"]
    assert " ".join(seen["chunkText"].split()) == " ".join(chunk.text.replace("**", "").replace("## ", "")
                                                           .replace("- ", "").split())
    table = seen["table"]
    assert table and table["id"] in index.row_of and "Key type" in table["headers"] and table["rows"] >= 2
    assert "|" not in table["text"] and "---" not in table["text"] and table["border"] == "solid"

    assert seen["tokenAfterReload"] == PREMIUM_TOKEN                    # kept in localStorage
    assert seen["refusal"] == REFUSAL and "weak-evidence" in seen["refusalReason"] and seen["refusalMarkers"] == 0
    assert seen["refusalBorder"] != "rgb(76, 114, 176)"                 # refusals do not look like answers

    _no_csp_errors_nothing_from_elsewhere(seen, server)
    width, height = _png_size(shot)
    assert shot.stat().st_size > 5_000 and width > 0 and height > 0


def test_python_docs_text_stays_plain_text(docs_server, tmp_path, json_retriever):
    """The Python docs' reST (``*ensure_ascii*``) is not Markdown: the page shows it as it is, no emphasis."""
    seen = _browse({"url": docs_server, "token": PREMIUM_TOKEN, "question": "What does ensure_ascii do in json.dumps?",
                    "screenshot": str(tmp_path / "docs.png")})
    index = json_retriever.index
    chunk = index.chunks[index.row_of[seen["chunkId"]]]
    assert seen["markers"] and all(m["text"] == f"[{m['n']}]" for m in seen["markers"])
    assert seen["answerFormat"] == "text" and "*ensure_ascii*" in seen["answer"]
    assert set(seen["answerTags"]) == {"a"}                                  # text and cite links only
    assert seen["chunkFormat"] == "text" and seen["chunkTags"] == [] and "*ensure_ascii*" in seen["chunkText"]
    assert " ".join(seen["chunkText"].split()) == " ".join(chunk.text.split())
    _no_csp_errors_nothing_from_elsewhere(seen, docs_server)
