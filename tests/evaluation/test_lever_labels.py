"""The lab's configuration codes reach a reader only as plain labels (the appendix notebook's table)."""
import re

from raglab.evaluation import full_lab


def test_every_lab_configuration_has_a_plain_label_and_no_code_shows():
    rows = full_lab.lab_levers()
    assert rows and {r["name"] for r in rows} == set(full_lab.LEVER_LABELS)
    frame = full_lab.lever_frame(rows)
    assert len(frame) == len(rows) and frame.index.is_unique
    shown = " ".join(frame.index) + " " + " ".join(frame["kind"])
    for name in full_lab.LEVER_LABELS:
        assert name not in shown
    assert not re.search(r"\b[LCRB]\d|cv5|pool\d", shown)
    assert set(frame["kind"]) <= {"reference", "one retriever", "one change", "combination", "reranker", "150-word windows"}


def test_the_lab_question_counts_are_read_from_its_record():
    counts = full_lab.lab_questions()
    assert 0 < counts["answerable"] < counts["dev"]
