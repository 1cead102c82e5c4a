"""Shared fixtures. Tests run on the small profile unless RAGLAB_PROFILE says otherwise."""
import os

os.environ.setdefault("RAGLAB_PROFILE", "small")

import pytest  # noqa: E402

from raglab.corpus import load_corpus  # noqa: E402


@pytest.fixture(scope="session")
def python_docs():
    """The small profile's Python-docs pages."""
    return load_corpus("python-docs", "small")


@pytest.fixture(scope="session")
def helpcenter():
    """The bundled help-center corpus."""
    return load_corpus("helpcenter")


@pytest.fixture(scope="session")
def both_corpora(python_docs, helpcenter):
    """Every document of both bundled corpora."""
    return python_docs + helpcenter
