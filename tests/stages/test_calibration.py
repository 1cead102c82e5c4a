"""Refusal on a folder of the user's own (``raglab.infra.calibration``): its threshold comes from the folder,
is recorded in the index manifest, shown by ``raglab corpus info``, and replaced by a golden set's dev split."""
import json

import numpy as np
import pytest

from raglab.infra.calibration import (
    ANSWERED_PERCENTILE,
    UNRELATED_PERCENTILE,
    label_free_threshold,
    own_questions,
    unrelated_questions,
)
from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.corpora import registered


def test_the_rule_against_numpy_percentiles():
    rng = np.random.default_rng(0)
    for _ in range(20):
        own, other = rng.normal(0.6, 0.1, 50), rng.normal(0.2, 0.2, 40)
        expected = max(np.percentile(own, ANSWERED_PERCENTILE), np.percentile(other, UNRELATED_PERCENTILE))
        assert label_free_threshold(list(own), list(other)) == round(float(expected), 4)


def test_own_questions_are_sentences_of_the_folder(helpcenter):
    chunks = chunk_corpus(helpcenter, ChunkSettings("headings", prefix=True))
    questions = own_questions(chunks)
    assert questions == own_questions(chunks)                  # seeded
    text = " ".join(" ".join(c.text.split()) for c in chunks)
    assert len(questions) >= 40 and all(q in text and 6 <= len(q.split()) <= 30 for q in questions)


def test_a_golden_set_about_the_folder_is_not_unrelated(helpcenter):
    every = unrelated_questions()
    without = unrelated_questions({d.id for d in helpcenter})
    assert len(without) < len(every) and not set(without) & {q for q in every if "Parcelo" in q}


def test_only_folders_are_calibrated_from_themselves():
    assert registered("python-docs") and registered("helpcenter") and registered("python-docs-3.12")
    assert not registered("evals/folders/makerspace/pages")


@pytest.mark.slow
def test_a_folder_is_calibrated_once_recorded_and_replaced_by_a_golden_dev_split(tmp_path, monkeypatch, helpcenter):
    from raglab.infra.assemble import build_assistant
    from raglab.evaluation.tuning import tune_threshold
    from raglab.surfaces.cli.corpus import refusal_info

    monkeypatch.setenv("RAGLAB_WORKDIR", str(tmp_path / "work"))
    folder = tmp_path / "shop"
    for d in helpcenter:
        if "premium" not in d.access:
            (folder / d.id).parent.mkdir(parents=True, exist_ok=True)
            (folder / d.id).write_text(d.text, encoding="utf-8")
    assert refusal_info(str(folder), "small")["threshold"] is None
    assistant = build_assistant(str(folder), "small")
    manifest = json.loads((assistant.retriever.index.path / "manifest.json").read_text())
    refusal = manifest["refusal"]
    assert assistant.threshold == refusal["threshold"] and refusal["signal"] == "dense"
    assert refusal["answered"]["n"] >= 40 and refusal["unrelated"]["n"] == 36     # the help center's own set left out
    assert refusal["threshold"] == max(refusal["answered"]["p5"], refusal["unrelated"]["p95"])
    assert refusal_info(str(folder), "small")["threshold"] == refusal["threshold"]
    assert build_assistant(str(folder), "small").threshold == refusal["threshold"]   # read, not recalibrated

    golden = tmp_path / "mine.jsonl"
    rows = [json.loads(x) for x in open("evals/helpcenter_golden.jsonl") if x.strip()]
    public = [r | {"split": "dev"} for r in rows if r.get("access", "public") == "public"]
    golden.write_text("".join(json.dumps(r) + "\n" for r in public), encoding="utf-8")
    result = tune_threshold(str(folder), "small", golden, save=True)
    assert result["registry"] == refusal["threshold"]
    again = build_assistant(str(folder), "small")
    assert again.threshold == result["threshold"]
    assert again.retriever.index.manifest["refusal"]["method"].startswith("golden set")
