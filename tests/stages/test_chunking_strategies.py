"""The chunking lab's strategies: token windows, the recursive splitter, semantic breakpoints,
small-to-big parents and a learner's registered chunker, each held to the same checks (every word
covered, the model's token limit), and the race that compares them."""
import numpy as np
import pytest

from raglab.book.model_chunkers import RECURSIVE_SEPARATORS
from raglab.book.chunking import (
    MODEL_TOKENS,
    REGISTERED,
    ChunkSettings,
    chunk_corpus,
    chunk_document,
    parent_chunks,
    register_chunker,
)
from raglab.evaluation.chunk_checks import check_chunks
from raglab.infra.tokenizer import load_tokenizer
from raglab.book.documents import Document, load_folder
from raglab.infra.python_docs import python_docs_dir
from raglab.infra.index import index_name
from raglab.infra.packaged_models import MINILM_MAX_TOKENS
from raglab.base.text import blank_rules, paragraphs
from raglab.guards.guard import Guard
from raglab.infra.traces import Tracer
from raglab.guards.detector import default_detector


@pytest.fixture(scope="module")
def pages():
    """Pages with grid tables, code and deep headings, from the full docs."""
    return load_folder(python_docs_dir(), (".txt",), only=["library/stdtypes.txt", "library/string.txt",
                                                          "tutorial/controlflow.txt"])


@pytest.fixture()
def registry():
    """Chunkers registered by a test are removed after it."""
    before = dict(REGISTERED)
    yield REGISTERED
    REGISTERED.clear()
    REGISTERED.update(before)


def model_tokens(text: str) -> int:
    """The model's own count, [CLS] and [SEP] included (an independent call of the tokenizer)."""
    return len(load_tokenizer().encode(text).ids)


def test_the_four_older_strategies_keep_their_manifest_and_folder_names():
    """Indexes built before the lab are still found and accepted: the same folder names, the same
    manifest record (no new keys)."""
    s = ChunkSettings("headings", prefix=True)
    assert s.record() == {"strategy": "headings", "size": 150, "overlap": 30, "prefix": True}
    assert index_name("python-docs", "small", s) == "python-docs-small-headings-150-30-prefix"
    assert index_name("python-docs", "full", ChunkSettings("words")) == "python-docs-full-words-150-30"
    semantic = ChunkSettings("semantic", breakpoint=80)
    assert semantic.record()["breakpoint"] == 80 and semantic.name() == "semantic-256-0-p80"
    assert semantic.label() == "semantic 256 p80"


def test_the_books_token_window_is_the_packaged_models_and_its_tokenizer_is_handed_in():
    """The book sizes token chunks by its own constant, the packaged model's window; it loads no tokenizer."""
    assert MODEL_TOKENS == MINILM_MAX_TOKENS
    doc = Document("a", "A", "Some words here. " * 40, sha256="", access=("public",))
    for strategy in ("tokens", "recursive"):
        with pytest.raises(ValueError, match="tokenizer="):
            chunk_document(doc, ChunkSettings(strategy))


def test_token_windows_fit_the_model_cover_every_word_and_end_on_words(pages):
    chunks = chunk_corpus(pages, ChunkSettings("tokens", 256, 32), tokenizer=load_tokenizer())
    checks = check_chunks(pages, chunks)
    assert checks["uncovered"] == 0 and checks["over_limit"] == 0
    assert max(model_tokens(c.indexed_text) for c in chunks) <= 256
    # the windows fill the model: most are within a word or two of the limit
    assert np.median([model_tokens(c.indexed_text) for c in chunks]) >= 240
    for c in chunks:   # a window starts and ends between words (rules blanked), unless the word is longer than a window
        text = blank_rules(next(p.text for p in pages if p.id == c.doc))
        for at in (c.start, c.end):
            if 0 < at < len(text) and not text[at - 1].isspace() and not text[at].isspace():
                a, b = text.rfind(" ", 0, at) + 1, min(i for i in (text.find(" ", at), text.find("\n", at), len(text)) if i >= 0)
                assert model_tokens(text[a:b]) > 254, (c.id, text[at - 20:at + 20])
    # consecutive windows of a page overlap, by at most the stated 32 tokens
    for a, b in zip(chunks, chunks[1:]):
        if a.doc == b.doc:
            assert b.start < a.end
            shared = blank_rules(next(p.text for p in pages if p.id == a.doc))[b.start:a.end]
            assert model_tokens(shared) - 2 <= 32


def test_recursive_chunks_are_the_librarys_own_strings(pages):
    """The strategy is LangChain's splitter, its strings laid back onto the page: each chunk's text is
    the library's chunk, in the library's order (a splitter built here, independently)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    tok = load_tokenizer()
    splitter = RecursiveCharacterTextSplitter(
        separators=list(RECURSIVE_SEPARATORS), keep_separator="end", chunk_size=254, chunk_overlap=32,
        length_function=lambda s: len(tok.encode(s, add_special_tokens=False).ids))
    for page in pages:
        chunks = chunk_document(page, ChunkSettings("recursive"), tokenizer=tok)
        assert [blank_rules(page.text)[c.start:c.end] for c in chunks] == splitter.split_text(blank_rules(page.text))
    checks = check_chunks(pages, chunk_corpus(pages, ChunkSettings("recursive"), tokenizer=tok))
    assert checks["uncovered"] == 0 and checks["over_share"] <= 0.01


def test_semantic_on_a_real_page_with_the_model(pages, embedder):
    page = Document("part", "Control Flow", pages[2].text[:6000], sha256="", access=("public",))    # 6,000 characters: ~60 sentences
    chunks = chunk_corpus([page], ChunkSettings("semantic"), embed=embedder.encode, tokenizer=load_tokenizer())
    checks = check_chunks([page], chunks)
    assert checks["uncovered"] == 0 and checks["overlapped"] == 0 and checks["over_limit"] == 0


def test_parent_children_lie_inside_their_parents(pages):
    kids = chunk_corpus(pages, ChunkSettings("parent"))
    parents = {p.id: p for page in pages for p in parent_chunks(page)}
    assert kids and all(k.parent in parents for k in kids)
    for k in kids:
        p = parents[k.parent]
        assert k.id.startswith(p.id + "/") and p.start <= k.start < k.end <= p.end and k.doc == p.doc
    # every parent has children; children are small (64 words), parents up to 300 (a table is never cut)
    assert {k.parent for k in kids} == set(parents)
    assert np.median([len(k.text.split()) for k in kids]) <= 64 < np.median([len(p.text.split()) for p in parents.values()])


def test_a_parent_index_hands_on_distinct_parents_in_the_childrens_order(workdir, embedder):
    from raglab.infra.index import build_index, load_index
    from raglab.book.retrieve import Retriever

    index = build_index("helpcenter", "small", ChunkSettings("parent", prefix=True), embedder)
    again = load_index("helpcenter", "small", ChunkSettings("parent", prefix=True))
    assert [p.id for p in again.parents] == [p.id for p in index.parents]
    retriever = Retriever(index, embedder)
    question = "How do I reset my password?"
    for mode in ("dense", "bm25", "hybrid"):
        hits = retriever.search(question, mode, 3)
        children = getattr(retriever, mode)(question, k=12)       # the same search, without the parents
        want = list(dict.fromkeys(index.chunks[index.row_of[h.id]].parent for h in children))[:3]
        assert [h.id for h in hits] == want
        assert all(index.chunk(h.id).id in index.parent_row for h in hits)


def test_an_answer_cites_the_parents_id(workdir, embedder):
    from raglab.book.assistant import Assistant
    from raglab.answerer.extractive import ExtractiveGenerator
    from raglab.infra.index import build_index
    from raglab.book.retrieve import Retriever

    index = build_index("helpcenter", "small", ChunkSettings("parent", prefix=True), embedder)
    assistant = Assistant(Retriever(index, embedder), ExtractiveGenerator(embedder), threshold=0.0, rerank=False,
                          guard=Guard(default_detector(embedder)), trace=Tracer(workdir / "traces" / "parent.jsonl"))
    answer = assistant.ask("How do I reset my password?")
    assert not answer.refused and answer.citations
    assert all(c.id in index.parent_row for c in answer.citations)
    assert all(r["id"] in index.parent_row for r in answer.retrieved)


def test_pgvector_refuses_the_parent_strategy():
    from raglab.infra.pg_index import sync_pgvector

    with pytest.raises(ValueError, match="FAISS store only"):
        sync_pgvector("helpcenter", "small", ChunkSettings("parent"), url="postgresql://unused")


def by_paragraph(text):
    """A learner's chunker: one chunk a paragraph."""
    return paragraphs(text, 0, len(text))


def test_a_registered_chunker_is_a_strategy(pages, registry):
    settings = register_chunker("paras", by_paragraph)
    page = pages[2]
    chunks = chunk_document(page, settings)
    assert [(c.start, c.end) for c in chunks] == [s for s in by_paragraph(page.text) if page.text[slice(*s)].strip()]
    assert settings.label() == "paras" and settings.record()["code"]
    assert check_chunks([page], chunks)["uncovered"] == 0
    # the folder name carries the code's hash: a changed chunker is a new index, never a stale one
    before = index_name("python-docs", "small", settings)
    register_chunker("paras", lambda text: [(0, len(text))])
    assert index_name("python-docs", "small", ChunkSettings("paras")) != before


@pytest.mark.parametrize("spans, why", [
    ([(0, 10), (5, 99999)], "chunk 1 is \\(5, 99999\\), outside"),
    ([(10, 20), (0, 5)], "chunk 1 starts at 0, before chunk 0"),
    ([(3, 3)], "chunk 0 .* empty"),
    (["0-10"], "chunk 0 is '0-10', not a \\(start, end\\) pair"),
])
def test_a_registered_chunkers_bad_spans_are_named(spans, why, registry):
    register_chunker("broken", lambda text: spans)
    doc = Document("d", "D", "x" * 200, sha256="", access=("public",))
    with pytest.raises(ValueError, match=why):
        chunk_document(doc, ChunkSettings("broken"))


def test_registering_needs_a_fresh_lowercase_name(registry):
    with pytest.raises(ValueError, match="one of raglab's strategies"):
        register_chunker("words", by_paragraph)
    with pytest.raises(ValueError, match="lowercase"):
        register_chunker("My Chunker", by_paragraph)
    with pytest.raises(ValueError, match="sizes its own"):
        register_chunker("paras", by_paragraph) and ChunkSettings("paras", size=100).resolved()


def test_check_chunks_counts_by_hand():
    """Five words in windows of 3 stepping 2: 'three' is in both windows; cut 'five' off and it is
    the first uncovered word."""
    doc = Document("d", "D", "one two three four five", sha256="", access=("public",))
    chunks = chunk_document(doc, ChunkSettings("words", 3, 1))
    checks = check_chunks([doc], chunks)
    assert (checks["words"], checks["once"], checks["overlapped"], checks["uncovered"]) == (5, 4, 1, 0)
    short = check_chunks([doc], chunks[:1])
    assert short["uncovered"] == 2 and short["first_uncovered"] == {"doc": "d", "offset": 14, "word": "four"}


def test_the_race_scores_every_chunking_on_the_same_questions(workdir, embedder, registry):
    """Two chunkings and a registered one on the help center: each row's numbers are the means of
    its questions, the default's difference from itself is 0, and the others' differences are the
    mean paired differences (computed here from the per-question rows)."""
    from raglab.evaluation.chunking_lab import race_summary, run_race

    register_chunker("paras", by_paragraph)
    default = ChunkSettings("headings", prefix=True)
    table, per_q = run_race("helpcenter", "small", None, [ChunkSettings("tokens"), ChunkSettings("paras")],
                            ("dense", "bm25"), embedder, default=default)
    assert list(dict.fromkeys(table.chunking)) == ["tokens 256/32", "paras", default.label()]
    n = per_q.id.nunique()
    assert (table.questions == n).all()
    for _, row in table.iterrows():
        mine = per_q[(per_q.chunking == row.chunking) & (per_q.retriever == row.retriever)].set_index("id")
        assert row["recall@5"] == pytest.approx(mine["recall@5"].mean(), abs=1e-4)     # intervals are rounded to 4 places
        assert row["hit@5"] == pytest.approx((mine["recall@5"] > 0).mean(), abs=1e-4)
        base = per_q[(per_q.chunking == default.label()) & (per_q.retriever == row.retriever)].set_index("id")
        assert row["diff"] == pytest.approx((mine["recall@5"] - base.loc[mine.index, "recall@5"]).mean(), abs=1e-4)
        assert row["recall@5_lo"] <= row["recall@5"] <= row["recall@5_hi"]
    assert (table[table.chunking == default.label()]["diff"] == 0).all()
    assert (table[table.chunking == "tokens 256/32"]["over_limit"] == 0).all()
    # the summary names the best row of the retriever besides the default, and its test reading
    hybrid_less = table[table.retriever == "dense"].sort_values(["recall@5", "mrr"], ascending=False)
    best = hybrid_less[hybrid_less.chunking != default.label()].iloc[0]
    line = race_summary(table, table.iloc[0:0], "dense", default=default.label())
    assert f"is {best.chunking}: recall@5 {best['recall@5']:.3f}" in line and line.endswith("not read on test.")


def test_a_parent_is_read_under_its_pages_access(workdir, embedder):
    """The help center's premium pages: their parents are hidden from a public user, as their rows are."""
    from raglab.infra.index import build_index

    index = build_index("helpcenter", "small", ChunkSettings("parent", prefix=True), embedder)
    premium = [p for p in index.parents if "premium" in p.access]
    public = [p for p in index.parents if "public" in p.access]
    assert premium and public
    assert not any(index.readable(p.id, None) for p in premium)
    assert all(index.readable(p.id, ("premium",)) for p in premium)
    assert all(index.readable(p.id, None) for p in public)
    kid = next(c for c in index.chunks if c.parent == premium[0].id)
    assert index.readable(kid.id, None) is False and index.readable(kid.id, ("premium",)) is True
    with pytest.raises(KeyError):
        index.readable("no/such#chunk", None)
