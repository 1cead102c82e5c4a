"""Charts for the notebooks: one function a chart, each returning its matplotlib Figure."""
from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from raglab.book.chunking import Chunk


def _plt():
    import matplotlib.pyplot as plt  # lazy: only when a chart is drawn

    return plt


def token_histograms(lengths: dict[str, Sequence[int]], limit: int = 256, bins: int = 40):
    """One histogram of token lengths per chunking, with the model's limit drawn in."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(lengths), figsize=(3.6 * len(lengths), 3.0), sharey=False, squeeze=False)
    for ax, (name, values) in zip(axes[0], lengths.items()):
        over = sum(v > limit for v in values) / max(len(values), 1)
        ax.hist(values, bins=bins, color="#4C72B0")
        ax.axvline(limit, color="#C44E52", linestyle="--", linewidth=1.5, label=f"model limit ({limit})")
        ax.set_title(f"{name}\n{over:.0%} over {limit} tokens", fontsize=10)
        ax.set_xlabel("word-piece tokens")
    axes[0][0].set_ylabel("chunks")
    axes[0][0].legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def size_boxplot(sizes: dict[str, Sequence[int]], unit: str = "words"):
    """Chunk-size distributions, one horizontal box per strategy (log scale), so long strategy
    names sit on the y axis without overlapping."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 0.55 * len(sizes) + 1.2))
    ax.boxplot(list(sizes.values()), tick_labels=list(sizes.keys()), showfliers=True, orientation="horizontal")
    ax.invert_yaxis()  # the first strategy on top
    ax.set_xscale("log")
    low, high = min(min(v) for v in sizes.values()), max(max(v) for v in sizes.values())
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000) if low / 2 <= t <= high * 2]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_formatter(_plt().NullFormatter())
    ax.set_xlabel(f"{unit} per chunk (log scale)")
    ax.set_ylabel("chunking strategy")
    ax.set_title("Chunk sizes by strategy\n(box: the middle half of the chunks; line: the median; circles: outliers)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def chunk_map(doc_length: int, layouts: dict[str, list[Chunk]], headings: Sequence[int] = ()):
    """Where each strategy's chunks begin and end along one document (one lane per strategy).

    Overlapping chunks alternate between two rows of a lane; dotted lines mark headings.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(10, 0.9 + 0.8 * len(layouts)))
    colors = ["#4C72B0", "#DD8452"]
    for lane, (name, chunks) in enumerate(layouts.items()):
        y = len(layouts) - 1 - lane
        for i, c in enumerate(chunks):
            ax.barh(y + (0.18 if i % 2 else -0.18), c.end - c.start, left=c.start, height=0.32,
                    color=colors[i % 2], edgecolor="white", linewidth=0.5)
    for h in headings:
        ax.axvline(h, color="grey", linestyle=":", linewidth=0.8)
    ax.set_yticks(range(len(layouts)), list(reversed(list(layouts))))
    ax.set_xlim(0, doc_length)
    ax.set_xlabel("character offset in the document (dotted: section headings)")
    fig.tight_layout()
    return fig


def evidence_plot(answerable: Sequence[float], unanswerable: Sequence[float], threshold: float):
    """Evidence strength of answerable and unanswerable questions (a histogram: whole questions per bin), with
    the refusal threshold as a dashed line."""
    plt = _plt()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 3))
    bins = [i / 40 for i in range(12, 41)]
    ax.hist(answerable, bins=bins, alpha=0.7, label=f"answerable ({len(answerable)})", color="#4C72B0")
    ax.hist(unanswerable, bins=bins, alpha=0.8, label=f"unanswerable ({len(unanswerable)})", color="#C44E52")
    ax.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold:.3f}")
    ax.set_xlabel("evidence strength (top reranked score)")
    ax.set_ylabel("questions (count)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Unanswerable questions should fall left of the threshold, answerable ones right of it", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def bakeoff_bars(table, metric: str = "recall@5"):
    """Grouped bars: one group per chunking, one bar per retriever, whiskers = 95% interval."""
    plt = _plt()
    import numpy as np

    chunkings = list(dict.fromkeys(table["chunking"]))
    retrievers = list(dict.fromkeys(table["retriever"]))
    width = 0.8 / len(retrievers)
    fig, ax = plt.subplots(figsize=(9, 3.8))
    for i, r in enumerate(retrievers):
        sub = table[table["retriever"] == r].set_index("chunking").loc[chunkings]
        x = np.arange(len(chunkings)) + (i - (len(retrievers) - 1) / 2) * width
        err = [sub[metric] - sub[f"{metric}_lo"], sub[f"{metric}_hi"] - sub[metric]]
        ax.bar(x, sub[metric], width, yerr=err, capsize=3, label=r)
    ax.set_xticks(range(len(chunkings)), [_wrap(c, 16) for c in chunkings])
    ax.set_xlabel("chunking")
    ax.set_ylabel(f"{metric} (share of evidence found)")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{metric} by chunking and retriever, with 95% intervals: overlapping whiskers are ties", fontsize=10)
    ax.legend(title="retriever", fontsize=8, title_fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def _wrap(label: str, width: int) -> str:
    """A tick label broken on spaces into lines of at most ``width`` characters.

    >>> _wrap("headings 150/30 +prefix", 16)
    'headings 150/30\\n+prefix'
    """
    import textwrap

    return "\n".join(textwrap.wrap(label, width)) or label


def score_vs_size(table, metric: str = "recall@5"):
    """One point per (chunking, retriever), no line between chunkings: the chunkings on the x axis in order of
    their mean chunk length in tokens (written under each name), one marker and colour per retriever."""
    plt = _plt()
    import numpy as np

    sizes = table.groupby("chunking", sort=False)["mean_tokens"].first().sort_values()
    retrievers = list(dict.fromkeys(table["retriever"]))
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for i, (r, marker) in enumerate(zip(retrievers, "osD^v<>p")):
        sub = table[table["retriever"] == r].set_index("chunking").reindex(sizes.index)
        x = np.arange(len(sizes)) + (i - (len(retrievers) - 1) / 2) * 0.1
        ax.plot(x, sub[metric], linestyle="none", marker=marker, label=r)
    ax.set_xticks(range(len(sizes)), [f"{_wrap(c, 16)}\n({t:.0f} tokens)" for c, t in sizes.items()], fontsize=8)
    ax.set_xlabel("chunking, shortest chunks first (mean tokens per chunk)")
    ax.set_ylabel(f"{metric} (share of evidence found)")
    ax.set_title(f"{metric} against chunk size: each retriever, for each chunking", fontsize=10)
    ax.legend(title="retriever", fontsize=8, title_fontsize=8)
    fig.tight_layout()
    return fig


def scores_chart(frame, title: str = "Scores with 95% bootstrap intervals"):
    """Horizontal bars of scores in [0, 1] with their interval whiskers."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(frame) + 1))
    y = range(len(frame))
    err = [frame["value"] - frame["ci_low"], frame["ci_high"] - frame["value"]]
    ax.barh(list(y), frame["value"], xerr=err, capsize=3, color="#4C72B0")
    ax.set_yticks(list(y), list(frame.index))
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("score (0 to 1; a share of the questions, or a mean over them)")
    ax.set_ylabel("score")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


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
    if default is not None:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    _spread_labels(ax)
    return fig


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
    if default is not None:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    _spread_labels(ax)
    return fig


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


# ---------------------------------------------------------------- milestones 2, 3 and 5

# How a search mode is named in a legend.
MODE_LABELS = {"dense": "dense", "bm25": "BM25", "hybrid": "hybrid (RRF)", "rerank": "reranked"}

def hits_by_type(table, modes: Sequence[str] = ("dense", "bm25"), k: int = 5):
    """Per question type, how many questions there are and how many each retriever finds in its top k.

    ``table`` is ``rl.per_question``'s frame (a ``type`` column and ``"<mode> recall@<k>"`` columns);
    a question counts as found when any of its evidence is in the top k.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"type": ["fact", "fact", "identifier"], "dense recall@5": [1.0, 0.0, 0.0],
    ...                   "bm25 recall@5": [0.0, 0.5, 1.0]})
    >>> hits_by_type(t).to_dict("index")
    {'fact': {'questions': 2, 'dense': 1, 'bm25': 1}, 'identifier': {'questions': 1, 'dense': 0, 'bm25': 1}}
    """
    import pandas as pd

    types = list(dict.fromkeys(table["type"]))
    rows = {t: {"questions": int((table["type"] == t).sum()),
                **{m: int(((table["type"] == t) & (table[f"{m} recall@{k}"] > 0)).sum()) for m in modes}}
            for t in types}
    return pd.DataFrame.from_dict(rows, orient="index")


def hits_by_type_bars(counts, k: int = 5):
    """Grouped bars from ``hits_by_type``: one group per question type, one bar per retriever (questions
    with evidence in the top k), and a hollow bar behind each group for the questions of that type."""
    plt = _plt()
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    modes = [c for c in counts.columns if c != "questions"]
    x = np.arange(len(counts))
    width = 0.8 / len(modes)
    fig, ax = plt.subplots(figsize=(1.6 * len(counts) + 2.5, 3.4))
    ax.bar(x, counts["questions"], 0.9, facecolor="none", edgecolor="#777777", linestyle="--",
           label="questions of this type")
    for i, (m, color) in enumerate(zip(modes, ["#4C72B0", "#DD8452", "#55A868", "#C44E52"])):
        bars = ax.bar(x + (i - (len(modes) - 1) / 2) * width, counts[m], width * 0.95, color=color,
                      label=MODE_LABELS.get(m, m))
        ax.bar_label(bars, fontsize=8, padding=1)
    ax.set_xticks(x, [f"{t}\n({n} questions)" for t, n in zip(counts.index, counts["questions"])], fontsize=9)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, counts["questions"].max() * 1.15)
    ax.set_xlabel("question type (golden set)")
    ax.set_ylabel(f"questions with evidence in the top {k}")
    ax.set_title(f"Which retriever finds the evidence in its top {k}, by question type", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def rank_strip(table, modes: Sequence[str] = ("dense", "bm25", "hybrid", "rerank"), depth: int = 10):
    """Per question (one row each, labelled with its id and type), the rank of the first chunk holding
    the evidence under each step: one marker per step, ranks 1 to ``depth`` left to right and
    "not in top <depth>" as its own column on the right. Rows are sorted by the last step's rank."""
    plt = _plt()
    import numpy as np

    miss = depth + 2  # the column for "not in the top depth", set apart from the ranks
    ranks = {m: table[f"{m} rank"].where(table[f"{m} rank"] <= depth).fillna(miss).to_numpy() for m in modes}
    order = np.lexsort([ranks[m] for m in modes])  # the last step's rank first, then the one before
    fig, ax = plt.subplots(figsize=(8, 0.26 * len(table) + 1.6))
    styles = zip(["#4C72B0", "#DD8452", "#55A868", "#C44E52"], ["o", "s", "D", "*"], [5, 5, 5, 9])
    for i, (m, (color, marker, size)) in enumerate(zip(modes, styles)):
        offset = (i - (len(modes) - 1) / 2) * 0.16
        ax.plot(ranks[m][order] + offset, np.arange(len(table)), marker, color=color, markersize=size,
                linestyle="none", label=MODE_LABELS.get(m, m), alpha=0.9)
    labels = [f"{i} ({t})" for i, t in zip(table.index[order], table["type"].iloc[order])]
    ax.set_yticks(range(len(table)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.axvspan(depth + 1, miss + 1, color="#eeeeee", zorder=0)
    ax.set_xticks(list(range(1, depth + 1)) + [miss], [str(r) for r in range(1, depth + 1)] + [f"not in\ntop {depth}"])
    ax.set_xlim(0.4, miss + 0.8)
    ax.set_xlabel("rank of the first chunk holding the evidence (1 = first)")
    ax.set_ylabel("question (id and type)")
    ax.set_title(f"Where each step ranks the evidence, {len(table)} questions", fontsize=10)
    ax.grid(axis="y", color="#eeeeee", linewidth=0.6)
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.04), ncol=len(modes), frameon=False)
    fig.tight_layout()
    return fig


def access_mix(counts, k: int = 5):
    """What two users retrieve for the same queries: per query, one stacked bar per user, split by the
    access group of the chunks in that user's top k.

    ``counts`` has one row per (query, user) and one column per access group (chunk counts),
    a two-level index ``(query, user)``."""
    plt = _plt()
    from matplotlib.ticker import MaxNLocator

    groups = list(counts.columns)
    queries = list(dict.fromkeys(counts.index.get_level_values(0)))
    users = list(dict.fromkeys(counts.index.get_level_values(1)))
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(queries) * (len(users) + 1) + 1.4))
    y, ticks, labels = 0.9, [], []
    colors = dict(zip(groups, ["#9e9e9e", "#1565c0", "#2e7d32", "#c62828"]))
    for q in queries:
        ax.text(0, y - 0.55, f"“{q}”", fontsize=8.5, fontweight="bold", va="bottom")
        for u in users:
            left = 0
            for g in groups:
                n = int(counts.loc[(q, u), g])
                ax.barh(y, n, left=left, height=0.8, color=colors[g], label=f"{g} chunks" if (q, u) == (queries[0], users[0]) else None)
                if n:
                    ax.text(left + n / 2, y, str(n), ha="center", va="center", color="white", fontsize=8)
                left += n
            ticks.append(y)
            labels.append(u)
            y += 1
        y += 0.9
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0, k)
    ax.set_xlabel(f"chunks in the user's top {k}, by access group")
    ax.set_ylim(y - 0.5, -0.35)
    ax.set_ylabel("user, under each query")
    ax.set_title("The same queries, two users: what each one retrieves", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=len(groups), frameon=False)
    fig.tight_layout()
    return fig
