"""Whose questions the course measures with: a student's split, checked ``golden.jsonl`` beside the notebooks,
else the course's split set, with the reason printed; ``RAGLAB_GOLDEN`` first."""
import json
import re

import pytest

from raglab.evaluation.golden import load_golden
from pathlib import Path

from raglab.course.golden_in_use import corpus_in_use, golden_in_use, use_settings
from test_student_golden import docs, student_set  # noqa: F401  (docs is a fixture)


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def no_setting(monkeypatch):
    monkeypatch.delenv("RAGLAB_GOLDEN", raising=False)
    monkeypatch.delenv("RAGLAB_CORPUS", raising=False)


def test_without_a_file_of_their_own_the_course_set_and_its_split_are_used(tmp_path):
    golden = golden_in_use("python-docs", tmp_path, "small")
    assert golden.whose == "the course's" and golden.passed_over == ""
    assert golden.line() == ("corpus python-docs; golden set: the course's (python_docs_golden.jsonl), "
                             "18 dev and 18 test questions")
    dev, test = {q.id for q in golden.dev}, {q.id for q in golden.test}
    assert not dev & test and len(dev | test) == len(golden.questions) == 36
    # the split the notebooks used as halves before it was committed: every other answerable question by id
    answerable = sorted((q for q in golden.questions if q.type != "unanswerable"), key=lambda q: q.id)
    assert [q.id for q in golden.split("dev", answerable=True)] == [q.id for q in answerable[0::2]]
    assert sum(q.type == "unanswerable" for q in golden.dev) == 2


def test_a_checked_split_set_beside_the_notebooks_is_the_set(tmp_path, docs):
    records = student_set(docs)
    write(tmp_path / "golden.jsonl", records)
    golden = golden_in_use("python-docs", tmp_path, "small")
    assert golden.whose == "yours" and golden.path == tmp_path / "golden.jsonl"
    assert [q.id for q in golden.dev] == [r["id"] for r in records if r["split"] == "dev"]
    assert golden.line().startswith("corpus python-docs; golden set: yours (golden.jsonl), 15 dev and 15 test")


@pytest.mark.parametrize("spoil, why", [
    (lambda rs: rs[:20], r"yours \(golden.jsonl\) is not used yet: \d+ problem\(s\), `raglab golden check golden.jsonl` lists them"),
    (lambda rs: [{k: v for k, v in r.items() if k != "split"} for r in rs],
     r"yours \(golden.jsonl\) is not used yet: its questions have no 'split' \(dev or test\)"),
])
def test_a_set_that_fails_the_check_or_has_no_split_is_passed_over_and_the_line_says_why(tmp_path, docs, spoil, why):
    write(tmp_path / "golden.jsonl", spoil(student_set(docs)))
    golden = golden_in_use("python-docs", tmp_path, "small")
    assert golden.whose == "the course's"
    assert re.search(why, golden.line()), golden.line()


def test_raglab_golden_names_the_set_and_it_must_be_split(tmp_path, docs, monkeypatch):
    write(tmp_path / "golden.jsonl", student_set(docs))
    named = write(tmp_path / "other.jsonl", student_set(docs)[:30])
    monkeypatch.setenv("RAGLAB_GOLDEN", str(named))
    assert golden_in_use("python-docs", tmp_path, "small").whose == "RAGLAB_GOLDEN's"
    write(named, [{k: v for k, v in r.items() if k != "split"} for r in student_set(docs)])
    with pytest.raises(ValueError, match=r"other.jsonl: 30 question\(s\) have no 'split'.*the first s-001"):
        golden_in_use("python-docs", tmp_path, "small")


def test_the_course_set_still_loads_as_before(docs):
    assert len(load_golden("python-docs", docs)) == 36


def test_raglab_workbook_golden_hands_the_file_to_every_notebook(tmp_path, docs, monkeypatch):
    from raglab.surfaces import cli
    from raglab.surfaces.cli import course

    monkeypatch.setenv("RAGLAB_GOLDEN", "")          # recorded, so the command's setting is undone after the test
    seen = []
    monkeypatch.setattr(course, "run_workbook", lambda **kw: seen.append(golden_in_use("python-docs", tmp_path, "small")) or True)
    with pytest.raises(SystemExit, match="--golden nowhere.jsonl: no such file"):
        cli.main(["workbook", "--golden", "nowhere.jsonl"])
    mine = write(tmp_path / "mine.jsonl", student_set(docs))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["workbook", "--golden", "mine.jsonl", "--out", str(tmp_path / "build")]) == 0
    assert seen[0].whose == "RAGLAB_GOLDEN's" and seen[0].path == mine


# --- the corpus in use: RAGLAB_CORPUS, else settings.toml beside the notebooks, else the Python docs -------------
FOLDER = Path(__file__).parents[2] / "evals" / "folders" / "makerspace" / "pages"


def folder_set(tmp_path):
    """The makerspace folder's 18 questions, split alternately (dev, test, ...)."""
    rows = [json.loads(line) for line in (FOLDER.parent / "questions.jsonl").read_text().splitlines()]
    return write(tmp_path / "makerspace.jsonl", [r | {"split": ("dev", "test")[i % 2]} for i, r in enumerate(rows)])


def test_without_a_setting_the_course_runs_on_the_python_docs(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGLAB_CORPUS", raising=False)
    assert corpus_in_use(tmp_path) == "python-docs"


def test_settings_toml_names_the_folder_and_the_set_and_every_line_says_so(tmp_path, monkeypatch):
    monkeypatch.delenv("RAGLAB_CORPUS", raising=False)
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    mine = folder_set(tmp_path)
    written = use_settings(corpus=FOLDER, golden=mine, folder=notebooks)
    assert written.read_text().startswith(f'corpus = "{FOLDER.resolve()}"')
    assert corpus_in_use(notebooks) == str(FOLDER.resolve())
    golden = golden_in_use(folder=notebooks)
    assert golden.corpus == str(FOLDER.resolve()) and golden.whose == "settings.toml's" and golden.path == mine.resolve()
    assert golden.line() == f"corpus {FOLDER.resolve()}; golden set: settings.toml's (makerspace.jsonl), 9 dev and 9 test questions"
    read = golden.read("dev")
    assert read["corpus"] == str(FOLDER.resolve()) and read["golden_path"] == str(mine.resolve())
    assert read["ids"] == [q.id for q in golden.dev] and len(read["corpus_sha256"]) == 16
    use_settings(folder=notebooks)                       # neither: back to the Python docs
    assert corpus_in_use(notebooks) == "python-docs"


def test_raglab_corpus_comes_before_the_settings_file(tmp_path, monkeypatch):
    (tmp_path / "settings.toml").write_text('corpus = "python-docs"\n')
    monkeypatch.setenv("RAGLAB_CORPUS", str(FOLDER))
    assert corpus_in_use(tmp_path) == str(FOLDER.resolve())


def test_a_folder_with_no_set_of_its_own_says_what_to_write(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_CORPUS", str(FOLDER))
    with pytest.raises(ValueError, match=r"a folder of your own has no course golden set; write yours in .*golden.jsonl"):
        golden_in_use(folder=tmp_path)


@pytest.mark.parametrize("text, why", [
    ('corpus = "no/such/folder"\n', r"corpus '.*no/such/folder' \(RAGLAB_CORPUS or settings.toml\): no such folder"),
    ("corpus = [1]\n", r"settings.toml: expected only corpus = \"DIR\" and golden = \"FILE\" \(text\)"),
    ('corpus = "x"\nmodel = "y"\n', r"settings.toml: expected only corpus .* found \['corpus', 'model'\]"),
    ("corpus = \n", r"settings.toml: not TOML"),
])
def test_a_bad_settings_file_is_named_with_what_is_wrong(tmp_path, monkeypatch, text, why):
    monkeypatch.delenv("RAGLAB_CORPUS", raising=False)
    (tmp_path / "settings.toml").write_text(text)
    with pytest.raises(ValueError, match=why):
        corpus_in_use(tmp_path)


def test_raglab_workbook_corpus_hands_the_folder_to_every_notebook(tmp_path, monkeypatch):
    from raglab.surfaces import cli
    from raglab.surfaces.cli import course

    monkeypatch.setenv("RAGLAB_CORPUS", "")          # recorded, so the command's setting is undone after the test
    seen = []
    monkeypatch.setattr(course, "run_workbook", lambda **kw: seen.append(corpus_in_use(tmp_path)) or True)
    with pytest.raises(SystemExit, match="--corpus nowhere: no such folder"):
        cli.main(["workbook", "--corpus", "nowhere"])
    assert cli.main(["workbook", "--corpus", str(FOLDER), "--out", str(tmp_path / "build")]) == 0
    assert seen == [str(FOLDER.resolve())]
