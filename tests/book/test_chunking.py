"""Chunk records (raglab/book/chunking.py): each chunk's offsets give back the document's exact text, every
word is in some chunk, ids are stable across processes and follow the headings' slugs, the contextual prefix
goes into the indexed text only, settings are checked and a page's access is every chunk's. References: the
documents' own text sliced independently, a word-by-word coverage scan with its own heading finder, a second
Python process, and records written out by hand. How each strategy cuts text: test_chunkers.py,
test_model_chunkers.py; the section splitter: test_sections.py."""
import hashlib
import re
import subprocess
import sys

import pytest

from raglab.book.chunking import (
    STRATEGIES,
    Chunk,
    ChunkSettings,
    chunk_corpus,
    chunk_document,
    prefix_for,
    spans_of,
)
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.book.documents import make_document
from tests.book.headings_reference import independent_headings


def letters_embed(texts):
    """Sentence vectors without the model (for the semantic strategy's offsets, not its quality): each
    text's letter counts, unit length."""
    import numpy as np

    rows = np.array([[t.lower().count(ch) + 1e-3 for ch in "abcdefghijklmnopqrstuvwxyz"] for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("prefix", [False, True])
def test_offsets_map_back_to_the_exact_document_text(both_corpora, strategy, prefix):
    by_id = {d.id: d for d in both_corpora}
    chunks = chunk_corpus(both_corpora, ChunkSettings(strategy, prefix=prefix), embed=letters_embed,
                          tokenizer=load_tokenizer())
    assert len({c.id for c in chunks}) == len(chunks)
    for c in chunks:
        doc = by_id[c.doc]
        assert doc.text[c.start:c.end] == c.text and c.text.strip() == c.text
        assert c.access == doc.access and c.heading[0] == doc.title
        assert c.id.startswith(c.doc + "#")


def uncovered_words(doc, chunks):
    """``(offset, word)`` of every word of ``doc`` that no chunk's span covers (underline rules aside)."""
    covered = bytearray(len(doc.text))
    for c in chunks:
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    return [(m.start(), m.group()) for m in re.finditer(r"\S+", doc.text)
            if not covered[m.start()] and not re.fullmatch(r"[=\-*~^]{4,}", m.group())]


def line_at(text, pos):
    """The offset where the line holding ``pos`` starts, and that line."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, text[start:end if end >= 0 else len(text)]


def check_every_word_is_in_some_chunk(docs):
    """Every word is in a chunk; with headings, a word left out must be on the line of a heading (or its
    underline) that has no text of its own, and that heading must be in some chunk's heading path."""
    for strategy in STRATEGIES:
        for doc in docs:
            chunks = chunk_document(doc, ChunkSettings(strategy), embed=letters_embed, tokenizer=load_tokenizer())
            missing = uncovered_words(doc, chunks)
            if strategy not in ("headings", "parent"):     # both skip a heading with no text of its own
                assert missing == [], (strategy, doc.id, missing[:5])
                continue
            heads = set(independent_headings(doc.text))
            paths = {title for c in chunks for title in c.heading}
            for pos, word in missing:
                start, line = line_at(doc.text, pos)
                head, title = (start, line) if start in heads else line_at(doc.text, max(start - 1, 0))
                assert head in heads and title.lstrip("#").strip() in paths, \
                    (doc.id, f"{word!r} at {pos} is not in any chunk", line)


def test_every_word_of_every_document_is_in_some_chunk(python_docs):
    check_every_word_is_in_some_chunk(python_docs[:8])


def test_the_coverage_check_catches_a_dropped_word(python_docs, monkeypatch):
    import dataclasses

    real = chunk_document

    def drop_the_last_word(doc, settings, embed=None, tokenizer=None):
        """The heading chunker, but the document's last chunk loses its last word."""
        chunks = real(doc, settings, embed=embed, tokenizer=tokenizer)
        if settings.strategy != "headings":
            return chunks
        last = chunks[-1]
        end = last.start + last.text.rstrip().rindex(last.text.split()[-1])
        return chunks[:-1] + [dataclasses.replace(last, end=end, text=doc.text[last.start:end].rstrip())]

    monkeypatch.setitem(globals(), "chunk_document", drop_the_last_word)
    with pytest.raises(AssertionError, match="is not in any chunk"):
        check_every_word_is_in_some_chunk(python_docs[:8])


# every strategy but the semantic one, which reads the model (its ids: tests/stages/test_chunking_strategies.py)
WITHOUT_MODEL = tuple(s for s in STRATEGIES if s != "semantic")


def _ids_digest(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin", "RAGLAB_PROFILE": "small"})
    return out.stdout.strip()


def test_ids_are_stable_across_runs_and_processes(python_docs):
    code = ("import hashlib; from raglab import load_corpus, chunk_corpus, ChunkSettings; from raglab.infra.tokenizer import load_tokenizer;"
            "docs = load_corpus('python-docs'); tok = load_tokenizer();"
            "print(hashlib.sha256('|'.join(c.id + str(c.start) + str(c.end) for s in "
            f"{WITHOUT_MODEL!r} for c in chunk_corpus(docs, ChunkSettings(s), tokenizer=tok)).encode()).hexdigest())")
    here = hashlib.sha256("|".join(c.id + str(c.start) + str(c.end) for s in WITHOUT_MODEL
                                   for c in chunk_corpus(python_docs, ChunkSettings(s), tokenizer=load_tokenizer())).encode()).hexdigest()
    assert _ids_digest(code) == here


def test_heading_ids_are_slugs_with_split_suffixes(python_docs):
    chunks = chunk_document(next(d for d in python_docs if d.id == "library/json.txt"), ChunkSettings("headings"))
    ids = [c.id for c in chunks]
    assert "library/json.txt#basic-usage:1" in ids and "library/json.txt#basic-usage:2" in ids
    assert all(re.fullmatch(r"library/json\.txt#[a-z0-9-]+(~\d+)?(:\d+)?", i) for i in ids)


def test_contextual_prefix_goes_into_the_indexed_text_only():
    doc = make_document("g.md", "# Guide\n\n## Install\n\nRun the installer. It takes a minute.\n")
    plain, pref = (chunk_document(doc, ChunkSettings("headings", prefix=p))[-1] for p in (False, True))
    assert pref.indexed_text == "Guide > Install: " + plain.indexed_text
    assert pref.text == plain.text and pref.id == plain.id


def test_settings_are_validated():
    with pytest.raises(ValueError, match="unknown chunking strategy 'sentences'"):
        ChunkSettings("sentences").resolved()
    with pytest.raises(ValueError, match="overlap must be"):
        ChunkSettings("words", 100, 100).resolved()
    assert ChunkSettings("chars").label() == "chars 500/80"


@pytest.mark.parametrize("bad, why", [
    (ChunkSettings("tokens", 300), "1 to 256|3 to 256"),
    (ChunkSettings("semantic", overlap=10), "do not overlap"),
    (ChunkSettings("semantic", breakpoint=100), "percentile"),
    (ChunkSettings("words", breakpoint=90), "semantic strategy's"),
])
def test_settings_that_cannot_work_are_refused(bad, why):
    with pytest.raises(ValueError, match=why):
        bad.resolved()


@pytest.mark.slow
def test_token_lengths_match_the_transformers_tokenizer(python_docs):
    from transformers import AutoTokenizer

    from raglab.infra.packaged_models import minilm_path

    chunks = chunk_corpus(python_docs[:3], ChunkSettings("words"))
    texts = [c.indexed_text for c in chunks]
    ref = AutoTokenizer.from_pretrained(str(minilm_path()))
    expected = [len(ref(t, truncation=False)["input_ids"]) for t in texts]
    assert token_lengths(texts, load_tokenizer()) == expected
    assert max(expected) > 256  # the check has something to find on this corpus


def test_helpcenter_chunks_inherit_access(helpcenter):
    premium = [d for d in helpcenter if "premium" in d.access]
    assert len(premium) >= 3 and len(helpcenter) >= 15
    for c in chunk_corpus(premium, ChunkSettings("headings")):
        assert c.access == ("premium",)
    injected = [d.id for d in helpcenter if "ignore all previous instructions" in d.text.lower()]
    assert len(injected) == 2


# ---------------------------------------------------------------- records worked by hand


def test_word_chunks_of_a_hand_worked_page():
    # words: '#' 0-1, Intro 2-7, alpha 9-14, beta 15-19, gamma 20-25, delta 26-31; windows of 3 stepping 2
    doc = make_document("d.md", "# Intro\n\nalpha beta gamma delta\n")

    def chunk(n, a, b, indexed):
        return Chunk(f"d.md#{n}", "d.md", ("Intro",), a, b, doc.text[a:b], indexed, ("public",), "words")

    assert chunk_document(doc, ChunkSettings("words", 3, 1)) == [
        chunk(0, 0, 14, "# Intro alpha"), chunk(1, 9, 25, "alpha beta gamma"), chunk(2, 20, 31, "gamma delta")]
    prefixed = chunk_document(doc, ChunkSettings("words", 3, 1, prefix=True))
    assert [c.indexed_text for c in prefixed] == ["Intro: # Intro alpha", "Intro: alpha beta gamma",
                                                  "Intro: gamma delta"]


def test_a_chunk_record_round_trips_through_its_dict():
    small = Chunk("d#s/1", "d", ("D", "S"), 3, 9, "abcdef", "D > S: abcdef", ("premium",), "parent", "d#s")
    assert small.to_dict() == {"id": "d#s/1", "doc": "d", "heading": ["D", "S"], "start": 3, "end": 9,
                               "text": "abcdef", "indexed_text": "D > S: abcdef", "access": ["premium"],
                               "strategy": "parent", "parent": "d#s"}
    plain = Chunk("d#0", "d", (), 0, 1, "x", "x", ("public",), "words")
    assert "parent" not in plain.to_dict()
    for c in (small, plain):
        assert Chunk.from_dict(c.to_dict()) == c


def test_each_strategy_has_the_defaults_of_the_books_table():
    table = {"words": (150, 30), "chars": (500, 80), "large": (3000, 400), "headings": (150, 30),
             "recursive": (256, 32), "tokens": (256, 32), "semantic": (256, 0), "parent": (64, 16)}
    assert set(table) == set(STRATEGIES)
    for strategy, (size, overlap) in table.items():
        s = ChunkSettings(strategy).resolved()
        assert (s.size, s.overlap, s.breakpoint) == (size, overlap, 90 if strategy == "semantic" else None)
    assert ChunkSettings("words", prefix=True).name() == "words-150-30-prefix"
    assert ChunkSettings("semantic").name() == "semantic-256-0-p90"
    assert ChunkSettings("headings", 100, 0, prefix=True).label() == "headings 100/0 +prefix"
    assert ChunkSettings("semantic", breakpoint=75).record() == {"strategy": "semantic", "size": 256, "overlap": 0,
                                                                 "prefix": False, "breakpoint": 75}


def test_the_contextual_prefix_of_a_heading_path():
    assert prefix_for(("Built-in Types", "Truth Value Testing")) == "Built-in Types > Truth Value Testing: "
    assert prefix_for(("Guide",)) == "Guide: " and prefix_for(()) == ""


def test_section_strategies_and_missing_models_are_named_errors():
    doc = make_document("d.md", "# D\n\nSome text.\n")
    for strategy in ("headings", "parent"):
        with pytest.raises(ValueError, match=f"the {strategy} strategy cuts whole sections: use chunk_document"):
            spans_of(doc.text, ChunkSettings(strategy).resolved())
    with pytest.raises(ValueError, match="replaces the word windows only, not the 'chars' strategy"):
        chunk_document(doc, ChunkSettings("chars"), windows=lambda words, size, overlap: [words])
    with pytest.raises(ValueError, match="tokenizer="):
        chunk_document(doc, ChunkSettings("tokens"))


def test_two_documents_with_one_id_are_refused():
    doc = make_document("same.md", "# Same\n\nText.\n")
    with pytest.raises(RuntimeError, match="duplicate chunk id 'same.md#0'"):
        chunk_corpus([doc, doc], ChunkSettings("words"))
