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
from pathlib import Path

import pytest

from raglab.assistant import Assistant
from raglab.generate import REFUSAL, ExtractiveGenerator
from raglab.surfaces.app import create_app

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


@pytest.fixture(scope="module")
def server(retriever, embedder, workdir):
    """The app on 127.0.0.1, on a free port, in a background thread (uvicorn), over the help-center index."""
    missing = _prerequisites()
    if missing:
        message = f"browser test prerequisites missing: {', '.join(missing)}; install them with: {SETUP}"
        if os.environ.get("RAGLAB_SKIP_BROWSER") == "1":
            pytest.skip(message)
        pytest.fail(message)
    import uvicorn

    assistant = Assistant(retriever, ExtractiveGenerator(embedder), threshold=0.669,
                          trace_path=workdir / "traces" / "browser.jsonl")
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
    yield f"http://127.0.0.1:{port}/"
    srv.should_exit = True
    thread.join(timeout=10)
    sock.close()


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_ask_click_a_citation_and_read_the_chunk(server, tmp_path, index):
    shot = tmp_path / "page.png"
    opts = {"url": server, "token": PREMIUM_TOKEN, "question": "What is the Parcelo Plus Concierge phone number?",
            "refusedQuestion": "Does Parcelo offer gift wrapping?", "screenshot": str(shot)}
    t = time.perf_counter()
    run = subprocess.run(["node", str(HERE / "ui.mjs"), json.dumps(opts)], capture_output=True, text=True,
                         timeout=180, cwd=HERE, check=False)
    seconds = time.perf_counter() - t
    assert run.stdout.strip(), f"no output from the browser script (rc {run.returncode}): {run.stderr[-2000:]}"
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["ok"], seen.get("error")
    print(f"\nbrowser run {seconds:.1f}s; markers {seen['markers']}; chunk {seen['chunkId']}")

    assert seen["title"].startswith("raglab")
    assert seen["answerClass"] == "answered" and "555-0199" in seen["answer"]
    assert seen["markers"] and all(m["text"] == f"[{m['n']}]" for m in seen["markers"])
    first = seen["markers"][0]["id"]
    assert seen["chunkId"] == first and first in index.row_of
    chunk = index.chunks[index.row_of[first]]
    assert " ".join(seen["chunkText"].split()) == " ".join(chunk.text.split()) and "555-0199" in seen["chunkText"]
    assert seen["chunkTitle"].startswith(f"[{seen['markers'][0]['n']}] {chunk.doc}")

    assert seen["tokenAfterReload"] == PREMIUM_TOKEN                    # kept in localStorage
    assert seen["refusal"] == REFUSAL and "weak-evidence" in seen["refusalReason"] and seen["refusalMarkers"] == 0
    assert seen["refusalBorder"] != "rgb(76, 114, 176)"                 # refusals do not look like answers

    assert not seen["pageErrors"] and not [m for m in seen["console"] if "Content Security Policy" in m], seen
    assert all(u.startswith(server) for u in seen["requests"]), seen["requests"]   # nothing from elsewhere
    width, height = _png_size(shot)
    assert shot.stat().st_size > 5_000 and width > 0 and height > 0
