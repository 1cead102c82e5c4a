"""Test-session set-up shared by the unit tests and the notebooks.

The notebooks run first, before any test fixture points RAGLAB_WORKDIR or RAGLAB_DATABASE_URL at a
temporary place (their kernels inherit the environment), so they see what a learner sees.

The fast inner loop is ``pytest -m "not slow"``: every test that needs no model, server, browser,
PostgreSQL or notebook. An item is slow when it is a notebook cell, uses a fixture that loads a
model or starts a server (``SLOW_FIXTURES``), is a doctest of a module that loads a model
(``SLOW_DOCTESTS``), or is marked ``@pytest.mark.slow`` in its file.
"""
import os

import pytest

os.environ.setdefault("RAGLAB_PROFILE", "small")

SLOW_FIXTURES = {"embedder", "index", "retriever", "pg_url", "project_artifacts", "python_index", "llm_server",
                 "server", "app_client", "client", "released", "graded", "graded_by_hand", "built", "installed",
                 "milestone_1", "class_run"}
SLOW_DOCTESTS = ("raglab.chunking.load_tokenizer", "raglab.chunking.token_lengths", "raglab.chunking.chunk_stats",
                 "raglab.chunking.compare_chunkings", "raglab.embeddings", "raglab.experiments.tokens",
                 "raglab.surfaces.widgets", "raglab.rerank")


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
