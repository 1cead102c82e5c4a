"""Chunk size vs the model's limit, on the help-center corpus (20 pages) in a private working folder:
the share over the limit against an independent recount with transformers' tokenizer, recall against
the per-question rows, the verdict and the plot's axes."""
import numpy as np
import pytest

from raglab.base import config
from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.corpus import load_corpus
from raglab.evaluation.golden import load_golden, user_for
from raglab.evaluation.metrics import evidence_recall
from raglab.evaluation.statistics import bootstrap_ci
from raglab.experiments.chunksize import (
    format_chunksize,
    plot_chunksize,
    run_chunksize_experiment,
    scaled,
)
from raglab.infra.index import load_index

SIZES = (scaled("words", 150), ChunkSettings("headings", prefix=True))   # the second is the `index` fixture's


@pytest.fixture(scope="module")
def result(index, embedder):
    return run_chunksize_experiment("helpcenter", "small", sizes=SIZES, embedder=embedder)


def test_settings_and_overlap_ratio():
    assert scaled("words", 150) == ChunkSettings("words", 150, 30)
    assert [scaled("words", n).overlap for n in (100, 200, 300)] == [20, 40, 60]
    assert scaled("chars", 500) == ChunkSettings("chars", 500, 80)


def test_share_over_limit_matches_transformers_tokenizer(result):
    from transformers import AutoTokenizer

    from raglab.infra.packaged_models import minilm_path

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    docs = load_corpus("helpcenter", "small")
    for settings, row in zip(SIZES, result["settings"]):
        chunks = chunk_corpus(docs, settings)
        lengths = np.array([len(tok(c.indexed_text, truncation=False)["input_ids"]) for c in chunks])
        assert row["setting"] == settings.label() and row["chunks"] == len(chunks)
        assert row["over_limit"] == int((lengths > 256).sum())
        assert row["over_limit_share"] == round(float((lengths > 256).mean()), 4)
        assert row["mean_tokens"] == round(float(lengths.mean()), 1)
        assert row["p95_tokens"] == round(float(np.percentile(lengths, 95)), 1)
    assert result["settings"][0]["over_limit"] > 0   # 150-word windows do exceed the limit here


def test_recall_comes_from_the_per_question_rows(result, embedder):
    from raglab.book.retrieve import Retriever

    golden = [q for q in load_golden(config.PROJECT_ROOT / "evals" / "helpcenter_golden.jsonl") if q.type != "unanswerable"]
    assert result["question_ids"] == [q.id for q in golden] and result["n_questions"] == len(golden)
    for settings, row in zip(SIZES, result["settings"]):
        per_q = result["per_question"][row["setting"]]
        assert set(per_q) == set(result["modes"]) == {"dense", "hybrid"}
        for mode, values in per_q.items():
            assert len(values) == len(golden)
            assert row["recall"][mode] == bootstrap_ci(values)
            assert row["recall"][mode]["value"] == round(sum(values) / len(values), 4)
            # evidence found means its page is there: page-level hit@k is never below the share with some recall
            assert 1 >= row["hit"][mode] >= round(sum(v > 0 for v in values) / len(values), 4)
        index = load_index("helpcenter", "small", settings)   # the index the run built, searched again
        retriever = Retriever(index, embedder)
        for q, value in list(zip(golden, per_q["hybrid"]))[:8]:
            hits = retriever.search(q.question, "hybrid", 10, user_for(q))
            assert evidence_recall([index.chunks[index.row_of[h.id]] for h in hits], q, 5) == value


def test_verdict_and_table(result):
    default = result["settings"][0]
    assert f"{default['over_limit_share']:.0%} of its {default['chunks']} chunks are over 256 tokens" in result["verdict"]
    assert "truncates" in result["verdict"] and "hybrid recall@5 spans" in result["verdict"]
    text = format_chunksize(result)
    assert all(r["setting"] in text for r in result["settings"]) and result["verdict"] in text
    assert result["embedded"] >= 0 and result["seconds"] >= 0


def test_plot_has_the_expected_axes(result):
    import matplotlib

    matplotlib.use("Agg")
    fig = plot_chunksize(result)
    left, right = fig.axes
    assert "256" in left.get_xlabel() and [t.get_text() for t in left.get_yticklabels()] == [r["setting"] for r in result["settings"]]
    assert [round(p.get_width(), 4) for p in left.patches] == [r["over_limit_share"] for r in result["settings"]]
    assert right.get_xlabel() == "mean tokens per chunk" and right.get_ylabel() == "recall@5"
    assert any(list(line.get_xdata()) == [256, 256] for line in right.lines)
    assert len(right.containers) == len(result["modes"])
    for container, mode in zip(right.containers, result["modes"]):
        xs, ys = container.lines[0].get_data()
        assert list(xs) == [r["mean_tokens"] for r in result["settings"]]
        assert list(ys) == [r["recall"][mode]["value"] for r in result["settings"]]
    import matplotlib.pyplot as plt

    plt.close(fig)
