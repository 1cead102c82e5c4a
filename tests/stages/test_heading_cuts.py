"""The heading-aware chunker never cuts a sentence or a table in half: every chunk ends at sentence
punctuation, before a blank line or at the page's end, unless one sentence or block alone is longer than
the window. Checked on every chunk of the small profile, by a checker that is itself shown to catch a
cut at a hard-wrapped line end and one inside a table."""
import re

import pytest

from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.course.artifacts import SENTENCE_BOUNDARY, following

# A chunk ends cleanly at sentence punctuation (closing quotes and brackets allowed). A line end proves
# nothing: the docs are hard-wrapped.
SENTENCE_END = re.compile(r"[.!?:;][\"')\]]*$")
TABLE_ROW = re.compile(r"(?:^|\n)[ \t]*(?:\||\+[-=])[^\n]*$")     # the last line is a grid or pipe table row
HARD_WRAP = re.compile(r"[a-z,]\n[ \t]*[a-z]")                    # a line end inside a sentence of a wrapped paragraph


def cut_in_half(text: str, after: str, size: int) -> str | None:
    """What a chunk's end cuts in half ('a table', 'a sentence'), or None if it ends cleanly or inside
    one sentence or block longer than ``size`` words; ``after`` runs to the next boundary."""
    if not after.strip():                         # a blank line or the document's end follows
        return None
    if TABLE_ROW.search(text):
        return "a table"
    if SENTENCE_END.search(text):
        return None
    starts = [m.end() for m in SENTENCE_BOUNDARY.finditer(text)]
    unit = text[starts[-1] if starts else 0:] + after
    return None if len(unit.split()) > size else "a sentence"


@pytest.fixture(scope="module")
def heading_chunks(python_docs):
    texts = {d.id: d.text for d in python_docs}
    return [(c, texts[c.doc]) for s in (ChunkSettings("headings"), ChunkSettings("headings", prefix=True))
            for c in chunk_corpus(python_docs, s)]


def test_the_checker_on_hand_made_ends():
    assert cut_in_half("It returns the\nvalue", "\nof x.", 150) == "a sentence"
    assert cut_in_half("It returns x.", " Then", 150) is None
    assert cut_in_half("It returns the", "\n\n", 150) is None                # a blank line follows
    assert cut_in_half("| a | b |", "\n| c | d |", 150) == "a table"
    assert cut_in_half("one " * 200, "two", 150) is None             # one sentence longer than the window


def test_no_heading_chunk_cuts_a_sentence_or_a_table(heading_chunks):
    cut = [(c.id, what) for c, text in heading_chunks
           if (what := cut_in_half(c.text, following(text, c.end), 150))]
    assert not cut, cut[:5]
    assert len(heading_chunks) > 500


def test_a_cut_at_a_hard_wrapped_line_end_is_caught(heading_chunks):
    c, text = next((c, t) for c, t in heading_chunks if c.id == "library/json.txt#basic-usage:1")
    m = HARD_WRAP.search(c.text, len(c.text) // 3)
    end = c.start + m.start() + 1
    assert following(text, end).startswith("\n") and following(text, end).strip()   # a line end; the sentence goes on
    assert cut_in_half(text[c.start:end], following(text, end), 150) == "a sentence"


def test_a_cut_inside_a_table_is_caught(heading_chunks):
    row_end = re.compile(r"\|\n(?=[ \t]*[+|])")                      # a table row with another row below it
    c, text = next((c, t) for c, t in heading_chunks if row_end.search(c.text))
    end = c.start + row_end.search(c.text).start() + 1
    assert cut_in_half(text[c.start:end], following(text, end), 150) == "a table"
