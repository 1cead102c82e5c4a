#!/usr/bin/env bash
# Install everything raglab needs, from the project's own files (no network but the package registries).
#   ./setup.sh           the Python packages and the project (enough for the notebooks and the CLI)
#   ./setup.sh --tests   also Debian's Chromium and playwright-core, for the browser test (needs root and apt)
set -euo pipefail
cd "$(dirname "$0")"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
# the local model server's llama.cpp: a portable build (the wheel pip caches then suits any x86-64 machine) of
# only the libraries a text model loads (config/llama_cpp_text_only.cmake says which and why)
llama_flags="-DGGML_NATIVE=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE='$PWD/config/llama_cpp_text_only.cmake'"
export CMAKE_ARGS="${CMAKE_ARGS:-$llama_flags}"
python -m pip install -q -r requirements.txt
python -m pip install -q --no-deps -r requirements-nodeps.txt
python -m pip install -q --no-deps -e .
if [ "${1:-}" = "--tests" ]; then
  if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  npm ci --prefix tests/browser --no-audit --no-fund --silent
fi
