"""Chunking: the course's word windows, offsets, stable ids, sections, tables, sentences."""
import hashlib
import re
import subprocess
import sys

import pytest

from raglab.book.chunkers import char_spans, pack
from raglab.book.chunking import STRATEGIES, ChunkSettings, chunk_corpus, chunk_document
from raglab.book.sections import split_sections
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.book.documents import load_folder, make_document
from raglab.infra.python_docs import python_docs_dir
from raglab.base.text import sentence_ends


def course_chunk_text(doc_id, text, max_words=150, overlap=30):
    """Reference: the course text's sliding word window, after its underline-rule cleaning."""
    text = re.sub(r"[=\-*~^]{4,}", " ", text)
    words, chunks, start = text.split(), [], 0
    while start < len(words):
        chunks.append((f"{doc_id}#{len(chunks)}", " ".join(words[start:start + max_words])))
        if start + max_words >= len(words):
            break
        start += max_words - overlap
    return chunks


@pytest.fixture(scope="module")
def real_pages():
    """Pages with many grid tables and deep headings, from the full docs."""
    return load_folder(python_docs_dir(), (".txt",), only=["library/stdtypes.txt", "library/datetime.txt",
                                                          "library/string.txt", "reference/datamodel.txt"])


@pytest.mark.parametrize("size,overlap", [(150, 30), (60, 0), (200, 199)])
def test_word_windows_match_the_course_reference(python_docs, size, overlap):
    for doc in python_docs:
        ours = [(c.id, c.indexed_text) for c in chunk_document(doc, ChunkSettings("words", size, overlap))]
        assert ours == course_chunk_text(doc.id, doc.text, size, overlap), doc.id


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
            heads = set(_independent_headings(doc.text))
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


def test_char_windows_respect_size_and_never_cut_a_word(python_docs):
    for strategy, size, overlap in [("chars", 500, 80), ("large", 3000, 400), ("chars", 120, 30)]:
        for doc in python_docs:
            spans = char_spans(doc.text, size, overlap)
            for (a, b), (a2, _) in zip(spans, spans[1:] + [(len(doc.text) + 1, 0)]):
                assert a == 0 or doc.text[a - 1].isspace(), (doc.id, a)
                assert b == len(doc.text) or doc.text[b].isspace(), (doc.id, b)
                assert b - a <= size or len(doc.text[a:b].split()) == 1
                assert a2 > a and (a2 > len(doc.text) or a2 >= b - overlap)


def test_char_windows_prefer_sentence_and_paragraph_ends(python_docs):
    ends = total = 0
    for doc in python_docs:
        spans = char_spans(doc.text, 500, 80)
        sentence = set(sentence_ends(doc.text))
        for _, b in spans[:-1]:
            total += 1
            ends += bool(b in sentence or re.compile(r"[ \t]*\n[ \t]*\n").match(doc.text, b))
    assert ends / total > 0.9


def test_sections_of_a_hand_worked_page():
    text = ("Guide\n*****\n\nIntro text.\n\nPart A\n======\n\nA text.\n\nDetail\n------\n\nD text.\n\n"
            "Part B\n======\n\n```\n# not a heading\n```\n")
    secs = split_sections(text, "Guide")
    assert [s.path for s in secs] == [("Guide",), ("Guide", "Part A"), ("Guide", "Part A", "Detail"),
                                      ("Guide", "Part B")]
    assert text[secs[1].start:].startswith("Part A") and secs[-1].end == len(text)
    md = "# Title\n\nx\n\n## One\n\ny\n\n### Deep\n\nz\n\n## Two\n\nw\n"
    assert [s.path for s in split_sections(md, "Title")] == [("Title",), ("Title", "One"),
                                                             ("Title", "One", "Deep"), ("Title", "Two")]


def test_pack_overlaps_whole_units():
    units = [(0, 9, 50), (10, 19, 50), (20, 29, 50), (30, 39, 50)]
    assert pack(units, 100, 50) == [(0, 19), (10, 29), (20, 39)]
    assert pack(units, 100, 0) == [(0, 19), (20, 39)]
    assert pack([(0, 5, 500)], 100, 10) == [(0, 5)]


def _independent_headings(text):
    """Offsets of underlined or '#' headings, found without raglab."""
    out, pos, lines = [], 0, text.split("\n")
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (line.strip() and not line[0].isspace() and re.fullmatch(r"([*=\-~^])\1+", nxt)
                and len(nxt) == len(line.rstrip())) or re.match(r"#{1,6} ", line):
            out.append(pos)
        pos += len(line) + 1
    return out


def _independent_tables(text):
    """Spans of grid tables and pipe tables: runs of lines starting with '+' or '|'."""
    spans, start, pos = [], None, 0
    for line in text.split("\n") + [""]:
        is_row = line.strip()[:1] in ("+", "|")
        if is_row and start is None:
            start = pos + len(line) - len(line.lstrip())
        if not is_row and start is not None:
            spans.append((start, pos - 1))
            start = None
        pos += len(line) + 1
    return [s for s in spans if text[s[0]:s[1]].count("\n") >= 2]


def test_heading_chunks_stay_in_one_section_and_keep_tables_and_sentences(real_pages, helpcenter):
    n_tables = n_cut = n_chunks = 0
    for doc in real_pages + helpcenter:
        chunks = chunk_document(doc, ChunkSettings("headings"))
        heads = _independent_headings(doc.text)
        tables = _independent_tables(doc.text)
        n_tables += len(tables)
        for c in chunks:
            assert not [h for h in heads if c.start < h < c.end], (c.id, "straddles a heading")
            for a, b in tables:
                assert b <= c.start or a >= c.end or (c.start <= a and b <= c.end), (c.id, "cuts a table")
            after = doc.text[c.end:c.end + 200]
            clean_end = (re.search(r"[.!?|+][\"')\]]*$", doc.text[c.end - 5:c.end]) or re.match(r"[ \t]*(\n[ \t]*\n|\n?$)", after)
                         or any(c.end < h <= c.end + len(after) and not doc.text[c.end:h].strip() for h in heads))
            if not clean_end:  # allowed only inside a sentence longer than the window itself
                n_cut += 1
                left = max(doc.text.rfind(". ", 0, c.end), doc.text.rfind("\n\n", 0, c.end))
                right = min(x for x in (doc.text.find(". ", c.end), doc.text.find("\n\n", c.end), len(doc.text)) if x >= 0)
                assert len(doc.text[left:right].split()) > 150, (c.id, doc.text[c.end - 40:c.end + 40])
        n_chunks += len(chunks)
    assert n_cut <= 0.01 * n_chunks
    assert n_tables > 20


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
