"""The student bundle as a student gets it, shared by the tests that read it or run in it (built and installed
once a session: ``raglab release``, then the bundle's own ``install.sh`` into a new virtual environment)."""
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from raglab.surfaces.cli import main


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """``raglab release`` as an instructor runs it; the archive unpacked as a student unpacks it:
    ``(release folder, archive, the unpacked bundle's top folder)``."""
    out = tmp_path_factory.mktemp("release")
    assert main(["release", "--out", str(out)]) == 0
    archive = next(out.glob("raglab-course-*.tar.gz"))
    where = tmp_path_factory.mktemp("student")
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    return out, archive, next(where.iterdir())


@dataclass
class Installed:
    """The unpacked bundle (``top``), the new environment it was installed into (``venv``) and an environment
    (``env``) that knows nothing of this repository."""
    top: Path
    venv: Path
    env: dict

    def run(self, *args, cwd=None, timeout=1200, **settings) -> subprocess.CompletedProcess:
        """Run one of the environment's programs (``python``, ``raglab``, ``jupyter``), in the bundle's top folder
        unless ``cwd`` says otherwise, with ``settings`` added to the environment (``RAGLAB_ARTIFACTS="..."``)."""
        return subprocess.run([str(self.venv / "bin" / args[0]), *args[1:]], cwd=cwd or self.top,
                              env={**self.env, **settings}, capture_output=True, text=True, timeout=timeout)


def clean_env(venv: Path) -> dict:
    """An environment that knows nothing of this repository: the venv first on PATH, no PYTHONPATH, no raglab setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGLAB_", "PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    env.update(PATH=f"{venv / 'bin'}:{env.get('PATH', '')}", VIRTUAL_ENV=str(venv))
    return env


@pytest.fixture(scope="session")
def installed(built, tmp_path_factory) -> Installed:
    """The bundle installed by its own ``install.sh`` into a new virtual environment (not this one's packages)."""
    _, _, top = built
    venv = tmp_path_factory.mktemp("venv") / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = clean_env(venv)
    run = subprocess.run(["bash", "install.sh"], cwd=top, env=env, capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return Installed(top, venv, env)
