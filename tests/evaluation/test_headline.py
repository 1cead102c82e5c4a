"""The headline's ceiling and its trained slot, on the small Python docs with a dev/test split made here (the
full docs' headline takes an hour): the ceiling at the scoreboard's own depth is the share of answerable
questions with no evidence in the default's top 5, and never more at a greater depth; a trained
bi-encoder is scored in the default's place, and its paired differences are the per-question ones."""
import json

import numpy as np
import pytest

from raglab.base import config
from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.evaluation import headline
from raglab.experiments.finetune import TrainSettings, train_bi_encoder
from raglab.experiments.mining import mine_pairs

TINY = TrainSettings(pairs=24, batch_size=8, epochs=3, learning_rate=1e-4, max_length=64, cross_max_length=96,
                     warmup=0.0)


@pytest.fixture(scope="module")
def split_golden(tmp_path_factory):
    """The small Python docs' golden set with every other question in the test split."""
    rows = [json.loads(line) for line in (config.PROJECT_ROOT / "evals" / "python_docs_golden.jsonl").read_text().splitlines()
            if line.strip()]
    path = tmp_path_factory.mktemp("golden") / "split.jsonl"
    path.write_text("".join(json.dumps(r | {"split": "test" if i % 2 else "dev"}) + "\n" for i, r in enumerate(rows)))
    return path


@pytest.mark.slow
def test_the_ceiling_and_a_trained_model_beside_the_default(workdir, python_docs, split_golden, monkeypatch):
    # its own seed: test_training expects to train its tiny model first (not cached) in the same session
    trained = train_bi_encoder(mine_pairs(chunk_corpus(python_docs, ChunkSettings("headings", prefix=True)), 24, seed=7),
                               TINY, progress=False)
    monkeypatch.setattr(headline, "CEILING_DEPTH", 5)   # at the scoreboard's own depth, to compare with its recall@5
    report = headline.run_headline("python-docs", "small", split_golden, modes=(), model=trained.model_id)
    default, rows, t = next(iter(report["per_question"])), report["per_question"], report["trained"]
    for split in ("dev", "test"):
        ids = [q for q, v in rows[default].items() if "mrr@10" in v and q in set(_ids(split_golden, split))]
        c = report["ceiling"][split]
        assert (c["depth"], c["answerable"]) == (5, len(ids))
        assert c["missing"] == pytest.approx(np.mean([rows[default][q]["recall@5"] == 0 for q in ids]), abs=1e-4)
        # the trained slot: its paired MRR difference is the mean of the per-question differences
        d = [rows[t["system"]][q]["mrr@10"] - rows[default][q]["mrr@10"] for q in ids]
        assert t["vs_default"][split]["mrr@10"]["diff"] == pytest.approx(np.mean(d), abs=1e-3)
    assert t["training"]["pairs"] == trained.record["pairs"] and "trained bi-encoder dense" in rows
    assert f"paired differences, {trained.model_id}" in headline.format_headline(report)
    summary = headline.summary_for_report(report)
    assert summary["trained"]["model"] == trained.model_id and summary["ceiling"] == report["ceiling"]["test"]


def _ids(path, split: str) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if json.loads(line)["split"] == split]


@pytest.mark.parametrize("golden, dev, test", [
    ("evals/python_docs_full.jsonl", "dev split (the defaults were tuned here)", "test split (the headline)"),
    ("evals/python_docs_golden.jsonl",     # the small profile's threshold was chosen on all 36 questions
     "dev split (the refusal threshold was chosen on every question of this set: in-sample)",
     "test split (in-sample: the refusal threshold was chosen here too)"),
    ("/home/student/golden.jsonl", "dev split (no default was chosen on this set)", "test split (the headline)"),
    ("/home/student/evals/python_docs_golden.jsonl", "dev split (no default was chosen on this set)",
     "test split (the headline)"),      # a student's file of the same name is not the course's
])
def test_each_split_says_what_was_chosen_on_it(golden, dev, test):
    report = {"corpus": "python-docs", "profile": "small", "golden": golden, "date": "today", "machine": "here",
              "questions": {"dev": 1, "test": 1}, "scores": {"dev": {}, "test": {}},
              "vs_baseline": {"dev": {}, "test": {}}, "targets": {}, "latency_ms": {}}
    lines = headline.format_headline(report).splitlines()
    assert dev in lines and test in lines
