"""Golden sets validate against the corpus; metrics follow the course's worked example."""
import json
from pathlib import Path

import numpy as np
import pytest

from raglab.base import config
from raglab.book.chunking import Chunk
from raglab.evaluation.golden import load_golden
from raglab.evaluation.metrics import (
    doc_hit,
    evidence_recall,
    first_relevant_rr,
    hit,
    ndcg,
    recall,
    reciprocal_rank,
)
from raglab.evaluation.statistics import bootstrap_ci, paired_test

EVALS = Path(config.PROJECT_ROOT, "evals")


def _chunk(cid, doc, text):
    return Chunk(cid, doc, (doc,), 0, len(text), text, text, ("public",), "words")


def test_course_example_recall_and_reciprocal_rank():
    """The course's example: retrieved [x, a, y, b], relevant {a, b}: recall@3 = 1/2, reciprocal rank = 1/2."""
    assert recall(["x", "a", "y", "b"], {"a", "b"}, 3) == 0.5
    assert reciprocal_rank(["x", "a", "y", "b"], {"a", "b"}) == 0.5
    from raglab.evaluation.golden import Question

    run = [_chunk("x", "x.txt", "nothing"), _chunk("a", "a.txt", "alpha fact"),
           _chunk("y", "y.txt", "nothing"), _chunk("b", "b.txt", "beta  fact")]
    q = Question("q", "multi", "?", "", (), ({"doc": "a.txt", "quote": "alpha fact"}, {"doc": "b.txt", "quote": "beta fact"}))
    assert evidence_recall(run, q, 3) == 0.5 and evidence_recall(run, q, 4) == 1.0
    assert first_relevant_rr(run, q) == 0.5


def _random_runs(seed=3, n_queries=60, n_docs=40):
    rng = np.random.default_rng(seed)
    runs, qrels = {}, {}
    for qi in range(n_queries):
        docs = [f"d{i}" for i in rng.permutation(n_docs)[: rng.integers(5, 30)]]
        runs[f"q{qi}"] = docs
        rel = {f"d{i}" for i in range(n_docs) if rng.random() < 0.15}
        qrels[f"q{qi}"] = rel or {"d0"}
    return runs, qrels


def test_metrics_equal_pytrec_eval_on_random_runs():
    import pytrec_eval

    runs, qrels = _random_runs()
    trec_run = {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in runs.items()}
    trec_qrels = {q: {d: 1 for d in rel} for q, rel in qrels.items()}
    ref = pytrec_eval.RelevanceEvaluator(trec_qrels, {"recall_5", "recall_10", "recip_rank", "ndcg_cut_10"}).evaluate(trec_run)
    for q, ranked in runs.items():
        assert recall(ranked, qrels[q], 5) == pytest.approx(ref[q]["recall_5"], rel=1e-9)
        assert recall(ranked, qrels[q], 10) == pytest.approx(ref[q]["recall_10"], rel=1e-9)
        assert reciprocal_rank(ranked, qrels[q]) == pytest.approx(ref[q]["recip_rank"], rel=1e-9)
        assert ndcg(ranked, qrels[q], 10) == pytest.approx(ref[q]["ndcg_cut_10"], rel=1e-9, abs=1e-12)


@pytest.mark.slow
def test_hit_rate_and_mrr_equal_ranx_on_random_runs():
    from ranx import Qrels, Run, evaluate

    runs, qrels = _random_runs(seed=5)
    run = Run({q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in runs.items()})
    rels = Qrels({q: {d: 1 for d in rel} for q, rel in qrels.items()})
    ref = evaluate(rels, run, ["hit_rate@5", "mrr@10", "ndcg@10"], return_mean=False)
    order = list(rels.keys())  # ranx reports per query in its own key order
    ours = {"hit_rate@5": [hit(runs[q], qrels[q], 5) for q in order],
            "mrr@10": [reciprocal_rank(runs[q], qrels[q], 10) for q in order],
            "ndcg@10": [ndcg(runs[q], qrels[q], 10) for q in order]}
    for name, values in ours.items():
        assert np.allclose(values, ref[name], rtol=1e-9, atol=1e-12), name


def _evidence_runs(seed=11, n_questions=50):
    """Random chunk rankings over 12 documents and questions with 1 to 3 evidence items, each item a
    (document, quote) pair. Each chunk holds at most one quote, so a ranked list of chunks maps to a
    ranked list of evidence items (first support of each item) and to one of documents (first
    appearance of each): the relevance judgments a TREC tool understands."""
    from raglab.evaluation.golden import Question

    rng = np.random.default_rng(seed)
    cases = []
    for qi in range(n_questions):
        n_items = int(rng.integers(1, 4))
        docs = [f"doc{int(d)}.txt" for d in rng.choice(12, size=n_items)]
        evidence = tuple({"doc": d, "quote": f"fact {qi}-{i}"} for i, d in enumerate(docs))
        chunks = []
        for pos in range(int(rng.integers(3, 15))):
            doc = f"doc{int(rng.integers(0, 12))}.txt"
            holds = [e for e in evidence if e["doc"] == doc and rng.random() < 0.5]
            text = f"filler {pos} " + (holds[0]["quote"] if holds else "nothing here")
            chunks.append(_chunk(f"{qi}-{pos}", doc, text))
        cases.append((Question(f"q{qi}", "multi", "?", "", (), evidence), chunks))
    return cases


def _as_trec(question, chunks):
    """The chunk ranking as (item run, item qrels, document run, document qrels); a repeat or a
    non-supporting chunk becomes a distinct junk id, so ranks are kept."""
    from raglab.evaluation.metrics import supports

    items, item_run, doc_run, seen_docs = {}, [], [], set()
    for pos, c in enumerate(chunks):
        found = next((n for n, e in enumerate(question.evidence) if supports(c, e)), None)
        item = f"item{found}" if found is not None and f"item{found}" not in items else f"junk{pos}"
        items.setdefault(item, pos)
        item_run.append(item)
        doc_run.append(c.doc if c.doc not in seen_docs else f"junkdoc{pos}")
        seen_docs.add(c.doc)
    item_qrels = {f"item{n}": 1 for n in range(len(question.evidence))}
    doc_qrels = {e["doc"]: 1 for e in question.evidence}
    return item_run, item_qrels, doc_run, doc_qrels


def test_scoreboard_evidence_recall_and_doc_hit_equal_pytrec_eval():
    """The very functions the scoreboard calls (``evidence_recall``, ``doc_hit``) against pytrec_eval,
    with evidence items and evidence documents as the relevance judgments."""
    import pytrec_eval

    for question, chunks in _evidence_runs():
        item_run, item_qrels, doc_run, doc_qrels = _as_trec(question, chunks)
        scored = lambda ids: {"q": {d: float(len(ids) - i) for i, d in enumerate(ids)}}  # noqa: E731
        items = pytrec_eval.RelevanceEvaluator({"q": item_qrels}, {"recall_3", "recall_5"}).evaluate(scored(item_run))["q"]
        docs = pytrec_eval.RelevanceEvaluator({"q": doc_qrels}, {"success_1", "success_5"}).evaluate(scored(doc_run))["q"]
        assert evidence_recall(chunks, question, 5) == pytest.approx(items["recall_5"], abs=1e-12)
        assert evidence_recall(chunks, question, 3) == pytest.approx(items["recall_3"], abs=1e-12)
        assert doc_hit(chunks, question, 5) == docs["success_5"]
        assert doc_hit(chunks, question, 1) == docs["success_1"]


@pytest.mark.slow
def test_scoreboard_doc_hit_and_mrr_equal_ranx():
    """``doc_hit`` (documents as judgments) and the scoreboard's MRR@10 (``reciprocal_rank`` of the
    first supporting chunk, ``relevant_ids``) against ranx."""
    from ranx import Qrels, Run, evaluate

    from raglab.evaluation.metrics import relevant_ids

    cases = _evidence_runs(seed=12)
    doc_runs, doc_qrels, chunk_runs, chunk_qrels = {}, {}, {}, {}
    for question, chunks in cases:
        _, _, doc_run, dq = _as_trec(question, chunks)
        doc_runs[question.id] = {d: float(len(doc_run) - i) for i, d in enumerate(doc_run)}
        doc_qrels[question.id] = dq
        chunk_runs[question.id] = {c.id: float(len(chunks) - i) for i, c in enumerate(chunks)}
        chunk_qrels[question.id] = {cid: 1 for cid in relevant_ids(chunks, question)} or {"none": 1}
    hits = evaluate(Qrels(doc_qrels), Run(doc_runs), "hit_rate@5", return_mean=False)
    mrr = evaluate(Qrels(chunk_qrels), Run(chunk_runs), "mrr@10", return_mean=False)
    order = list(Qrels(doc_qrels).keys())
    by_id = {q.id: (q, c) for q, c in cases}
    assert np.allclose([doc_hit(by_id[q][1], by_id[q][0], 5) for q in order], hits)
    order = list(Qrels(chunk_qrels).keys())
    assert np.allclose([reciprocal_rank([c.id for c in by_id[q][1]], relevant_ids(by_id[q][1], by_id[q][0]), 10)
                        for q in order], mrr)


def test_bootstrap_interval_contains_the_mean_and_shrinks_with_more_data():
    rng = np.random.default_rng(0)
    small, large = rng.random(30), rng.random(3000)
    a, b = bootstrap_ci(small), bootstrap_ci(large)
    assert a["ci_low"] <= a["value"] <= a["ci_high"]
    assert (b["ci_high"] - b["ci_low"]) < (a["ci_high"] - a["ci_low"]) / 5
    assert bootstrap_ci([1.0] * 10) == {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}


def test_paired_test_separates_a_real_gain_from_noise():
    rng = np.random.default_rng(1)
    a = rng.random(40)
    assert paired_test(a, a + 0.2)["significant"]
    noise = paired_test(a, a + rng.normal(0, 0.05, 40))
    assert not noise["significant"] and noise["ci_low"] <= 0 <= noise["ci_high"]


def test_significant_is_the_interval_rule_alone():
    """One decision rule: significant exactly when the paired 95% bootstrap interval excludes 0, whatever
    the p-value says."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(4, 30))
        a, b = rng.random(n), rng.random(n) + rng.normal(0.1, 0.2)
        t = paired_test(a, b, reps=2000, seed=int(rng.integers(1000)))
        assert t["significant"] == (t["ci_low"] > 0 or t["ci_high"] < 0)
    touches = paired_test([0] * 6, [1, 0, 0, 0, 0, 0.5])       # interval [0.000, 0.583]: touching 0 is not excluding it
    assert touches["ci_low"] == 0 and not touches["significant"]


@pytest.mark.parametrize("name,corpus", [("python_docs_golden.jsonl", "python_docs"), ("helpcenter_golden.jsonl", "helpcenter")])
def test_golden_sets_validate_against_their_corpus(name, corpus, request):
    docs = request.getfixturevalue(corpus)
    questions = load_golden(EVALS / name, docs)
    assert len(questions) >= 20
    types = {q.type for q in questions}
    assert {"fact", "multi", "identifier", "paraphrase", "unanswerable"} <= types


def test_golden_loader_names_file_line_and_field(tmp_path, python_docs):
    bad = tmp_path / "g.jsonl"
    good = {"id": "1", "type": "fact", "question": "q?", "answer": "a", "facts": [],
            "evidence": [{"doc": "library/json.txt", "quote": "JSON (JavaScript Object Notation)"}]}
    cases = [({**good, "type": "trivia"}, "g.jsonl:2: field 'type'"),
             ({**good, "question": ""}, "g.jsonl:2: field 'question'"),
             ({**good, "evidence": [{"doc": "nope.txt"}]}, "g.jsonl:2: evidence.0. document 'nope.txt'"),
             ({**good, "evidence": [{"doc": "library/json.txt", "quote": "not in the page at all"}]}, "g.jsonl:2: evidence.0. quote not found")]
    for record, message in cases:
        bad.write_text(json.dumps({**good, "id": "0"}) + "\n" + json.dumps(record) + "\n")
        with pytest.raises(ValueError, match=message):
            load_golden(bad, python_docs)


def test_a_difference_of_the_minimum_detectable_size_is_found_four_times_in_five():
    """The MDE's promise, checked by simulation: paired per-question differences with the spread the
    MDE was computed from and a true mean of the MDE are called significant by a two-sided 5% test
    (scipy's one-sample t-test, an independent implementation) in about 80% of 2,000 draws; a true
    mean of half the MDE far less often."""
    from scipy.stats import ttest_1samp

    from raglab.evaluation.statistics import minimum_detectable_difference

    rng = np.random.default_rng(7)
    n, sd = 230, 0.45
    d = rng.normal(0, 1, n)
    mde = minimum_detectable_difference((d - d.mean()) / d.std(ddof=1) * sd)    # observed spread exactly sd
    found = [ttest_1samp(rng.normal(mde, sd, n), 0).pvalue < 0.05 for _ in range(2000)]
    half = [ttest_1samp(rng.normal(mde / 2, sd, n), 0).pvalue < 0.05 for _ in range(2000)]
    assert 0.72 < np.mean(found) < 0.88 and np.mean(half) < 0.4
