#!/usr/bin/env bash
# Install everything raglab needs, from the project's own files (no network but the package registries).
#   ./setup.sh           the Python packages and the project (enough for the notebooks and the CLI)
#   ./setup.sh --tests   also the test tools (requirements-tests.txt), and Debian's Chromium and playwright-core
#                        for the browser test (needs root and apt)
set -euo pipefail
cd "$(dirname "$0")"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
# how this install began, for the README's timing table (build/setup.json; raglab.course.timings)
started=$SECONDS
if python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llama_cpp') is None)"; then
  environment=installed; else environment=new; fi
pip_cache_dir=$(python -m pip cache dir 2>/dev/null || true)
if [ -n "$pip_cache_dir" ] && [ -n "$(ls -A "$pip_cache_dir" 2>/dev/null)" ]; then pip_cache=filled; else pip_cache=empty; fi
# the local model server's llama.cpp: a portable build (the wheel pip caches then suits any x86-64 machine) of
# only the libraries a text model loads (config/llama_cpp_text_only.cmake says which and why)
llama_flags="-DGGML_NATIVE=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE='$PWD/config/llama_cpp_text_only.cmake'"
export CMAKE_ARGS="${CMAKE_ARGS:-$llama_flags}"
# --no-compile: Python compiles each module to bytecode the first time it is imported (into this environment's
# own folders) instead of pip compiling every file of every package now: about a minute less on 2 cores
python -m pip install -q --no-compile -r requirements.txt
python -m pip install -q --no-compile --no-deps -r requirements-nodeps.txt
python -m pip install -q --no-deps -e .
python -m raglab.course.timings setup "$((SECONDS - started))" "$environment" "$pip_cache"
if [ "${1:-}" = "--tests" ]; then
  python -m pip install -q --no-compile -r requirements.txt -r requirements-tests.txt
  if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  npm ci --prefix tests/browser --no-audit --no-fund --silent
fi
