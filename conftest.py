"""Test-session set-up shared by the unit tests and the notebooks.

The notebooks run first, before any test fixture points RAGLAB_WORKDIR or RAGLAB_DATABASE_URL at a
temporary place (their kernels inherit the environment), so they see what a learner sees.

The fast inner loop is ``pytest -m "not slow"``: every test that needs no model, server, browser,
PostgreSQL or notebook. An item is slow when it is a notebook cell, uses a fixture that loads a
model or starts a server (``SLOW_FIXTURES``), is a doctest of a module that loads a model
(``SLOW_DOCTESTS``), or is marked ``@pytest.mark.slow`` in its file.
"""
import os
from pathlib import Path

import pytest

os.environ.setdefault("RAGLAB_PROFILE", "small")

# The notebooks are committed executed on a CPU with native bfloat16, so their vectors are bfloat16 ones. A CPU
# without it embeds in float32 (raglab.infra.precision.resolve_precision): scores differ in the third or fourth
# decimal and index versions (which hash the precision) differ. There nbval compares the notebooks with
# decimal numbers and hashes masked (notebooks/other_precision.cfg), unless a sanitizer is given.
NOTEBOOK_PRECISION = "bfloat16"
OTHER_PRECISION = Path(__file__).parent / "notebooks" / "other_precision.cfg"


def _precision() -> str:
    from raglab.infra.precision import resolve_precision

    return resolve_precision()


def pytest_configure(config):
    if getattr(config.option, "nbval_sanitize_with", "") is None and _precision() != NOTEBOOK_PRECISION:
        config.option.nbval_sanitize_with = str(OTHER_PRECISION)


def pytest_report_header(config):
    if getattr(config.option, "nbval_sanitize_with", None) == str(OTHER_PRECISION):
        return (f"nbval: this CPU embeds in {_precision()}, the notebooks were executed in {NOTEBOOK_PRECISION}: "
                f"their decimal numbers and hashes are compared masked ({OTHER_PRECISION.name})")
    return None

SLOW_FIXTURES = {"embedder", "index", "retriever", "pg_url", "project_artifacts", "python_index", "llm_server",
                 "server", "app_client", "client", "released", "graded", "graded_by_hand", "built", "installed",
                 "milestone_1", "class_run"}
SLOW_DOCTESTS = ("raglab.infra.tokenizer.load_tokenizer", "raglab.infra.tokenizer.token_lengths",
                 "raglab.evaluation.chunk_checks.chunk_stats", "raglab.evaluation.chunk_checks.compare_chunkings",
                 "raglab.experiments.tokens", "raglab.surfaces.widgets")


def _slow(item) -> bool:
    path = item.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        return True
    if type(item).__name__ == "DoctestItem":
        return item.name.startswith(SLOW_DOCTESTS)
    if "pgvector" in item.nodeid.split("::")[-1]:     # a parameter that starts PostgreSQL
        return True
    return bool(SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(session, config, items):
    """Mark the slow items; notebook cells first (in their own order), then everything else."""
    for item in items:
        if _slow(item):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: 0 if item.nodeid.split("::")[0].endswith(".ipynb") else 1)
