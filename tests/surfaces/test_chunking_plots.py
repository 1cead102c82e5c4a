"""The chunking-race and bake-off charts: what they draw, checked on small hand-made tables (no pixels)."""
import numpy as np
import pandas as pd
import pytest

from raglab.surfaces.plots import bakeoff_bars, score_vs_size
from raglab.surfaces.race_plots import cut_points, hit_heatmap, quality_vs_cost, recall_vs_tokens

RACE = pd.DataFrame([
    # chunking, retriever, mean_tokens, recall@5, lo, hi, index_seconds, index_mb, chunks
    ("words-200", "bm25", 180.0, 0.62, 0.55, 0.69, 4.0, 1.5, 900),
    ("words-200", "hybrid", 180.0, 0.74, 0.67, 0.80, 21.0, 6.1, 900),
    ("headings", "bm25", 140.0, 0.66, 0.58, 0.73, 4.5, 1.8, 1200),
    ("headings", "hybrid", 140.0, 0.81, 0.75, 0.87, 25.0, 7.9, 1200),
    ("chars-2000", "bm25", 410.0, 0.58, 0.50, 0.65, 3.1, 1.1, 520),
    ("chars-2000", "hybrid", 410.0, 0.69, 0.61, 0.76, 14.0, 3.9, 520),
], columns=["chunking", "retriever", "mean_tokens", "recall@5", "recall@5_lo", "recall@5_hi",
            "index_seconds", "index_mb", "chunks"])



def points(ax):
    """{x: (y, low, high)} of every error-bar point on the axes (rounded to 6 decimals)."""
    out = {}
    for container in ax.containers:
        xs, ys = container.lines[0].get_data()
        (bars,) = container.lines[2]
        for x, y, seg in zip(xs, ys, bars.get_segments()):
            out[round(float(x), 6)] = tuple(round(float(v), 6) for v in (y, seg[0][1], seg[1][1]))
    return out


def expected(table, retriever, x):
    sub = table[table["retriever"] == retriever]
    return {round(float(r[x]), 6): tuple(round(float(r[c]), 6) for c in ("recall@5", "recall@5_lo", "recall@5_hi"))
            for _, r in sub.iterrows()}


def test_recall_vs_tokens_has_one_point_per_chunking_with_its_interval(close):
    fig = recall_vs_tokens(RACE, retriever="hybrid", default="headings")
    close(fig)
    ax = fig.axes[0]
    assert points(ax) == expected(RACE, "hybrid", "mean_tokens")
    assert sorted(t.get_text() for t in ax.texts if t.get_text() in set(RACE["chunking"])) == sorted(set(RACE["chunking"]))
    assert ax.get_xlabel() == "mean tokens per chunk" and ax.get_ylabel() == "recall@5" and "hybrid" in ax.get_title()
    assert any(list(line.get_xdata()) == [256, 256] and line.get_linestyle() == "--" for line in ax.lines)
    assert any("model limit" in t.get_text() for t in ax.texts)
    # the default is its own series, in another colour and marker
    default, = [c for c in ax.containers if c.get_label() == "default: headings"]
    others, = [c for c in ax.containers if c.get_label() != "default: headings"]
    assert list(default.lines[0].get_xdata()) == [140.0]
    assert default.lines[0].get_marker() != others.lines[0].get_marker()
    assert default.lines[0].get_color() != others.lines[0].get_color()


def test_recall_vs_tokens_without_a_default_draws_one_series(close):
    fig = recall_vs_tokens(RACE, retriever="bm25", limit=300)
    close(fig)
    ax = fig.axes[0]
    assert len(ax.containers) == 1
    assert points(ax) == expected(RACE, "bm25", "mean_tokens")
    assert any(list(line.get_xdata()) == [300, 300] for line in ax.lines)


@pytest.mark.parametrize("cost, label", [("index_seconds", "index time (s, cold)"), ("index_mb", "index size (MB)"),
                                         ("chunks", "chunks")])
def test_quality_vs_cost_plots_the_cost_column(close, cost, label):
    fig = quality_vs_cost(RACE, cost=cost, retriever="hybrid")
    close(fig)
    ax = fig.axes[0]
    assert points(ax) == expected(RACE, "hybrid", cost)
    assert ax.get_xlabel() == label and ax.get_ylabel() == "recall@5"


def test_quality_vs_cost_rejects_an_unknown_column():
    with pytest.raises(ValueError, match="index_gb") as err:
        quality_vs_cost(RACE, cost="index_gb")
    assert "index_seconds" in str(err.value)  # and lists the columns there are


def test_an_unknown_retriever_is_an_error():
    with pytest.raises(ValueError, match="colbert"):
        recall_vs_tokens(RACE, retriever="colbert")


def per_question():
    """3 chunkings x 2 retrievers x 7 questions of 3 types (fact 3, identifier 2, multi 2), made-up hits."""
    rng = np.random.default_rng(7)
    types = ["fact", "identifier", "fact", "multi", "identifier", "fact", "multi"]
    rows = [(c, r, q, t, int(rng.random() < 0.6)) for c in ["words-200", "headings", "chars-2000"]
            for r in ["bm25", "hybrid"] for q, t in enumerate(types)]
    return pd.DataFrame(rows, columns=["chunking", "retriever", "question", "type", "hit@5"])


def test_hit_heatmap_shows_the_mean_by_chunking_and_type(close):
    frame = per_question()
    fig = hit_heatmap(frame, retriever="hybrid")
    close(fig)
    ax = fig.axes[0]
    sub = frame[frame["retriever"] == "hybrid"]
    want = sub.groupby(["chunking", "type"])["hit@5"].mean().unstack()
    want = want.loc[["words-200", "headings", "chars-2000"], ["fact", "identifier", "multi"]]  # first appearance
    (image,) = ax.images
    np.testing.assert_allclose(np.asarray(image.get_array()), want.to_numpy())
    assert image.get_cmap().name == "viridis" and image.get_clim() == (0, 1)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fact (n=3)", "identifier (n=2)", "multi (n=2)"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["words-200", "headings", "chars-2000"]
    cells = sorted(t.get_text() for t in ax.texts)
    assert cells == sorted(f"{v:.2f}" for v in want.to_numpy().ravel())
    assert len(fig.axes) == 2  # the colour bar


PAGE = "\n".join([
    "Installing",                                     # 0  heading
    "==========",                                     # 1
    "Run the installer and follow the steps.",        # 2
    "It asks for a folder.",                          # 3
    "",                                               # 4
    "Upgrading",                                      # 5  heading
    "=========",                                      # 6
    "Download the new version. " + "x" * 90,          # 7  longer than 70 characters
    "Keep your settings.",                            # 8
    "Restart afterwards.",                            # 9
    "Check the version number.",                      # 10
    "Done.",                                          # 11
])


def offset(line: int, column: int = 0) -> int:
    return sum(len(s) + 1 for s in PAGE.split("\n")[:line]) + column


HEADINGS = [offset(0), offset(5)]
LAYOUTS = {
    "headings": [(offset(0), offset(4)), (offset(5), len(PAGE))],
    "words 8/2": [(offset(0), offset(3, 5)), (offset(3, 0), offset(7, 10)), (offset(7, 5), offset(9, 3)),
                  (offset(9, 0), offset(11, 5))],
}


def bars(fig, name):
    """(x, top, bottom) of each bar in the strategy's column."""
    right = fig.axes[1]
    (collection,) = [c for c in right.collections if c.get_label() == name]
    return [(seg[0][0], seg[0][1], seg[1][1]) for seg in collection.get_segments()]


def test_cut_points_draws_one_bar_per_chunk_from_its_first_line_to_its_last(close):
    fig = cut_points(PAGE, LAYOUTS, HEADINGS, max_lines=12)
    close(fig)
    assert [round(top + 0.4) for _, top, _ in bars(fig, "words 8/2")] == [0, 3, 7, 9]
    assert [round(bottom - 0.4) for _, _, bottom in bars(fig, "words 8/2")] == [3, 7, 9, 11]
    assert [round(bottom - 0.4) for _, _, bottom in bars(fig, "headings")] == [3, 11]  # end offset is exclusive
    xs = [x for x, _, _ in bars(fig, "words 8/2")]
    assert xs[0] == xs[2] != xs[1] == xs[3]  # neighbours side by side, not on top of each other
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == list(LAYOUTS)
    assert fig.get_size_inches()[1] == pytest.approx(0.16 * 12 + 1.3)


def test_cut_points_shows_only_chunks_starting_on_shown_lines(close):
    fig = cut_points(PAGE, LAYOUTS, HEADINGS, max_lines=8)
    close(fig)
    assert [round(top + 0.4) for _, top, _ in bars(fig, "words 8/2")] == [0, 3, 7]  # the chunk from line 9 is left out
    assert max(bottom for _, _, bottom in bars(fig, "words 8/2")) == pytest.approx(7.4)  # clipped at the last line
    assert len(bars(fig, "headings")) == 2
    assert fig.get_size_inches()[1] < 0.16 * 12 + 1.3


def test_cut_points_writes_the_lines_with_headings_in_bold(close):
    fig = cut_points(PAGE, LAYOUTS, HEADINGS, max_lines=12)
    close(fig)
    texts = fig.axes[0].texts
    assert len(texts) == 12
    assert [i for i, t in enumerate(texts) if t.get_fontweight() == "bold"] == [0, 5]
    assert texts[2].get_text() == "Run the installer and follow the steps."
    assert len(texts[7].get_text()) <= 70 and texts[7].get_text().startswith("Download the new version.")
    assert all(t.get_fontfamily() == ["monospace"] for t in texts)


# ---------------------------------------------------------------- the bake-off

TABLE = pd.DataFrame([
    (c, r, tokens, score, score - 0.1, score + 0.1)
    for c, tokens in (("words 150/30", 282.0), ("headings 150/30 +prefix", 243.0), ("chars 500/80", 108.0))
    for r, score in (("dense", 0.6), ("bm25", 0.55), ("hybrid", 0.7))
], columns=["chunking", "retriever", "mean_tokens", "recall@5", "recall@5_lo", "recall@5_hi"])


def test_bakeoff_bars_has_a_bar_per_row_wrapped_labels_and_labelled_axes(close):
    fig = bakeoff_bars(TABLE)
    close(fig)
    ax = fig.axes[0]
    assert len(ax.patches) == len(TABLE)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["words 150/30", "headings 150/30\n+prefix", "chars 500/80"]
    assert ax.get_xlabel() == "chunking" and ax.get_ylabel().startswith("recall@5") and ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["dense", "bm25", "hybrid"]


def test_score_vs_size_draws_points_not_lines_with_chunkings_by_size(close):
    fig = score_vs_size(TABLE)
    close(fig)
    ax = fig.axes[0]
    assert all(line.get_linestyle() == "None" for line in ax.lines) and len(ax.lines) == 3
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["chars 500/80\n(108 tokens)", "headings 150/30\n+prefix\n(243 tokens)", "words 150/30\n(282 tokens)"]
    assert "mean tokens" in ax.get_xlabel() and ax.get_ylabel().startswith("recall@5") and ax.get_title()


def test_race_labels_do_not_overlap(close):
    crowded = pd.DataFrame([(f"chunking {i}", "hybrid", 200.0 + i, 0.7 + i / 1000, 0.6, 0.8) for i in range(6)],
                           columns=TABLE.columns)
    fig = recall_vs_tokens(crowded, retriever="hybrid")
    close(fig)
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in fig.axes[0].texts if t.get_text().startswith("chunking")]
    assert len(boxes) == 6
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
