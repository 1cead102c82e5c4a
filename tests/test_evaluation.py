"""Golden sets validate against the corpus; metrics follow the course's worked example."""
import json
from pathlib import Path

import pytest

from raglab import config
from raglab.chunking import Chunk
from raglab.evaluation import load_golden, recall_at_k, reciprocal_rank

EVALS = Path(config.PROJECT_ROOT, "evals")


def _chunk(cid, doc, text):
    return Chunk(cid, doc, (doc,), 0, len(text), text, text, ("public",), "words")


def test_course_example_recall_and_reciprocal_rank():
    from raglab.evaluation import Question

    run = [_chunk("x", "x.txt", "nothing"), _chunk("a", "a.txt", "alpha fact"),
           _chunk("y", "y.txt", "nothing"), _chunk("b", "b.txt", "beta  fact")]
    q = Question("q", "multi", "?", "", (), ({"doc": "a.txt", "quote": "alpha fact"}, {"doc": "b.txt", "quote": "beta fact"}))
    assert recall_at_k(run, q, 3) == 0.5
    assert recall_at_k(run, q, 4) == 1.0
    assert reciprocal_rank(run, q) == 0.5


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
