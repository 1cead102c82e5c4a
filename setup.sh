#!/usr/bin/env bash
# Install everything raglab needs, from the project's own files (no network but the package registries).
set -euo pipefail
cd "$(dirname "$0")"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
# a portable llama.cpp build (the wheel pip caches then suits any x86-64 machine)
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps -r requirements-nodeps.txt
python -m pip install -q --no-deps -e .
