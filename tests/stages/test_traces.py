"""Traces (raglab/infra/traces.py and Assistant._trace): owner-only files, rotation at a size limit, the failure
report across rotated files, and answers that never fail because a trace cannot be written."""
import json
import logging
import os
import stat

import pytest

from raglab.infra import traces
from raglab.book.assistant import Assistant
from raglab.base.config import PROJECT_ROOT
from raglab.evaluation.golden import load_golden
from raglab.evaluation.scoreboard import failure_cases
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.guards.guard import Guard
from raglab.infra.traces import Tracer
from raglab.guards.detector import default_detector

HC_GOLDEN = PROJECT_ROOT / "evals" / "helpcenter_golden.jsonl"


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_trace_is_created_owner_only_without_a_chmod(tmp_path, monkeypatch):
    """Even with umask 0 (a plain open() would give 0666) and chmod unavailable, the file is born 0600."""
    def refuse(*a, **k):
        raise AssertionError("chmod after creation")

    monkeypatch.setattr(os, "chmod", refuse)
    monkeypatch.setattr(os, "fchmod", refuse)
    old = os.umask(0)
    try:
        path = tmp_path / "traces" / "asks.jsonl"
        traces.append(path, {"question": "q", "prompt": "restricted text"})
    finally:
        os.umask(old)
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    assert json.loads(path.read_text()) == {"question": "q", "prompt": "restricted text"}


def test_a_file_left_world_readable_is_narrowed(tmp_path):
    path = tmp_path / "asks.jsonl"
    path.write_text("")
    path.chmod(0o644)
    traces.append(path, {"question": "q"})
    assert _mode(path) == 0o600


def test_traces_rotate_at_the_size_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_TRACE_MAX_BYTES", "200")
    monkeypatch.setenv("RAGLAB_TRACE_KEEP", "2")
    path = tmp_path / "asks.jsonl"
    records = [{"question": f"question {i}", "pad": "x" * 40} for i in range(20)]   # 78-79 bytes a line: 2 a file
    assert {len(json.dumps(r)) + 1 for r in records} == {78, 79}
    for r in records:
        traces.append(path, r)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["asks.jsonl", "asks.jsonl.1", "asks.jsonl.2"]
    for p in tmp_path.iterdir():
        assert p.stat().st_size <= 200 and _mode(p) == 0o600
    assert traces.files(path) == [tmp_path / "asks.jsonl.2", tmp_path / "asks.jsonl.1", path]
    kept = traces.read(path)
    assert kept == records[-6:]                                # the newest, in order: 2 + 2 + 2 lines


def test_trace_settings_are_checked(monkeypatch):
    monkeypatch.setenv("RAGLAB_TRACE_MAX_BYTES", "big")
    with pytest.raises(ValueError, match="RAGLAB_TRACE_MAX_BYTES"):
        traces.max_bytes()
    monkeypatch.setenv("RAGLAB_TRACE_KEEP", "0")
    with pytest.raises(ValueError, match="RAGLAB_TRACE_KEEP"):
        traces.keep()
    monkeypatch.delenv("RAGLAB_TRACE_MAX_BYTES")
    monkeypatch.delenv("RAGLAB_TRACE_KEEP")
    assert (traces.max_bytes(), traces.keep()) == (traces.DEFAULT_MAX_BYTES, traces.DEFAULT_KEEP)


def test_the_failure_report_reads_rotated_traces(tmp_path, monkeypatch):
    questions = [q for q in load_golden(HC_GOLDEN)][:6]
    board = {"golden": str(HC_GOLDEN), "failures": {"retrieval": [q.id for q in questions]},
             "questions": [{"id": q.id, "recall": 0.0, "rr": 0.0, "reason": None} for q in questions]}
    monkeypatch.setenv("RAGLAB_TRACE_MAX_BYTES", "300")
    path = tmp_path / "asks.jsonl"
    for i, q in enumerate(questions):
        traces.append(path, {"question": q.question, "evidence": 0.1 * i, "retrieved": [{"id": f"doc#{i}"}],
                             "answer": f"answer {i}", "pad": "x" * 120})
    assert len(traces.files(path)) > 2                         # most of them were rotated away
    cases = failure_cases(board, path, n=6)
    assert [c["traced"] for c in cases] == [True] * 6
    assert [c["answer"] for c in cases] == [f"answer {i}" for i in range(6)]


def test_an_unwritable_trace_never_fails_the_answer(retriever, embedder, tmp_path, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the traces folder should be")
    a = Assistant(retriever, ExtractiveGenerator(embedder), threshold=0.669, guard=Guard(default_detector(embedder)),
                  trace=Tracer(blocker / "asks.jsonl"))
    with caplog.at_level(logging.WARNING, logger="raglab.traces"):
        answers = [a.ask("How many days do I have to return an item?") for _ in range(3)]
    assert all(not ans.refused and ans.citations for ans in answers)
    warned = [r for r in caplog.records if "cannot write the trace" in r.getMessage()]
    assert len(warned) == 1 and str(blocker) in warned[0].getMessage()


def _append_many(path, who, n):
    for i in range(n):
        traces.append(path, {"who": who, "i": i, "pad": "x" * 200})


def test_processes_sharing_a_trace_lose_and_tear_no_line(tmp_path, monkeypatch):
    """raglab serve --workers: processes append to one trace and rotate it; every line is whole and kept."""
    import multiprocessing

    monkeypatch.setenv("RAGLAB_TRACE_MAX_BYTES", "20000")
    monkeypatch.setenv("RAGLAB_TRACE_KEEP", "50")
    path = tmp_path / "asks.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(path, w, 300)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    lines = [json.loads(line) for f in traces.files(path) for line in f.read_text().splitlines()]
    assert sorted((r["who"], r["i"]) for r in lines) == [(w, i) for w in range(3) for i in range(300)]
    assert len(traces.files(path)) > 3 and all(f.stat().st_size <= 20000 for f in traces.files(path))
