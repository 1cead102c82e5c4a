"""A folder of the user's own starts from the course's baseline and takes what its own bake-off keeps by the one
rule (notebook 07, its dev split); a bundled corpus keeps the defaults chosen on its own dev split. The page the
notebooks show a corpus by, and the model answers written for questions of the user's own."""
from pathlib import Path

import pytest

from raglab.book.documents import Document
from raglab.course import exercises
from raglab.evaluation.bakeoff import BASELINE_CELL, keep_as_default, keep_or_default
from raglab.infra.corpora import FOLDER, REGISTRY, entry

FOLDER_PAGES = str(Path(__file__).parents[2] / "evals" / "folders" / "makerspace" / "pages")


@pytest.fixture
def private_work(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_WORKDIR", str(tmp_path / "work"))


def test_a_folder_takes_the_cell_its_bake_off_keeps_only_when_the_rule_says_better(private_work):
    assert entry(FOLDER_PAGES) == FOLDER
    per_q = {BASELINE_CELL: [1, 0, 1, 0] * 4, ("headings 150/30 +prefix", "rerank"): [1, 1, 1, 1] * 4,
             ("chars 500/80", "hybrid"): [0, 1, 0, 1] * 4}
    tie = keep_or_default(per_q, ("chars 500/80", "hybrid"))     # as often worse as better: the baseline stays
    keep_as_default(FOLDER_PAGES, tie)
    assert (entry(FOLDER_PAGES).chunking, entry(FOLDER_PAGES).rerank) == (("words", False), False)
    better = keep_or_default(per_q, ("headings 150/30 +prefix", "rerank"))
    assert better.verdict == "better"
    keep_as_default(FOLDER_PAGES, better)
    kept = entry(FOLDER_PAGES)
    assert (kept.chunking, kept.rerank, kept.title_weight, kept.demote) == (("headings", True), True, 0.0, ())
    assert "kept by its bake-off on the dev split (headings 150/30 +prefix + rerank)" in kept.source


def test_a_bundled_corpus_keeps_its_registry_defaults(private_work):
    better = keep_or_default({BASELINE_CELL: [0] * 16, ("chars 500/80", "rerank"): [1] * 16}, ("chars 500/80", "rerank"))
    assert keep_as_default("python-docs", better) is None
    assert entry("python-docs") == REGISTRY["python-docs"]


def page(id_, text, title="A page"):
    return Document(id_, title, text, "")


def test_the_example_page_is_the_registry_s_else_the_one_with_the_most_headings(python_docs):
    assert exercises.example_page("python-docs", python_docs).id == "library/json.txt"
    flat = page("flat.md", "# Title\n\nOne paragraph, and nothing else. " * 20)
    sections = page("sections.md", "# Title\n\nIntro.\n\n## One\n\nText.\n\n## Two\n\nMore text.\n")
    assert exercises.example_page("my/folder", [flat, sections]).id == "sections.md"


def test_a_model_question_quotes_its_page_exactly_and_prefers_pages_no_question_cites():
    cited = page("a.md", "Backups run every night at 02:00 and keep the last 30 days of your files.")
    uncited = page("b.md", "Restores read the newest snapshot unless you name another one with its 8-digit id.")
    first = next(exercises.page_questions([cited, uncited], asked={"a.md"}))
    assert first["evidence"] == [{"doc": "b.md", "quote": uncited.text}]
    assert first["facts"] == ["8-digit"] and first["question"].endswith("?")
    assert next(exercises.page_questions([cited], asked={"a.md"}))["evidence"][0]["doc"] == "a.md"   # none uncited


def test_self_checks_run_on_the_python_docs_whatever_the_corpus(monkeypatch):
    monkeypatch.setenv("RAGLAB_CORPUS", FOLDER_PAGES)
    pages = exercises.check_pages()
    assert len(pages) == 24 and all(p.id.endswith(".txt") for p in pages)


def test_the_bm25_only_model_answer_is_found_by_bm25_and_missed_by_dense(workdir, embedder):
    from raglab.book.chunking import ChunkSettings
    from raglab.book.retrieve import Retriever
    from raglab.evaluation.metrics import supports
    from raglab.infra.assemble import get_index
    from raglab.infra.corpus import load_corpus

    retriever = Retriever(get_index(FOLDER_PAGES, settings=ChunkSettings("words"), embedder=embedder), embedder)
    question, evidence = exercises.only_bm25_finds(retriever, load_corpus(FOLDER_PAGES))
    page = next(d for d in load_corpus(FOLDER_PAGES) if d.id == evidence["doc"])
    assert " ".join(evidence["quote"].split()) in " ".join(page.text.split())
    held = {m: any(supports(retriever.index.chunk(h.id), evidence) for h in retriever.search(question, m, 5))
            for m in ("bm25", "dense")}
    assert held == {"bm25": True, "dense": False}, (question, held)
