"""raglab eval and raglab bakeoff on the help-center corpus; the winner rule on a hand-made table."""
import json

import pandas as pd
import pytest

from raglab.book.chunking import ChunkSettings
from raglab.evaluation.bakeoff import choose_winner, run_bakeoff
from raglab.surfaces.cli import main

DESIGN_KEYS = {"n_questions", "hit@k", "recall@k", "mrr", "ndcg@10", "answer_correct", "citation_validity",
               "citation_support", "abstention_accuracy", "latency_p50_ms", "latency_p95_ms"}


@pytest.mark.parametrize("retrieval_only", [False, True])
def test_eval_writes_every_score_family_with_intervals(index, tmp_path, capsys, retrieval_only):
    out = tmp_path / "scores.json"
    args = ["eval", "--golden", "evals/helpcenter_golden.jsonl", "--corpus", "helpcenter", "--strategy", "headings",
            "--prefix", "--json", str(out)] + (["--retrieval-only"] if retrieval_only else [])
    assert main(args) == 0
    board = json.loads(out.read_text())
    printed = capsys.readouterr().out
    keys = {"n_questions", "hit@k", "recall@k", "mrr", "ndcg@10"} if retrieval_only else DESIGN_KEYS
    assert keys <= set(board) and board["n_questions"] == 31
    for key in keys - {"n_questions"}:
        v = board[key]
        assert v["ci_low"] <= v["value"] <= v["ci_high"], key
    assert "recall@5" in printed and ("answer_correct" in printed) != retrieval_only
    assert len(board["questions"]) == 31


def test_bakeoff_runs_every_combination_on_the_helpcenter(index):
    chunkers = (ChunkSettings("headings", prefix=True), ChunkSettings("words", 80, 20))
    table, per_question = run_bakeoff("helpcenter", "small", chunkers=chunkers, retrievers=("dense", "bm25", "hybrid"))
    assert len(table) == 6 and set(per_question) == {(c.label(), r) for c in chunkers for r in ("dense", "bm25", "hybrid")}
    assert (table["recall@5_lo"] <= table["recall@5"]).all() and (table["recall@5"] <= table["recall@5_hi"]).all()
    (winner, _), text = choose_winner(table, per_question)
    assert winner == table.sort_values(["recall@5", "mrr"], ascending=False).iloc[0]["chunking"]
    assert "winner:" in text and "paired difference" in text


def test_winner_rule_on_a_hand_made_table():
    table = pd.DataFrame([
        {"chunking": "a", "retriever": "x", "recall@5": 0.9, "recall@5_lo": 0.8, "recall@5_hi": 1.0, "mrr": 0.5, "latency_p50_ms": 9},
        {"chunking": "b", "retriever": "x", "recall@5": 0.9, "recall@5_lo": 0.8, "recall@5_hi": 1.0, "mrr": 0.7, "latency_p50_ms": 9},
        {"chunking": "c", "retriever": "x", "recall@5": 0.2, "recall@5_lo": 0.1, "recall@5_hi": 0.3, "mrr": 0.9, "latency_p50_ms": 1}])
    per_q = {("a", "x"): [1, 1, 0, 1] * 5, ("b", "x"): [1, 1, 0, 1] * 5, ("c", "x"): [0, 0, 0, 1] * 5}
    (winner, text) = choose_winner(table, per_q)
    assert winner == ("b", "x") and "within noise" in text and "spans 0.700" in text
