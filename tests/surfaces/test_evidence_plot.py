"""The refusal-threshold chart of notebook 04: whole questions on the count axis, labelled axes, the threshold drawn."""
import matplotlib

matplotlib.use("Agg")

from matplotlib.patches import Rectangle  # noqa: E402

from raglab.surfaces import plots  # noqa: E402


def test_the_evidence_histogram_counts_whole_questions_and_draws_the_threshold():
    fig = plots.evidence_plot([0.7, 0.72, 0.8, 0.65, 0.9], [0.45, 0.5], 0.607)
    ax = fig.axes[0]
    fig.canvas.draw()
    assert ax.get_xlabel().startswith("evidence strength") and "questions" in ax.get_ylabel() and ax.get_title()
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert any(isinstance(p, Rectangle) and p.get_height() > 0 for p in ax.patches)     # bars, not lines
    assert [line.get_xdata()[0] for line in ax.get_lines()] == [0.607]
    matplotlib.pyplot.close(fig)
