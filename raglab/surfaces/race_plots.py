"""Charts of the chunking lab's race (notebook 07_chunking_lab and ``raglab race --plots``): each chunking's
score against its chunk size or its cost, hits by question type, and where each strategy cuts a page."""
from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from raglab.surfaces.plots import _plt


# Axis labels of the cost columns of a chunking race table.
COST_LABELS = {"index_seconds": "index time (s, cold)", "index_mb": "index size (MB)", "chunks": "chunks"}


def _race_points(ax, table, x: str, metric: str, retriever: str, default: str | None = None):
    """Scatter of one retriever's rows of a race table: x against the metric, whiskers from the
    ``_lo``/``_hi`` columns, each point labelled with its chunking, the default in orange."""
    sub = table[table["retriever"] == retriever]
    if sub.empty:
        retrievers = ", ".join(map(str, dict.fromkeys(table["retriever"])))
        raise ValueError(f"no rows for retriever {retriever!r}; retrievers: {retrievers}")
    is_default = sub["chunking"] == default
    for rows, color, marker, label in ((sub[~is_default], "#4C72B0", "o", "chunking"),
                                       (sub[is_default], "#DD8452", "D", f"default: {default}")):
        if len(rows):
            err = [rows[metric] - rows[f"{metric}_lo"], rows[f"{metric}_hi"] - rows[metric]]
            ax.errorbar(rows[x], rows[metric], yerr=err, fmt=marker, color=color, capsize=3, label=label)
    for _, row in sub.sort_values(metric, ascending=False).iterrows():  # right of the point; spread apart later
        ax.annotate(row["chunking"], (row[x], row[metric]), xytext=(5, -3), textcoords="offset points",
                    fontsize=7, color="#333333",
                    bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none", alpha=0.7))
    ax.margins(x=0.08)
    ax.set_ylabel(metric)
    return sub


def _spread_labels(ax, rounds: int = 40):
    """Move the axes' point labels (annotations) down, a few points at a time, until no two of them overlap
    (best effort; call it once the figure's layout is final)."""
    labels = [t for t in ax.texts if hasattr(t, "xyann")]
    ax.figure.canvas.draw()
    for _ in range(rounds):
        moved = False
        boxes = [label.get_window_extent() for label in labels]
        for i, j in ((i, j) for i in range(len(labels)) for j in range(i + 1, len(labels))):
            if boxes[i].overlaps(boxes[j]):
                dx, dy = labels[j].xyann
                labels[j].xyann = (dx, dy - 4)
                boxes[j] = labels[j].get_window_extent()
                moved = True
        if not moved:
            return


def _finish(fig, ax, default):
    """A race chart's last steps: the legend when a default is marked, the layout, labels moved apart."""
    if default is not None:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    _spread_labels(ax)
    return fig


def recall_vs_tokens(table, metric: str = "recall@5", retriever: str = "hybrid", default: str | None = None,
                     limit: int = 256):
    """One retriever's score against mean chunk length in tokens, one point per chunking with its
    95% interval, the default chunking in orange and the embedding model's limit dashed."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    _race_points(ax, table, "mean_tokens", metric, retriever, default)
    ax.axvline(limit, color="#C44E52", linestyle="--", linewidth=1.2)
    ax.text(limit, 0.98, " model limit", transform=ax.get_xaxis_transform(), color="#C44E52", fontsize=8, va="top")
    ax.set_xlabel("mean tokens per chunk")
    ax.set_title(f"{metric} against chunk size ({retriever}): past the dashed line the model truncates", fontsize=10)
    return _finish(fig, ax, default)


def quality_vs_cost(table, metric: str = "recall@5", cost: str = "index_seconds", retriever: str = "hybrid",
                    default: str | None = None):
    """One retriever's score against what its index costs (time, size or chunk count), one point
    per chunking with its 95% interval."""
    if cost not in table.columns:
        raise ValueError(f"no cost column {cost!r} in the table; columns: {', '.join(map(str, table.columns))}")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    _race_points(ax, table, cost, metric, retriever, default)
    ax.set_xlabel(COST_LABELS.get(cost, cost))
    ax.set_title(f"{metric} against {COST_LABELS.get(cost, cost)} ({retriever}): up and left is better", fontsize=10)
    return _finish(fig, ax, default)


def hit_heatmap(per_question, metric: str = "hit@5", retriever: str = "hybrid"):
    """Mean of a per-question metric by chunking (rows) and question type (columns) for one
    retriever, each cell written out, each column headed with its question count."""
    plt = _plt()
    sub = per_question[per_question["retriever"] == retriever]
    if sub.empty:
        raise ValueError(f"no rows for retriever {retriever!r}")
    chunkings = list(dict.fromkeys(sub["chunking"]))
    types = list(dict.fromkeys(sub["type"]))
    grid = sub.groupby(["chunking", "type"])[metric].mean().unstack().reindex(index=chunkings, columns=types)
    counts = sub.groupby(["chunking", "type"]).size().unstack().max()  # the same questions for every chunking
    fig, ax = plt.subplots(figsize=(1.3 * len(types) + 3, 0.42 * len(chunkings) + 1.6))
    im = ax.imshow(grid.to_numpy(dtype=float), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for r, c in ((r, c) for r in range(len(chunkings)) for c in range(len(types))):
        value = grid.iat[r, c]
        if value == value:  # not NaN
            ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=8,
                    color="black" if value > 0.6 else "white")
    ax.xaxis.tick_top()
    ax.set_xticks(range(len(types)), [f"{t} (n={counts[t]})" for t in types], fontsize=8)
    ax.set_yticks(range(len(chunkings)), chunkings, fontsize=8)
    ax.tick_params(length=0)
    ax.set_title(f"{metric} by chunking and question type ({retriever})", fontsize=10)
    fig.colorbar(im, ax=ax, label=metric, fraction=0.04, pad=0.03)
    fig.tight_layout()
    return fig


def cut_points(text: str, layouts: dict[str, list[tuple[int, int]]], headings: Sequence[int] = (),
               max_lines: int = 60):
    """Where every strategy cuts one page: the page's first lines down the left (headings in bold),
    and one column per strategy with a bar from each chunk's first line to its last.

    Neighbouring chunks alternate colour and side of the column; a tick marks each chunk's start.
    Only chunks starting on a shown line are drawn (clipped at the last shown line). In each column
    the bars are one ``vlines`` collection labelled with the strategy.
    """
    plt = _plt()
    lines = text.split("\n")
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    shown = lines[:max_lines]
    last = len(shown) - 1

    def line_of(offset: int) -> int:  # the line a character offset is on
        return bisect_right(starts, offset) - 1

    heading_lines = {line_of(h) for h in headings}
    names = list(layouts)
    long = max((len(n) for n in names), default=0) > 6  # long column titles are rotated
    top = 1.1 if long else 0.4  # inches above the lines, for the column titles
    width, height = 4.6 + 0.5 * len(layouts) + 0.8, 0.16 * len(shown) + top + 0.2
    fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(width, height),
                                      gridspec_kw={"width_ratios": [4.6, 0.5 * len(layouts)], "wspace": 0.02})
    for i, line in enumerate(shown):
        line = line.expandtabs(4)
        line = line if len(line) <= 70 else line[:69] + "…"
        bold = i in heading_lines
        left.text(0, i, line, family="monospace", fontsize=6.5, va="center", fontweight="bold" if bold else "normal",
                  color="#111111" if bold else "#555555")
    left.axis("off")
    colors = ["#4C72B0", "#DD8452"]
    for col, (name, spans) in enumerate(layouts.items()):
        drawn = [(line_of(s), min(line_of(max(e - 1, s)), last)) for s, e in spans if line_of(s) <= last]
        xs = [col + (0.12 if i % 2 else -0.12) for i in range(len(drawn))]
        tops = [a - 0.4 for a, _ in drawn]
        right.vlines(xs, tops, [b + 0.4 for _, b in drawn], colors=[colors[i % 2] for i in range(len(drawn))],
                     linewidth=3, label=name)
        right.hlines(tops, [x - 0.12 for x in xs], [x + 0.12 for x in xs], colors="black", linewidth=1,
                     label=f"_{name} starts")
    for h in sorted(heading_lines):
        if h <= last:
            right.axhline(h - 0.5, color="grey", linestyle=":", linewidth=0.8)
    right.xaxis.tick_top()
    right.set_xticks(range(len(names)), names, fontsize=8, rotation=60 if long else 0, ha="left" if long else "center",
                     rotation_mode="anchor")
    right.set_xlim(-0.5, len(names) - 0.5)
    right.set_ylim(last + 0.5, -0.5)
    right.tick_params(left=False, labelleft=False, length=0)
    for spine in right.spines.values():
        spine.set_visible(False)
    fig.subplots_adjust(left=0.1 / width, right=1 - 0.8 / width, bottom=0.1 / height, top=1 - top / height)
    return fig
