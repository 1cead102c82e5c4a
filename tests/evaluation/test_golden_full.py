"""The whole-docs golden set (evals/python_docs_full.jsonl): size, type mix, split rule, and every
quote and absent term checked against the full Python 3.11 docs (see evals/README.md)."""
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from raglab.base import config
from raglab.infra.corpus import load_corpus
from raglab.evaluation.golden import TYPES, validate_golden

GOLDEN = Path(config.PROJECT_ROOT, "evals", "python_docs_full.jsonl")
MINIMUM = {"fact": 45, "identifier": 16, "paraphrase": 16, "multi": 16, "unanswerable": 16}


def split_rule(qid: str) -> str:
    """The split stated in evals/README.md: test when sha256(id) as an integer mod 5 is below 3."""
    return "test" if int(hashlib.sha256(qid.encode("utf-8")).hexdigest(), 16) % 5 < 3 else "dev"


@pytest.fixture(scope="module")
def records():
    """Each line of the golden file as ``(line number, record)``."""
    lines = GOLDEN.read_text(encoding="utf-8").splitlines()
    return [(n, json.loads(line)) for n, line in enumerate(lines, 1) if line.strip()]


@pytest.fixture(scope="module")
def full_docs():
    """Every page of the bundled Python 3.11 docs."""
    return load_corpus("python-docs", "full")


def test_size_and_type_mix(records):
    kinds = Counter(r["type"] for _, r in records)
    assert len(records) >= 110
    assert set(kinds) <= set(TYPES)
    short = {t: (kinds[t], n) for t, n in MINIMUM.items() if kinds[t] < n}
    assert not short, f"too few questions of a type (have, need): {short}"


def test_ids_unique_and_many_pages(records):
    ids = [r["id"] for _, r in records]
    assert len(ids) == len(set(ids))
    pages = {e["doc"] for _, r in records for e in r["evidence"]}
    assert len(pages) >= 60, f"only {len(pages)} distinct pages"


def test_split_follows_the_stated_rule(records):
    wrong = [f"{GOLDEN.name}:{n}: {r['id']} has split {r.get('split')!r}, the rule gives {split_rule(r['id'])!r}"
             for n, r in records if r.get("split") != split_rule(r["id"])]
    assert not wrong, "\n".join(wrong)
    test = [r for _, r in records if r["split"] == "test"]
    assert len(test) >= 60
    for split in ("dev", "test"):
        assert {r["type"] for _, r in records if r["split"] == split} == set(TYPES), f"{split} lacks a type"


def test_evidence_and_absent_terms_by_type(records):
    for n, r in records:
        where = f"{GOLDEN.name}:{n}: {r['id']}"
        if r["type"] == "unanswerable":
            assert r["evidence"] == [], where
            assert r.get("absent"), f"{where}: an unanswerable question needs 'absent' terms"
        else:
            assert r["evidence"] and all(e.get("quote") for e in r["evidence"]), where
            assert r["facts"], f"{where}: no facts"
            assert "absent" not in r, where
        if r["type"] == "multi":
            assert len(r["evidence"]) >= 2, f"{where}: a multi question needs 2+ evidence items"


def test_every_quote_found_and_absent_term_missing(full_docs):
    """validate_golden names each missing quote or present absent term as file:line."""
    questions = validate_golden(GOLDEN, full_docs)
    assert len(questions) >= 110


def test_validate_golden_reports_file_and_line(tmp_path, full_docs):
    bad = tmp_path / "bad.jsonl"
    good = {"id": "a", "type": "fact", "question": "q?", "answer": "x", "facts": ["x"],
            "evidence": [{"doc": "library/math.txt", "quote": "Return the integer square root"}], "split": "dev"}
    rows = [good,
            {**good, "id": "b", "evidence": [{"doc": "library/math.txt", "quote": "no such words in math"}]},
            {"id": "c", "type": "unanswerable", "question": "q?", "answer": "", "facts": [], "evidence": [],
             "absent": ["isqrt"], "split": "val"}]
    bad.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        validate_golden(bad, full_docs)
    msg = str(err.value)
    assert f"{bad}:2: b: evidence[0] quote not found in library/math.txt" in msg
    assert f"{bad}:3: c: absent term 'isqrt' occurs in" in msg
    assert f"{bad}:3: c: field 'split' is 'val'" in msg
    assert ":1:" not in msg
