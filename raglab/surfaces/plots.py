"""Charts for the notebooks: one function a chart, each returning its matplotlib Figure."""
from __future__ import annotations

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
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib only when a figure is drawn

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
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib only when a figure is drawn

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
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib only when a figure is drawn

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
