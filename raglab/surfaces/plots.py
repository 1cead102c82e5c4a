"""Charts for the notebooks: one function a chart, each returning its matplotlib Figure."""
from __future__ import annotations

from typing import Sequence

from raglab.chunking import Chunk


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
        ax.axvline(limit, color="#C44E52", linestyle="--", linewidth=1.5)
        ax.set_title(f"{name}\n{over:.0%} over {limit} tokens", fontsize=10)
        ax.set_xlabel("word-piece tokens")
    axes[0][0].set_ylabel("chunks")
    fig.tight_layout()
    return fig


def size_boxplot(sizes: dict[str, Sequence[int]], unit: str = "words"):
    """Chunk-size distributions side by side (box plot, log scale)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.boxplot(list(sizes.values()), tick_labels=list(sizes.keys()), showfliers=True)
    ax.set_yscale("log")
    ax.set_ylabel(f"{unit} per chunk (log)")
    ax.set_title("Chunk sizes by strategy")
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
    """Evidence strength of answerable and unanswerable questions, with the refusal threshold."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3))
    bins = [i / 40 for i in range(12, 41)]
    ax.hist(answerable, bins=bins, alpha=0.7, label=f"answerable ({len(answerable)})", color="#4C72B0")
    ax.hist(unanswerable, bins=bins, alpha=0.8, label=f"unanswerable ({len(unanswerable)})", color="#C44E52")
    ax.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold:.3f}")
    ax.set_xlabel("evidence strength (top reranked score)")
    ax.set_ylabel("questions")
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
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for i, r in enumerate(retrievers):
        sub = table[table["retriever"] == r].set_index("chunking").loc[chunkings]
        x = np.arange(len(chunkings)) + (i - (len(retrievers) - 1) / 2) * width
        err = [sub[metric] - sub[f"{metric}_lo"], sub[f"{metric}_hi"] - sub[metric]]
        ax.bar(x, sub[metric], width, yerr=err, capsize=3, label=r)
    ax.set_xticks(range(len(chunkings)), chunkings)
    ax.set_ylabel(metric)
    ax.set_ylim(0, 1.05)
    ax.legend(ncol=len(retrievers), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 1.15))
    fig.tight_layout()
    return fig


def score_vs_size(table, metric: str = "recall@5"):
    """Score against mean chunk length in tokens, one line per retriever."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for r, sub in table.groupby("retriever", sort=False):
        sub = sub.sort_values("mean_tokens")
        ax.plot(sub["mean_tokens"], sub[metric], marker="o", label=r)
    for name, sub in table.groupby("chunking", sort=False):  # one label per chunking, under its lowest point
        ax.annotate(name, (sub["mean_tokens"].iloc[0], sub[metric].min()), xytext=(0, -12),
                    textcoords="offset points", fontsize=7, ha="center", alpha=0.7)
    ax.set_xlabel("mean tokens per chunk")
    ax.set_ylabel(metric)
    ax.legend(fontsize=8)
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
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
