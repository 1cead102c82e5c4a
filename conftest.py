"""Test-session set-up shared by the unit tests and the notebooks.

The notebooks run first, before any test fixture points RAGLAB_WORKDIR or RAGLAB_DATABASE_URL at a
temporary place (their kernels inherit the environment), so they see what a learner sees.
"""
import os

os.environ.setdefault("RAGLAB_PROFILE", "small")


def pytest_collection_modifyitems(session, config, items):
    """Notebook cells first (in their own order), then everything else."""
    items.sort(key=lambda item: 0 if item.nodeid.split("::")[0].endswith(".ipynb") else 1)
