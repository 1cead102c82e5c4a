"""A page's structure (raglab/book/sections.py): headings, the sections they open and their heading paths,
the slugs of heading ids, and the units a section is cut into. References: small pages whose headings,
sections and units are worked out by hand in the test, and on real pages a heading and table finder written
here without raglab (heading-aware chunks never straddle a heading, never cut a table, end on a sentence)."""
import re

import pytest

from raglab.book.chunking import ChunkSettings, chunk_document
from raglab.book.sections import Section, find_headings, heading_at, section_units, slugify, split_sections
from raglab.book.documents import load_folder
from raglab.infra.python_docs import python_docs_dir
from tests.book.headings_reference import independent_headings


@pytest.fixture(scope="module")
def real_pages():
    """Pages with many grid tables and deep headings, from the full docs."""
    return load_folder(python_docs_dir(), (".txt",), only=["library/stdtypes.txt", "library/datetime.txt",
                                                          "library/string.txt", "reference/datamodel.txt"])


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
        heads = independent_headings(doc.text)
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


# ---------------------------------------------------------------- worked by hand


def test_slugs_of_hand_picked_titles():
    assert slugify('Boolean Operations --- "and", "or"') == "boolean-operations-and-or"
    assert slugify("  What's new in 3.11?  ") == "what-s-new-in-3-11"
    assert slugify("Café au lait") == "caf-au-lait"          # letters outside a-z are separators
    assert slugify("!!!") == "section"


def test_what_counts_as_a_heading():
    text = ("Title\n=====\n\n"
            "short\n===\n\n"                   # an underline shorter than its title: no heading
            "  indented\n  ========\n\n"       # an indented line: no heading
            "| a | b |\n=========\n\n"         # a table row: no heading
            "~~~\n# fenced\n~~~\n\n"           # '#' inside a code fence: no heading
            "Real\n~~~~\n\n"                   # a '~~~~' underline is not a fence
            "## Mark ##\n\nafter\n")           # Markdown's closing hashes are not part of the title
    assert find_headings(text) == [(0, ("_", "="), "Title"), (text.index("Real"), ("_", "~"), "Real"),
                                   (text.index("## Mark"), ("#", 2), "Mark")]


def test_underline_levels_follow_first_appearance_and_the_title_leads_every_path():
    text = "Intro.\n\nA\n===\n\na\n\nB\n---\n\nb\n\nC\n===\n\nc\n"
    a, b, c = text.index("A\n"), text.index("B\n"), text.index("C\n")
    assert split_sections(text, "Doc") == [Section(("Doc",), 0, a), Section(("Doc", "A"), a, b),
                                           Section(("Doc", "A", "B"), b, c), Section(("Doc", "C"), c, len(text))]
    assert [s.path for s in split_sections(text)] == [(), ("A",), ("A", "B"), ("C",)]
    # blanks before the first heading are no section; a page without headings is one section
    assert [s.path for s in split_sections("\n\nA\n===\n\na\n", "Doc")] == [("Doc", "A")]
    assert split_sections("Just text.", "Doc") == [Section(("Doc",), 0, 10)]


def test_heading_at_gives_the_section_holding_an_offset():
    text = "Intro.\n\nA\n===\n\na\n\nB\n---\n\nb\n"
    sections = split_sections(text, "Doc")
    assert heading_at(sections, 0) == ("Doc",)
    assert heading_at(sections, text.index("a\n")) == ("Doc", "A")
    assert heading_at(sections, text.index("B")) == ("Doc", "A", "B")
    assert heading_at(sections, len(text) - 1) == ("Doc", "A", "B")
    assert heading_at([], 5) == ()


def test_section_units_split_long_paragraphs_at_sentences_and_keep_tables_whole():
    text = ("One two three.\n\n"
            "Four five. Six seven eight. Nine.\n\n"
            "+---+---+\n| a | b |\n+---+---+\n")

    def at(piece, words):
        return (text.index(piece), text.index(piece) + len(piece), words)

    # a window of 3 words: the first paragraph fits, the second is cut at its sentence ends, and the table
    # (7 words: its borders count) stays whole
    assert section_units(text, 0, len(text), 3) == [
        at("One two three.", 3), at("Four five.", 2), at("Six seven eight.", 3), at("Nine.", 1),
        at("+---+---+\n| a | b |\n+---+---+", 7)]
    # a window of 10 words keeps every paragraph whole
    assert section_units(text, 0, len(text), 10) == [
        at("One two three.", 3), at("Four five. Six seven eight. Nine.", 6), at("+---+---+\n| a | b |\n+---+---+", 7)]


def test_a_sentence_longer_than_the_window_is_cut_at_clauses_then_words():
    text = "alpha beta gamma; delta epsilon."
    assert section_units(text, 0, len(text), 3) == [(0, 17, 3), (18, 32, 2)]      # at the ';'
    text = "a b c d e f g"
    assert section_units(text, 0, len(text), 3) == [(0, 5, 3), (6, 11, 3), (12, 13, 1)]
