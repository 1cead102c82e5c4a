"""The long-context baseline: packing against an independent BM25 ranking and an independent token count,
and the experiment's aggregates recomputed from its rows.

The experiment runs on the shared working folder (the cached index and embedding cache) with its trace
in a temporary folder; the extractive generator needs no server.
"""
import math

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from raglab.book.bm25 import tokenize
from raglab.book.documents import make_document
from raglab.evaluation.golden import load_golden
from raglab.evaluation.metrics import facts_present
from raglab.experiments.longcontext import format_longcontext, run_longcontext_experiment
from raglab.experiments.packing import as_source, default_budget, pack_documents, packed_text, rank_documents
from raglab.experiments.tokens import count_message_tokens, count_tokens
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.guards.guard import Guard
from raglab.book.prompt import Source, build_messages

pytestmark = pytest.mark.slow   # a model, a server, PostgreSQL or many subprocess builds


class LuceneOkapi(BM25Okapi):
    """rank_bm25's Okapi BM25 with Lucene's idf (the reference scorer, independent of raglab.book.bm25)."""

    def _calc_idf(self, nd):
        for word, n in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5))


def reference_order(question, docs):
    """Documents with a positive reference score, best first, ties in corpus order."""
    okapi = LuceneOkapi([tokenize(f"{d.title}\n{d.text}") for d in docs], k1=1.5, b=0.75)
    scores = okapi.get_scores(tokenize(question))
    return [docs[i] for i in sorted(range(len(docs)), key=lambda i: (-scores[i], i)) if scores[i] > 0]


SENT = "The {w} module handles {w} files, and {w} paths are joined with care. "
HAND = [
    make_document("json.md", "# JSON\n\n" + "json.dumps escapes non-ASCII characters unless ensure_ascii is false. " * 6),
    make_document("csv.md", "# CSV\n\n" + "Open the file with newline='' before passing it to csv.reader. " * 10),
    make_document("paths.md", "# Paths\n\n" + SENT.format(w="path") * 30),
    make_document("glob.md", "# Glob\n\n" + "glob does not match files that start with a dot. " * 4 + "The path pattern. "),
    make_document("heap.md", "# Heaps\n\n" + "heapq.heappop returns the smallest item of the heap. " * 8),
    make_document("tiny.md", "# Tiny\n\nA path."),
    make_document("venv.md", "# venv\n\n" + "python -m venv .venv creates a virtual environment in a path. " * 3),
    make_document("secret.md", "---\naccess: [premium]\n---\n# Premium paths\n\nThe premium path file PRM-7 answer.",
                  access=("premium",)),
]
PUBLIC_DOCS = [d for d in HAND if d.access == ("public",)]
QUESTIONS = ["How are path files joined?", "Does json.dumps escape non-ASCII?", "Which path does glob skip?",
             "How do I create a venv in a path?", "heapq smallest item"]


# ---------------------------------------------------------------- ranking and order

@pytest.mark.parametrize("question", QUESTIONS)
def test_ranking_matches_an_independent_bm25(question):
    ours = [d.id for d, s in rank_documents(question, PUBLIC_DOCS) if s > 0]
    assert ours == [d.id for d in reference_order(question, PUBLIC_DOCS)]


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_large_budget_packs_every_matching_page_whole_in_reference_order(question):
    packed, info = pack_documents(question, PUBLIC_DOCS, budget_tokens=100_000)
    assert [d.id for d in packed] == [d.id for d in reference_order(question, PUBLIC_DOCS)]
    assert not info["truncated"] and info["skipped"] == []
    originals = {d.id: d.text for d in PUBLIC_DOCS}
    assert all(d.text == originals[d.id] for d in packed)


@pytest.mark.parametrize("budget", [120, 200, 320, 500, 800])
@pytest.mark.parametrize("question", QUESTIONS)
def test_packing_respects_the_budget_and_follows_the_greedy_reference(question, budget):
    packed, info = pack_documents(question, PUBLIC_DOCS, budget_tokens=budget)
    text = packed_text(packed)
    assert count_tokens(text) <= budget and info["tokens"] == count_tokens(text)
    order = reference_order(question, PUBLIC_DOCS)
    if count_tokens(packed_text(order[:1])) > budget:           # the labelled truncation case
        assert info["truncated"] and info["truncated_doc"] == order[0].id and len(packed) <= 1
        if packed:
            assert order[0].text.startswith(packed[0].text) and len(packed[0].text) < len(order[0].text)
            assert packed[0].meta["original_chars"] == len(order[0].text) == info["original_chars"]
        return
    expected = []                                               # whole pages, greedily, in the reference order
    for doc in order:
        if count_tokens(packed_text(expected + [doc])) <= budget:
            expected.append(doc)
    assert [d.id for d in packed] == [d.id for d in expected]
    assert all(d.text == o.text for d, o in zip(packed, expected)) and not info["truncated"]


def test_a_page_that_does_not_fit_is_skipped_and_a_smaller_one_taken():
    question = "How are path files joined?"
    order = reference_order(question, PUBLIC_DOCS)
    assert order[0].id == "paths.md"
    first = count_tokens(packed_text(order[:1]))
    packed, info = pack_documents(question, PUBLIC_DOCS, budget_tokens=first + 40)
    ids = [d.id for d in packed]
    assert ids[0] == "paths.md" and len(ids) >= 2
    assert info["skipped"], "a larger page ranked between the packed ones must be reported as skipped"
    assert all(order.index(next(d for d in order if d.id == s)) < order.index(packed[-1]) for s in info["skipped"])


def test_when_not_even_the_top_page_fits_it_is_truncated_and_labelled():
    packed, info = pack_documents("How are path files joined?", PUBLIC_DOCS, budget_tokens=150)
    assert len(packed) == 1 and info["truncated"] and info["truncated_doc"] == "paths.md"
    original = next(d for d in PUBLIC_DOCS if d.id == "paths.md")
    kept = packed[0].text
    assert original.text.startswith(kept) and len(kept) < len(original.text)
    assert original.text[len(kept)].isspace(), "the cut falls on a word end"
    assert count_tokens(packed_text(packed)) <= 150 and info["kept_chars"] == len(packed[0].text)


def test_pages_a_user_may_not_read_are_never_packed():
    for question in ["premium path file answer", "How are path files joined?"]:
        packed, _ = pack_documents(question, HAND, budget_tokens=100_000)
        assert "secret.md" not in [d.id for d in packed]
        assert "PRM-7" not in packed_text(packed)
    packed, _ = pack_documents("premium path file answer", HAND, budget_tokens=100_000, user=("premium",))
    assert packed[0].id == "secret.md"


def test_default_budget_leaves_room_for_instructions_and_answer():
    q = "Does json.dumps escape non-ASCII characters by default?"
    budget = default_budget(q)
    empty = count_message_tokens(build_messages(q, []))
    assert budget == 4096 - 300 - empty - 8


def test_python_docs_pages_pack_within_the_model_window(python_docs):
    for q in ["Does json.dumps escape non-ASCII characters by default?", "Will glob.glob('*.gif') match .card.gif?"]:
        packed, info = pack_documents(q, python_docs)
        sources = [as_source(n, d) for n, d in enumerate(packed, 1)]
        assert count_message_tokens(build_messages(q, sources, visible=Guard().visible)) + 300 <= 4096
        assert count_tokens(packed_text(packed)) <= info["budget_tokens"]
        whole = {d.id: d.text for d in python_docs}
        for i, d in enumerate(packed):
            assert d.text == whole[d.id] or (i == 0 and info["truncated"] and whole[d.id].startswith(d.text))


# ---------------------------------------------------------------- the generator

def test_a_sentence_cap_of_24_is_the_stock_generator(python_docs):
    from raglab.book.chunking import ChunkSettings
    from raglab.infra.embedder import Embedder
    from raglab.infra.assemble import get_index

    embedder = Embedder()
    index = get_index("python-docs", "small", ChunkSettings("words"), embedder)
    stock, capped = ExtractiveGenerator(embedder), ExtractiveGenerator(embedder, sentence_cap=24)
    long_chunk = max(index.chunks, key=lambda c: c.text.count(". "))
    for q, ids in [("Does json.dumps escape non-ASCII characters by default?", range(5)),
                   ("What is the time complexity of bisect.insort()?", range(40, 45))]:
        sources = [Source(n, index.chunks[i]) for n, i in enumerate(ids, 1)]
        assert stock.generate(q, sources).text == capped.generate(q, sources).text
    sources = [Source(1, long_chunk)]
    assert stock.generate("What does this say?", sources).text == capped.generate("What does this say?", sources).text


# ---------------------------------------------------------------- the experiment

@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    trace = tmp_path_factory.mktemp("lc") / "longcontext.jsonl"
    return run_longcontext_experiment("python-docs", "small", generator="extractive", n=12, trace_path=trace, reps=500)


def test_experiment_aggregates_equal_recomputation_from_rows(experiment):
    r = experiment
    rows = r["rows"]
    assert r["n_questions"] == len(rows) == 12
    assert {row["type"] for row in rows} >= {"fact", "unanswerable"}
    for arm in ("retrieval", "longcontext"):
        a = r["arms"][arm]
        vals = [row[arm] for row in rows]
        assert a["answer_correct"]["value"] == pytest.approx(np.mean([v["correct"] for v in vals]), abs=1e-4)
        assert a["prompt_tokens"]["value"] == pytest.approx(np.mean([v["prompt_tokens"] for v in vals]), abs=1e-4)
        assert a["sent_tokens"]["value"] == pytest.approx(np.mean([v["sent_tokens"] for v in vals]), abs=1e-4)
        lat = [v["latency_ms"] for v in vals]
        assert a["latency_p50_ms"]["value"] == pytest.approx(np.percentile(lat, 50), abs=1e-3)
        assert a["latency_p95_ms"]["value"] == pytest.approx(np.percentile(lat, 95), abs=1e-3)
        for key in ("answer_correct", "prompt_tokens", "latency_p50_ms"):
            assert a[key]["ci_low"] <= a[key]["value"] <= a[key]["ci_high"]
        assert a["model_calls"] == sum(v["model_called"] for v in vals)
    diff = np.mean([row["longcontext"]["correct"] - row["retrieval"]["correct"] for row in rows])
    assert r["paired_correct"]["diff"] == pytest.approx(diff, abs=1e-4)
    gated = np.mean([row["longcontext_gated_correct"] for row in rows])
    assert r["arms"]["longcontext_gated"]["answer_correct"]["value"] == pytest.approx(gated, abs=1e-4)
    ratio = np.mean([row["longcontext"]["prompt_tokens"] for row in rows]) / np.mean(
        [row["retrieval"]["prompt_tokens"] for row in rows])
    assert r["token_ratio"] == pytest.approx(ratio, abs=0.01)
    assert r["arms"]["longcontext"]["truncated"]["value"] == pytest.approx(
        np.mean([row["longcontext"]["truncated"] for row in rows]), abs=1e-4)


def test_experiment_rows_are_consistent_with_the_scoring_and_the_packer(experiment, python_docs):
    golden = {q.id: q for q in load_golden("evals/python_docs_golden.jsonl")}
    for row in experiment["rows"]:
        q = golden[row["id"]]
        for arm in ("retrieval", "longcontext"):
            v = row[arm]
            expected = float(v["refused"]) if q.type == "unanswerable" else float(
                not v["refused"] and facts_present(v["answer"], q.facts))
            assert v["correct"] == expected
            assert v["sent_tokens"] == (v["prompt_tokens"] if v["model_called"] else 0)
        lc = row["longcontext"]
        packed, info = pack_documents(q.question, python_docs)      # deterministic: the same pages again
        assert [d.id for d in packed] == lc["docs"] == lc["sources"] and info["truncated"] == lc["truncated"]
        sources = [as_source(n, d) for n, d in enumerate(packed, 1)]
        assert lc["prompt_tokens"] == count_message_tokens(build_messages(q.question, sources, visible=Guard().visible))
        assert lc["prompt_tokens"] + 300 <= 4096 and lc["fits_window"]
        assert lc["context_tokens"] == count_tokens(packed_text(packed)) <= lc["budget_tokens"]
        if row["retrieval"]["reason"] == "weak-evidence":
            assert row["longcontext_gated_correct"] == float(q.type == "unanswerable")
        else:
            assert row["longcontext_gated_correct"] == lc["correct"]


def test_experiment_report_and_verdict_use_the_numbers(experiment):
    text = format_longcontext(experiment)
    assert "retrieval vs long context" in text and "paired answer_correct" in text
    v = experiment["verdict"]
    assert f"{experiment['token_ratio']:.1f}x" in v
    assert f"{experiment['arms']['longcontext']['prompt_tokens']['value']:.0f}" in v
    assert experiment["corpus_stats"]["tokens"] > experiment["corpus_stats"]["median_budget_tokens"]
    assert "budget" in v and any(w in v for w in ("wins", "no measurable difference"))
    only = sum(row["longcontext"]["correct"] > row["retrieval"]["correct"] for row in experiment["rows"])
    assert f"Long context alone was right on {only} question(s)" in v
