"""The instructor's rubric: it passes on the project's own artifacts, and each broken copy fails
the criterion it breaks, for the reason it was broken, and no other."""
import json
import shutil

import pytest

from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.course import artifacts
from raglab.course.criteria import CRITERIA, Artifacts, no_leaks
from raglab.course.rubric import _guard, check, run_check
from raglab.surfaces.cli import main


@pytest.fixture
def copy(project_artifacts, tmp_path):
    dest = tmp_path / "artifacts"
    shutil.copytree(project_artifacts, dest)
    return dest


def verdicts(where):
    return {r.criterion: r for r in check(where)}


def only_failure(where, criterion_fn):
    """The one failing criterion (broken copies must break exactly one), and its reason."""
    name = next(c for _, c, fn, _nb, _st in CRITERIA if fn is criterion_fn)
    failed = [r for r in check(where) if not r.passed]
    assert [r.criterion for r in failed] == [name], [(r.criterion, r.why) for r in failed]
    return failed[0].why


def edit_jsonl(path, fn):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in fn(rows)))


def edit_results(where, section, fn):
    results = artifacts.load_results(where)
    fn(results[section])
    artifacts.save_json(artifacts.RESULTS, results, where)


def test_the_projects_own_artifacts_pass(project_artifacts, capsys):
    results = check(project_artifacts)
    assert len(results) == len(CRITERIA)
    assert all(r.passed for r in results), [(r.criterion, r.why) for r in results if not r.passed]
    assert main(["check", str(project_artifacts)]) == 0
    out = capsys.readouterr().out
    assert out.count("| PASS |") == len(CRITERIA) and f"{len(CRITERIA)} of {len(CRITERIA)} criteria pass" in out
    assert (project_artifacts / "rubric.md").read_text().count("PASS") == len(CRITERIA)


def test_a_chunk_without_a_source_fails(copy):
    from raglab.course.criteria import chunks_have_ids

    def drop(rows):
        rows[7]["doc"] = ""               # a chunk of your chunker's
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", drop)
    assert "m1_chunks.jsonl:8: chunk without a source" in only_failure(copy, chunks_have_ids)


def test_a_duplicate_chunk_id_fails(copy):
    from raglab.course.criteria import chunks_have_ids

    def dup(rows):
        rows[1]["id"] = rows[0]["id"]
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", dup)
    assert "appears twice" in only_failure(copy, chunks_have_ids)


def test_a_chunker_that_drops_a_pages_tail_fails(copy):
    from raglab.course.criteria import chunks_have_ids

    def drop_tail(rows):
        last = max(n for n, r in enumerate(rows) if r["doc"] == "library/json.txt" and r["chunking"] == "yours 150/30")
        r = rows[last]
        r["end"] = r["start"] + len(r["text"]) // 2
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", drop_tail)
    why = only_failure(copy, chunks_have_ids)
    assert "yours 150/30:" in why and "words of the pages are in no chunk (first on library/json.txt)" in why


@pytest.mark.parametrize("size,reason", [(10, "fragments too small"), (150, "at most 10% may be cut")])
def test_a_window_that_fragments_or_overflows_fails(copy, python_docs, size, reason):
    from raglab.course.criteria import size_fits

    chunks = chunk_corpus(python_docs, ChunkSettings("words", size, size // 5))
    rows = artifacts.load_jsonl("m1_chunks.jsonl", copy)
    artifacts.save_chunks({f"yours {size}/{size // 5}": chunks}, python_docs, where=copy)
    edit_jsonl(copy / "m1_chunks.jsonl", lambda new: rows + [r for r in new if r["chunking"] != "yours 150/30"])
    edit_results(copy, "stages", lambda st: st["chunk size"].update(value=size))
    assert reason in only_failure(copy, size_fits)


@pytest.mark.parametrize("by,why", [("raglab", "your `chunk_words` is not written yet"),
                                    ("copy", "`chunk_words` calls raglab's `word_spans`")])
def test_a_stage_raglab_made_fails_every_criterion_that_reads_it_and_no_other(copy, by, why):
    edit_results(copy, "stages", lambda st: st["chunker"].update(by=by, why=why))
    failed = [r for r in check(copy) if not r.passed]
    reads = [c for _, c, _fn, _nb, stages in CRITERIA if "chunker" in stages]
    assert [r.criterion for r in failed] == reads and len(reads) == 2
    assert all(f"the stage 'chunker' is not yours: {why}" == r.why for r in failed)


def test_artifacts_without_stage_records_fail_every_criterion_over_a_stage(copy):
    results = artifacts.load_results(copy)
    del results["stages"]
    artifacts.save_json(artifacts.RESULTS, results, copy)
    verdicts = check(copy)
    assert all(not r.passed and "no stage of your pipeline was recorded" in r.why for r in verdicts if r.stages)
    assert all(r.stages for r in verdicts)             # every criterion reads some stage of the student's


def test_too_few_questions_in_the_fused_top_20_fail(copy):
    from raglab.course.criteria import fused_top20

    def lose(m2):                  # three questions keep the evidence in the fused top 20, the rest lose it
        for n, r in enumerate(m2["questions"]):
            r["hybrid rank"] = 1 if n < 3 else None
    edit_results(copy, "m2", lose)
    assert only_failure(copy, fused_top20).startswith("3 of")


def test_no_question_only_dense_gets_right_fails(copy):
    from raglab.course.criteria import keyword_and_vector_wins

    def same(m2):
        for r in m2["questions"]:
            r["dense recall@5"] = min(r["dense recall@5"], r["bm25 recall@5"])
    edit_results(copy, "m2", same)
    assert "only dense: none" in only_failure(copy, keyword_and_vector_wins)


def test_a_fusion_that_loses_the_evidence_fails(copy):
    from raglab.course.criteria import ranked_first

    def lose(m3):
        rows = m3["configs"]["words 150/30"]
        for r in rows[: len(rows) // 2 + 1]:
            r["hybrid rank"] = None
    edit_results(copy, "m3", lose)
    assert "loses the evidence for most questions with words 150/30" in only_failure(copy, ranked_first)


def test_misses_not_looked_at_fail(copy):
    from raglab.course.criteria import ranked_first

    edit_results(copy, "m3", lambda m3: m3.update(misses_shown=[]))
    assert "not looked at" in only_failure(copy, ranked_first)


def test_a_citation_that_was_not_retrieved_fails(copy):
    from raglab.course.criteria import valid_citations

    def forge(rows):
        r = next(r for r in rows if r["kind"] == "answer" and not r["refused"])
        r["citations"][0]["id"] = "library/nowhere.txt#1"
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", forge)
    assert "library/nowhere.txt#1" in only_failure(copy, valid_citations)


def test_an_invented_id_let_through_fails(copy):
    from raglab.course.criteria import invented_id_caught

    def let_through(rows):
        r = next(r for r in rows if r["kind"] == "invented-id")
        r.update(refused=False, reason=None, invalid_citations=[])
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", let_through)
    assert "was let through" in only_failure(copy, invented_id_caught)


def test_an_answered_out_of_corpus_question_fails(copy):
    from raglab.course.criteria import out_of_corpus_refused

    def answer(rows):
        r = next(r for r in rows if r["kind"] == "out-of-corpus")
        r.update(refused=False, answer="Use zoneinfo.ZoneInfo [1].")
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", answer)
    assert "not refused" in only_failure(copy, out_of_corpus_refused)


def test_a_recall_that_counts_past_k_fails(copy):
    """A metric with an off-by-one (counting the k+1-th chunk) shows as questions where the student's number
    and the course's definition disagree; the reference is the course's formula, computed by hand here."""
    from raglab.course.criteria import your_metrics

    def off_by_one(m6):
        for row in m6["questions"]:
            if row["course recall@5"] < 1:          # a sixth chunk could still add to it
                row["recall@5"] = min(1.0, row["course recall@5"] + 0.5)
                return row["id"]
    edit_results(copy, "m6", off_by_one)
    why = only_failure(copy, your_metrics)
    assert "1 question scores disagree with the course's definitions (first" in why


def test_a_price_off_by_a_thousand_fails(copy):
    from raglab.course.criteria import your_prices

    edit_results(copy, "m8", lambda m8: m8["answers"][0].update(yours=m8["answers"][0]["raglab"] * 1000))
    assert "1 priced differently from the list price (first answer 1" in only_failure(copy, your_prices)


def test_a_rule_that_lets_nobody_read_fails(copy):
    edit_results(copy, "access", lambda access: access["returned"].update(dense=0))
    assert "a public user got no chunk at all in dense" in only_failure(copy, no_leaks)


def test_a_leak_fails(copy):
    def leak(access):
        access["leaks"]["FAISS, your rule"]["bm25"] = 1
    edit_results(copy, "access", leak)
    assert "1 restricted chunks reached a public user" in only_failure(copy, no_leaks)


@pytest.mark.parametrize("leaks,questions", [({}, 12), ({"FAISS": {}, "pgvector": {}}, 12),
                                              ({"FAISS": {"dense": 0}}, 0)])
def test_a_leak_check_that_checked_nothing_fails(leaks, questions, tmp_path):
    artifacts.save_json(artifacts.RESULTS, {"access": {"leaks": leaks, "questions": questions}}, tmp_path)
    verdict = _guard("access", "no leaks", lambda: no_leaks(Artifacts(tmp_path)))
    assert not verdict.passed and "the leak check checked nothing" in verdict.why


def test_an_empty_leak_table_fails(copy):
    edit_results(copy, "access", lambda access: access.update(leaks={}))
    assert "checked nothing" in only_failure(copy, no_leaks)
    edit_results(copy, "access", lambda access: access.update(leaks={"FAISS": {}, "pgvector": {}}))
    assert "checked nothing" in only_failure(copy, no_leaks)


def test_a_bakeoff_without_spread_or_winner_fails(copy):
    from raglab.course.criteria import bakeoff_decided

    def flatten(bake):
        for r in bake["table"]:
            r["recall@5"] = 0.5
    edit_results(copy, "bakeoff", flatten)
    assert "spans only 0.000" in only_failure(copy, bakeoff_decided)
    edit_results(copy, "bakeoff", lambda bake: bake.update(winner=None))
    assert "no winner chosen" in only_failure(copy, bakeoff_decided)


def test_missing_and_corrupt_artifacts_fail_with_the_file_named(copy, capsys):
    (copy / "m4_answers.jsonl").unlink()
    (copy / "m6_scoreboard.json").write_text("{not json")
    v = verdicts(copy)
    assert "m4_answers.jsonl" in v["answers carry valid citations"].why
    assert "m6_scoreboard.json:1: not valid JSON" in v["five failures traced to the stage the run's records give"].why
    assert sum(not r.passed for r in v.values()) == 4      # three answer criteria, the traced failures
    assert run_check(copy) == 1
    assert capsys.readouterr().out.count("| FAIL |") == 4


def test_a_test_question_read_before_milestone_6_or_another_set_fails(copy):
    from raglab.course.criteria import read_test_once

    test_ids = artifacts.load_results(copy)["evaluation"]["read"]["ids"]
    edit_results(copy, "m3", lambda m3: m3["read"]["ids"].append(test_ids[0]))
    assert only_failure(copy, read_test_once) == "m3 read 1 test question(s)"
    edit_results(copy, "m3", lambda m3: m3["read"]["ids"].remove(test_ids[0]))
    edit_results(copy, "m4", lambda m4: m4["read"].update(corpus="/home/me/docs", corpus_sha256="0" * 16))
    assert "m4 ran on /home/me/docs, another corpus than milestone 6's (python-docs)" in only_failure(copy, read_test_once)
    edit_results(copy, "m2", lambda m2: m2["read"].update(sha256="0" * 16, golden="golden.jsonl", whose="yours"))
    assert "m2 read golden.jsonl (yours), another set than milestone 6's" in only_failure(copy, read_test_once)
    edit_results(copy, "evaluation", lambda e: e["read"].update(split="dev"))
    assert "milestone 6 reported on dev split, not test" in only_failure(copy, read_test_once)


def test_a_missing_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nowhere")]) == 2
    assert "no artifacts folder" in capsys.readouterr().err


# ---------------------------------------------------------------- the student's own work (issue 15)

def test_a_traced_failure_that_did_not_fail_fails(copy):
    from raglab.course.criteria import failures_traced_by_you

    board = json.loads((copy / "m6_scoreboard.json").read_text())
    passed = next(q["id"] for q in board["questions"] if q["failure"] is None)
    edit_results(copy, "traced_failures", lambda rows: rows[0].update(id=passed))
    assert f"{passed!r} did not fail" in only_failure(copy, failures_traced_by_you)


def test_four_traced_failures_or_a_wrong_stage_fail(project_artifacts, tmp_path):
    from raglab.course.criteria import failures_traced_by_you

    board = json.loads((project_artifacts / "m6_scoreboard.json").read_text())
    stages = [s for s, ids in board["failures"].items() if ids]

    def wrong_stage(rows):
        rows[2]["stage"] = next(s for s in stages if s != rows[2]["stage"])
    for breaks, expected in [(lambda rows: rows.pop(), "4 distinct questions traced (5 asked)"),
                             (wrong_stage, "by the run's records, not")]:
        where = tmp_path / f"a{len(expected)}"
        shutil.copytree(project_artifacts, where)
        edit_results(where, "traced_failures", breaks)
        assert expected in only_failure(where, failures_traced_by_you)


def test_a_choice_outside_the_table_or_ruled_out_by_it_fails(project_artifacts, tmp_path):
    from raglab.course.criteria import chunking_choice
    from raglab.evaluation.statistics import choose

    bake = artifacts.load_results(project_artifacts)["bakeoff"]
    rows, per_q = bake["table"], bake["per_question"]
    best = max(rows, key=lambda r: (r["recall@5"], r["mrr"]))
    name = lambda r: f"{r['chunking']} + {r['retriever']}"
    beaten = [r for r in rows if choose(per_q[name(r)], per_q[name(best)]).verdict == "better"]
    assert beaten                               # the table holds a row the one rule rules out
    cases = [(lambda c: c.update(retriever="grep"), "is not a configuration of the bake-off"),
             (lambda c: c.update(chunking=beaten[0]["chunking"], retriever=beaten[0]["retriever"]),
              "the data rules this choice out")]
    for n, (breaks, expected) in enumerate(cases):
        where = tmp_path / f"c{n}"
        shutil.copytree(project_artifacts, where)
        edit_results(where, "choice", breaks)
        assert expected in only_failure(where, chunking_choice)


def _submission(tmp_path, golden_rows, answers: dict[str, str] | None = None):
    """A student's folder: a golden set and the notebooks 06 and 07 (the reference's, with answer cells replaced)."""
    import nbformat

    from raglab.course.workbook import NOTEBOOKS

    sub = tmp_path / "student"
    sub.mkdir()
    (sub / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in golden_rows))
    for stem, marker in [("06_evaluation", 'record("traced_failures"'), ("07_bakeoff", 'record("choice"')]:
        nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
        if answers and stem in answers:
            cell = next(c for c in nb.cells if c.cell_type == "code" and marker in c.source)
            cell.source = answers[stem]
        nbformat.write(nb, sub / f"{stem}.ipynb")
    return sub


def test_a_submission_copied_from_the_project_and_the_reference_is_flagged(project_artifacts, tmp_path):
    from raglab.base import config
    project = [json.loads(x) for x in (config.PROJECT_ROOT / "evals" / "python_docs_golden.jsonl").read_text().splitlines()]
    sub = _submission(tmp_path, project)
    results = {r.criterion: r for r in check(project_artifacts, submission=sub)}
    flags = {c: r for c, r in results.items() if r.milestone == "flag"}
    assert len(flags) == 3 and not any(r.passed for r in flags.values()), [(c, r.why) for c, r in flags.items()]
    assert "more than half is flagged" in flags["golden set not mostly copied from the project's"].why
    assert "line for line" in flags["failure analysis not copied from the reference solution"].why


def test_a_submission_with_its_own_answers_is_not_flagged(project_artifacts, tmp_path):
    mine = {"06_evaluation": 'my_failures = []\nrl.course.artifacts.record("traced_failures", my_failures)',
            "07_bakeoff": 'my_choice = {"chunking": "x"}\nrl.course.artifacts.record("choice", my_choice)'}
    sub = _submission(tmp_path, [], mine)
    results = {r.criterion: r for r in check(project_artifacts, submission=sub)}
    assert results["failure analysis not copied from the reference solution"].passed
    assert results["chunking choice not copied from the reference solution"].passed
    golden = results["a golden set of the student's own passes the checks"]
    assert not golden.passed and "problems" in golden.why


def test_the_rubric_can_be_limited_to_the_assigned_notebooks(project_artifacts):
    only = check(project_artifacts, notebooks=["01_ingest_and_chunking", "04_cited_answers"])
    assert {r.milestone for r in only} == {"1 chunking", "4 cited answers"} and len(only) == 5
