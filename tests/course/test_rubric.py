"""The instructor's rubric: it passes on the project's own artifacts, and each broken copy fails
the criterion it breaks, for the reason it was broken, and no other."""
import json
import re
import shutil

import pytest

from raglab.chunking import ChunkSettings, chunk_corpus
from raglab.course import artifacts
from raglab.course.rubric import (
    CRITERIA,
    Artifacts,
    _guard,
    check,
    clean_cuts,
    no_leaks,
    run_check,
)
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
    name = next(c for _, c, fn, _nb in CRITERIA if fn is criterion_fn)
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
    from raglab.course.rubric import chunks_have_ids

    def drop(rows):
        rows[7]["doc"] = ""
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", drop)
    assert "m1_chunks.jsonl:8: chunk without a source" in only_failure(copy, chunks_have_ids)


def test_a_duplicate_chunk_id_fails(copy):
    from raglab.course.rubric import chunks_have_ids

    def dup(rows):
        rows[1]["id"] = rows[0]["id"]
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", dup)
    assert "appears twice" in only_failure(copy, chunks_have_ids)


def test_a_heading_chunk_cut_mid_sentence_fails(copy):
    def cut(rows):
        r = next(r for r in rows if r["chunking"].startswith("headings") and len(r["text"]) > 200)
        r["text"], r["following"] = r["text"][:101].rstrip() + " mid", "dle of a word."
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", cut)
    assert "cuts a sentence in half" in only_failure(copy, clean_cuts)


HARD_WRAP = re.compile(r"[a-z,]\n[ \t]*[a-z]")     # a line end inside a sentence of a wrapped paragraph


def cut_at_a_line_end(r):
    """Cut a chunk at a line end in the middle of one of its sentences (what a careless chunker does)."""
    m = HARD_WRAP.search(r["text"], len(r["text"]) // 3)
    end = m.start() + 1
    r["text"], r["following"] = r["text"][:end], artifacts.following(r["text"], end)
    return r


def test_a_heading_chunk_cut_at_a_hard_wrapped_line_end_fails(copy):
    def cut(rows):
        r = next(r for r in rows if r["chunking"].startswith("headings") and HARD_WRAP.search(r["text"], len(r["text"]) // 3))
        cut_at_a_line_end(r)
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", cut)
    assert "cuts a sentence in half" in only_failure(copy, clean_cuts)


@pytest.fixture(scope="module")
def m1(python_docs, tmp_path_factory):
    """The small profile's heading-aware chunks saved as notebook 01 saves them, and the page texts."""
    where = tmp_path_factory.mktemp("m1")
    chunks_by = {s.label(): chunk_corpus(python_docs, s) for s in (ChunkSettings("headings"),
                                                                    ChunkSettings("headings", prefix=True))}
    artifacts.save_chunks(chunks_by, python_docs, where=where)
    return where / "m1_chunks.jsonl", {d.id: d.text for d in python_docs}


def clean_cuts_of(rows, tmp_path):
    artifacts.save_jsonl("m1_chunks.jsonl", rows, tmp_path)
    return _guard("1", "clean cuts", lambda: clean_cuts(Artifacts(tmp_path)))


def test_the_chunkers_own_cuts_pass(m1, tmp_path):
    path, _ = m1
    verdict = clean_cuts_of(artifacts.load_jsonl(path.name, path.parent), tmp_path)
    assert verdict.passed, verdict.why
    assert "inside one sentence or block longer than the window" in verdict.why   # the chunker's allowed cuts


def test_a_cut_at_a_hard_wrapped_line_end_fails(m1, tmp_path):
    path, texts = m1
    rows = artifacts.load_jsonl(path.name, path.parent)
    n, r = next((n, r) for n, r in enumerate(rows, 1) if r["id"] == "library/json.txt#basic-usage:1")
    assert r["following"] == artifacts.following(texts[r["doc"]], r["end"])
    cut_at_a_line_end(r)
    assert r["following"].startswith("\n") and r["following"].strip()      # a line end, and the sentence goes on
    verdict = clean_cuts_of(rows, tmp_path)
    assert not verdict.passed and f"m1_chunks.jsonl:{n}: heading-aware chunk {r['id']} cuts a sentence in half" in verdict.why


def test_a_chunk_that_ends_inside_a_table_fails(m1, tmp_path):
    path, texts = m1
    rows = artifacts.load_jsonl(path.name, path.parent)
    row_end = re.compile(r"\|\n(?=[ \t]*[+|])")                      # a table row with another row below it
    n, r = next((n, r) for n, r in enumerate(rows, 1) if row_end.search(r["text"]))
    end = row_end.search(r["text"]).start() + 1
    r["text"], r["following"] = r["text"][:end], artifacts.following(r["text"], end)
    verdict = clean_cuts_of(rows, tmp_path)
    assert not verdict.passed and f"m1_chunks.jsonl:{n}: heading-aware chunk {r['id']} cuts a table in half" in verdict.why


def test_too_few_questions_in_the_fused_top_20_fail(copy):
    from raglab.course.rubric import fused_top20

    def lose(m2):
        for r in m2["questions"][3:]:
            r["hybrid rank"] = None
    edit_results(copy, "m2", lose)
    assert only_failure(copy, fused_top20).startswith("3 of")


def test_no_question_only_dense_gets_right_fails(copy):
    from raglab.course.rubric import keyword_and_vector_wins

    def same(m2):
        for r in m2["questions"]:
            r["dense recall@5"] = min(r["dense recall@5"], r["bm25 recall@5"])
    edit_results(copy, "m2", same)
    assert "only dense: none" in only_failure(copy, keyword_and_vector_wins)


def test_reranking_that_rarely_puts_the_right_chunk_first_fails(copy):
    from raglab.course.rubric import ranked_first

    def demote(m3):
        for rows in m3["configs"].values():
            for r in rows[: len(rows) // 2 + 1]:
                r["rerank rank"] = 2
    edit_results(copy, "m3", demote)
    assert "not most in any configuration" in only_failure(copy, ranked_first)


def test_misses_not_looked_at_fail(copy):
    from raglab.course.rubric import ranked_first

    edit_results(copy, "m3", lambda m3: m3.update(misses_shown=[]))
    assert "not looked at" in only_failure(copy, ranked_first)


def test_a_citation_that_was_not_retrieved_fails(copy):
    from raglab.course.rubric import valid_citations

    def forge(rows):
        r = next(r for r in rows if r["kind"] == "answer" and not r["refused"])
        r["citations"][0]["id"] = "library/nowhere.txt#1"
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", forge)
    assert "library/nowhere.txt#1" in only_failure(copy, valid_citations)


def test_an_invented_id_let_through_fails(copy):
    from raglab.course.rubric import invented_id_caught

    def let_through(rows):
        r = next(r for r in rows if r["kind"] == "invented-id")
        r.update(refused=False, reason=None, invalid_citations=[])
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", let_through)
    assert "was let through" in only_failure(copy, invented_id_caught)


def test_an_answered_out_of_corpus_question_fails(copy):
    from raglab.course.rubric import out_of_corpus_refused

    def answer(rows):
        r = next(r for r in rows if r["kind"] == "out-of-corpus")
        r.update(refused=False, answer="Use zoneinfo.ZoneInfo [1].")
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", answer)
    assert "not refused" in only_failure(copy, out_of_corpus_refused)


def test_a_command_that_did_not_print_abstention_fails(copy):
    from raglab.course.rubric import one_command_four_scores

    run = artifacts.load_json("m5_eval_command.json", copy)
    run["output"] = "\n".join(ln for ln in run["output"].splitlines() if not ln.startswith("abstention"))
    artifacts.save_json("m5_eval_command.json", run, copy)
    assert "did not print: refusal (abstention)" in only_failure(copy, one_command_four_scores)


def test_a_failure_without_a_stage_fails(copy):
    from raglab.course.rubric import failures_read

    board = artifacts.load_json("m5_scoreboard.json", copy)
    traced = {r["id"] for r in artifacts.load_results(copy)["traced_failures"]}     # the student's five stay failures
    q = next(q for q in board["questions"] if q["failure"] == "generation" and q["id"] not in traced)
    q["failure"] = None
    artifacts.save_json("m5_scoreboard.json", board, copy)
    assert q["id"] in only_failure(copy, failures_read)


def test_a_leak_fails(copy):
    def leak(access):
        access["leaks"]["pgvector"]["bm25"] = 1
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
    from raglab.course.rubric import bakeoff_decided

    def flatten(bake):
        for r in bake["table"]:
            r["recall@5"] = 0.5
    edit_results(copy, "bakeoff", flatten)
    assert "spans only 0.000" in only_failure(copy, bakeoff_decided)
    edit_results(copy, "bakeoff", lambda bake: bake.update(winner=None))
    assert "no winner chosen" in only_failure(copy, bakeoff_decided)


def test_missing_and_corrupt_artifacts_fail_with_the_file_named(copy, capsys):
    (copy / "m4_answers.jsonl").unlink()
    (copy / "m5_eval_command.json").write_text("{not json")
    v = verdicts(copy)
    assert "m4_answers.jsonl" in v["answers carry valid citations"].why
    assert "m5_eval_command.json:1: not valid JSON" in v["one command printed all four score families"].why
    assert sum(not r.passed for r in v.values()) == 4      # three answer criteria, one command criterion
    assert run_check(copy) == 1
    assert capsys.readouterr().out.count("| FAIL |") == 4


def test_a_missing_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nowhere")]) == 2
    assert "no artifacts folder" in capsys.readouterr().err


# ---------------------------------------------------------------- the student's own work (issue 15)

def test_a_traced_failure_that_did_not_fail_or_a_short_reason_fails(copy):
    from raglab.course.rubric import failures_traced_by_you

    board = json.loads((copy / "m5_scoreboard.json").read_text())
    passed = next(q["id"] for q in board["questions"] if q["failure"] is None)
    edit_results(copy, "traced_failures", lambda rows: rows[0].update(id=passed))
    assert f"{passed!r} did not fail" in only_failure(copy, failures_traced_by_you)


def test_four_traced_failures_or_a_three_word_reason_fail(project_artifacts, tmp_path):
    from raglab.course.rubric import failures_traced_by_you

    for breaks, expected in [(lambda rows: rows.pop(), "4 distinct questions traced (five asked)"),
                             (lambda rows: rows[2].update(why="it went wrong"), "the why has 3 words")]:
        where = tmp_path / f"a{len(expected)}"
        shutil.copytree(project_artifacts, where)
        edit_results(where, "traced_failures", breaks)
        assert expected in only_failure(where, failures_traced_by_you)


def test_a_choice_outside_the_table_or_without_its_numbers_fails(project_artifacts, tmp_path):
    from raglab.course.rubric import chunking_choice

    cases = [(lambda c: c.update(retriever="grep"), "is not a configuration of the bake-off"),
             (lambda c: c.update(why="I like this one because it felt right when I tried it on a few of my "
                                     "questions, and 7 is my lucky number"), "quotes none of the")]
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
    from raglab import config

    project = [json.loads(x) for x in (config.PROJECT_ROOT / "evals" / "python_docs_golden.jsonl").read_text().splitlines()]
    sub = _submission(tmp_path, project)
    results = {r.criterion: r for r in check(project_artifacts, submission=sub)}
    flags = {c: r for c, r in results.items() if r.milestone == "flag"}
    assert len(flags) == 3 and not any(r.passed for r in flags.values()), [(c, r.why) for c, r in flags.items()]
    assert "more than half is flagged" in flags["golden set not mostly copied from the project's"].why
    assert "line for line" in flags["failure analysis not copied from the reference solution"].why


def test_a_submission_with_its_own_answers_is_not_flagged(project_artifacts, tmp_path):
    mine = {"06_evaluation": 'my_failures = []\nrl.artifacts.record("traced_failures", my_failures)',
            "07_bakeoff": 'my_choice = {"chunking": "x"}\nrl.artifacts.record("choice", my_choice)'}
    sub = _submission(tmp_path, [], mine)
    results = {r.criterion: r for r in check(project_artifacts, submission=sub)}
    assert results["failure analysis not copied from the reference solution"].passed
    assert results["chunking choice not copied from the reference solution"].passed
    golden = results["a golden set of the student's own passes the checks"]
    assert not golden.passed and "problems" in golden.why


def test_the_rubric_can_be_limited_to_the_assigned_notebooks(project_artifacts):
    only = check(project_artifacts, notebooks=["01_ingest_and_chunking", "04_cited_answers"])
    assert {r.milestone for r in only} == {"1 chunking", "4 cited answers"} and len(only) == 5
