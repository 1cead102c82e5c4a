"""The milestone charts of notebooks 01 to 06: labels, tick labels and what is drawn (no pixels)."""
import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from raglab.surfaces import plots


def bars(ax):
    """(x or y position, height or width) of every filled bar of the axes."""
    return [p for p in ax.patches if isinstance(p, Rectangle) and p.get_fill()]


def test_size_boxplot_puts_the_strategies_on_the_y_axis(close):
    fig = plots.size_boxplot({"words 150/30": [150, 140, 30], "headings 150/30 +prefix": [100, 20, 300]})
    close(fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["words 150/30", "headings 150/30 +prefix"]
    assert ax.get_xscale() == "log" and "per chunk" in ax.get_xlabel() and ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10", "20", "50", "100", "200", "500"]


def test_token_histograms_label_the_model_limit(close):
    fig = plots.token_histograms({"a": [100, 300], "b": [50, 60]}, limit=256)
    close(fig)
    assert fig.axes[0].get_legend().get_texts()[0].get_text() == "model limit (256)"
    assert all(ax.get_xlabel() == "word-piece tokens" for ax in fig.axes)


def test_scores_chart_labels_its_x_axis(close):
    frame = pd.DataFrame({"value": [0.8], "ci_low": [0.7], "ci_high": [0.9]}, index=["recall@5"])
    fig = plots.scores_chart(frame)
    close(fig)
    assert fig.axes[0].get_xlabel().startswith("score") and fig.axes[0].get_ylabel() == "score"


TYPES = pd.DataFrame({"type": ["fact", "fact", "fact", "identifier", "paraphrase"],
                      "dense recall@5": [1.0, 0.0, 0.5, 0.0, 1.0],
                      "bm25 recall@5": [1.0, 1.0, 0.0, 1.0, 0.0]})


def test_hits_by_type_counts_questions_with_any_evidence_in_the_top_k():
    counts = plots.hits_by_type(TYPES)
    assert counts.to_dict("index") == {"fact": {"questions": 3, "dense": 2, "bm25": 2},
                                       "identifier": {"questions": 1, "dense": 0, "bm25": 1},
                                       "paraphrase": {"questions": 1, "dense": 1, "bm25": 0}}


def test_hits_by_type_bars_draw_one_bar_per_retriever_and_type(close):
    fig = plots.hits_by_type_bars(plots.hits_by_type(TYPES))
    close(fig)
    ax = fig.axes[0]
    behind, dense, bm25 = ax.containers                                  # hollow totals, then one set per retriever
    assert [p.get_height() for p in behind] == [3, 1, 1]
    assert [p.get_height() for p in dense] == [2, 0, 1] and [p.get_height() for p in bm25] == [2, 1, 0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fact\n(3 questions)", "identifier\n(1 questions)",
                                                           "paraphrase\n(1 questions)"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["questions of this type", "dense", "BM25"]
    assert ax.get_ylabel() == "questions with evidence in the top 5" and ax.get_xlabel()
    assert all(float(t).is_integer() for t in ax.get_yticks())


def test_rank_strip_draws_misses_in_their_own_column(close):
    table = pd.DataFrame({"type": ["fact", "multi"], "dense rank": [3.0, np.nan], "rerank rank": [1.0, 12.0]},
                         index=["py-1", "py-2"])
    fig = plots.rank_strip(table, modes=("dense", "rerank"), depth=10)
    close(fig)
    ax = fig.axes[0]
    assert ax.get_xticklabels()[-1].get_text() == "not in\ntop 10"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["dense", "reranked"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["py-1 (fact)", "py-2 (multi)"]
    dense, rerank = ax.get_lines()
    assert np.round(dense.get_xdata(), 2).tolist() == [2.92, 11.92]      # rank 3, then "not in top 10" (12)
    assert np.round(rerank.get_xdata(), 2).tolist() == [1.08, 12.08]     # rank 12 is past the depth: a miss
    assert "rank" in ax.get_xlabel() and ax.get_ylabel()


def test_access_mix_stacks_each_users_top_k_by_access_group(close):
    idx = pd.MultiIndex.from_tuples([("q1", "public user"), ("q1", "premium user")])
    fig = plots.access_mix(pd.DataFrame({"public": [5, 1], "premium": [0, 4]}, index=idx))
    close(fig)
    ax = fig.axes[0]
    assert [p.get_width() for p in bars(ax)] == [5, 0, 1, 4]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["public user", "premium user"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["public chunks", "premium chunks"]
    assert ax.get_xlim() == (0, 5) and "top 5" in ax.get_xlabel()


def test_the_evidence_histogram_counts_whole_questions_and_draws_the_threshold(close):
    fig = plots.evidence_plot([0.7, 0.72, 0.8, 0.65, 0.9], [0.45, 0.5], 0.607)
    close(fig)
    ax = fig.axes[0]
    fig.canvas.draw()
    assert ax.get_xlabel().startswith("evidence strength") and "questions" in ax.get_ylabel() and ax.get_title()
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert any(isinstance(p, Rectangle) and p.get_height() > 0 for p in ax.patches)     # bars, not lines
    assert [line.get_xdata()[0] for line in ax.get_lines()] == [0.607]
