"""The instructor's rubric: it passes on the project's own artifacts, and each broken copy fails
the criterion it breaks, for the reason it was broken, and no other."""
import json
import shutil

import pytest

from raglab import artifacts
from raglab.check import CRITERIA, check, run_check
from raglab.cli import main


@pytest.fixture
def copy(project_artifacts, tmp_path):
    dest = tmp_path / "artifacts"
    shutil.copytree(project_artifacts, dest)
    return dest


def verdicts(where):
    return {r.criterion: r for r in check(where)}


def only_failure(where, criterion_fn):
    """The one failing criterion (broken copies must break exactly one), and its reason."""
    name = next(c for _, c, fn in CRITERIA if fn is criterion_fn)
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
    from raglab.check import chunks_have_ids

    def drop(rows):
        rows[7]["doc"] = ""
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", drop)
    assert "m1_chunks.jsonl:8: chunk without a source" in only_failure(copy, chunks_have_ids)


def test_a_duplicate_chunk_id_fails(copy):
    from raglab.check import chunks_have_ids

    def dup(rows):
        rows[1]["id"] = rows[0]["id"]
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", dup)
    assert "appears twice" in only_failure(copy, chunks_have_ids)


def test_a_heading_chunk_cut_mid_sentence_fails(copy):
    from raglab.check import clean_cuts

    def cut(rows):
        r = next(r for r in rows if r["chunking"].startswith("headings") and len(r["text"]) > 200)
        r["text"], r["after"] = r["text"][:101].rstrip() + " mid", "d"
        return rows
    edit_jsonl(copy / "m1_chunks.jsonl", cut)
    assert "1 of" in only_failure(copy, clean_cuts) and "end mid-sentence" in only_failure(copy, clean_cuts)


def test_too_few_questions_in_the_fused_top_20_fail(copy):
    from raglab.check import fused_top20

    def lose(m2):
        for r in m2["questions"][3:]:
            r["hybrid rank"] = None
    edit_results(copy, "m2", lose)
    assert only_failure(copy, fused_top20).startswith("3 of")


def test_no_question_only_dense_gets_right_fails(copy):
    from raglab.check import keyword_and_vector_wins

    def same(m2):
        for r in m2["questions"]:
            r["dense recall@5"] = min(r["dense recall@5"], r["bm25 recall@5"])
    edit_results(copy, "m2", same)
    assert "only dense: none" in only_failure(copy, keyword_and_vector_wins)


def test_reranking_that_rarely_puts_the_right_chunk_first_fails(copy):
    from raglab.check import ranked_first

    def demote(m3):
        for rows in m3["configs"].values():
            for r in rows[: len(rows) // 2 + 1]:
                r["rerank rank"] = 2
    edit_results(copy, "m3", demote)
    assert "not most in any configuration" in only_failure(copy, ranked_first)


def test_misses_not_looked_at_fail(copy):
    from raglab.check import ranked_first

    edit_results(copy, "m3", lambda m3: m3.update(misses_shown=[]))
    assert "not looked at" in only_failure(copy, ranked_first)


def test_a_citation_that_was_not_retrieved_fails(copy):
    from raglab.check import valid_citations

    def forge(rows):
        r = next(r for r in rows if r["kind"] == "answer" and not r["refused"])
        r["citations"][0]["id"] = "library/nowhere.txt#1"
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", forge)
    assert "library/nowhere.txt#1" in only_failure(copy, valid_citations)


def test_an_invented_id_let_through_fails(copy):
    from raglab.check import invented_id_caught

    def let_through(rows):
        r = next(r for r in rows if r["kind"] == "invented-id")
        r.update(refused=False, reason=None, invalid_citations=[])
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", let_through)
    assert "was let through" in only_failure(copy, invented_id_caught)


def test_an_answered_out_of_corpus_question_fails(copy):
    from raglab.check import out_of_corpus_refused

    def answer(rows):
        r = next(r for r in rows if r["kind"] == "out-of-corpus")
        r.update(refused=False, answer="Use zoneinfo.ZoneInfo [1].")
        return rows
    edit_jsonl(copy / "m4_answers.jsonl", answer)
    assert "not refused" in only_failure(copy, out_of_corpus_refused)


def test_a_command_that_did_not_print_abstention_fails(copy):
    from raglab.check import one_command_four_scores

    run = artifacts.load_json("m5_eval_command.json", copy)
    run["output"] = "\n".join(ln for ln in run["output"].splitlines() if not ln.startswith("abstention"))
    artifacts.save_json("m5_eval_command.json", run, copy)
    assert "did not print: refusal (abstention)" in only_failure(copy, one_command_four_scores)


def test_a_failure_without_a_stage_fails(copy):
    from raglab.check import failures_read

    board = artifacts.load_json("m5_scoreboard.json", copy)
    q = next(q for q in board["questions"] if q["failure"] == "generation")
    q["failure"] = None
    artifacts.save_json("m5_scoreboard.json", board, copy)
    assert q["id"] in only_failure(copy, failures_read)


def test_a_leak_fails(copy):
    from raglab.check import no_leaks

    def leak(access):
        access["leaks"]["pgvector"]["bm25"] = 1
    edit_results(copy, "access", leak)
    assert "1 restricted chunks reached a public user" in only_failure(copy, no_leaks)


def test_a_bakeoff_without_spread_or_winner_fails(copy):
    from raglab.check import bakeoff_decided

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
