"""Shared by the chart tests: figures are drawn without a display, and each test's figures are closed after it."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def close():
    """Hand it each figure the test drew; they are closed afterwards."""
    figures = []
    yield figures.append
    for fig in figures:
        plt.close(fig)
