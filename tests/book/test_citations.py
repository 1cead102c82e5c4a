"""The citation check (``raglab.book.citations``): every number or chunk id an answer cites must name one of the
sources it was given; an invalid citation refuses the answer (``invalid-citation``) and so does an answer with no
valid citation (``no-citation``). The reference is each verdict worked out by hand from that rule and written out in
the test, over two sources: ``[1]`` is chunk ``a.md#x``, ``[2]`` is chunk ``b.md#y``."""
import pytest

from raglab.book.chunking import Chunk
from raglab.book.citations import CitationCheck, check_citations, defuse, parse_citations
from raglab.book.prompt import Source


def _chunk(cid, text, doc="a.md"):
    return Chunk(cid, doc, ("A",), 0, len(text), text, text, ("public",), "words")



def test_citation_forms():
    assert parse_citations("A [1]. B [2,3]. C [a.md#x]. D [not a citation] [x].") == ["1", "2", "3", "a.md#x"]
    sources = [Source(1, _chunk("a.md#x", "t")), Source(2, _chunk("b.md#y", "t"))]
    check = check_citations("A [a.md#x]. B [2]. C [c.md#z].", sources)
    assert [s.n for s in check.valid] == [1, 2] and check.invalid == ["c.md#z"]


ONE = Source(1, _chunk("a.md#x", "Lists are mutable."))
TWO = Source(2, _chunk("b.md#y", "Tuples are not.", doc="b.md"))
SOURCES = [ONE, TWO]


@pytest.mark.parametrize("answer,valid,invalid,reason", [
    ("Lists are mutable [1].", [1], [], None),
    ("Lists are mutable [ 1 ].", [1], [], None),                       # spaces inside the brackets
    ("Both [1, 2].", [1, 2], [], None),
    ("Tuples [2]. Lists [1]. Tuples again [2].", [2, 1], [], None),     # first cited first, each once
    ("Tuples are not [b.md#y].", [2], [], None),                       # a chunk id names its source
    ("Lists are mutable [3].", [], ["3"], "invalid-citation"),         # beyond the two sources
    ("Lists are mutable [0].", [], ["0"], "invalid-citation"),         # sources are numbered from 1
    ("Lists are mutable [1] [99].", [1], ["99"], "invalid-citation"),  # one invalid refuses the whole answer
    ("Both [1, 7].", [1], ["7"], "invalid-citation"),
    ("See [c.md#z].", [], ["c.md#z"], "invalid-citation"),             # an id that was not retrieved
    ("Lists are mutable.", [], [], "no-citation"),
    ("Lists are [mutable] [x] [1, x].", [], [], "no-citation"),        # brackets that are no citation
])
def test_hand_worked_verdicts(answer, valid, invalid, reason):
    check = check_citations(answer, SOURCES)
    assert [s.n for s in check.valid] == valid
    assert check.invalid == invalid
    assert check.reason == reason


def test_a_valid_citation_is_the_source_itself():
    assert check_citations("Yes [2].", SOURCES).valid == [TWO]


def test_without_sources_every_citation_is_invalid():
    check = check_citations("Lists are mutable [1].", [])
    assert check.valid == [] and check.invalid == ["1"] and check.reason == "invalid-citation"


def test_the_reason_from_the_lists_alone():
    assert CitationCheck([ONE], []).reason is None
    assert CitationCheck([ONE], ["9"]).reason == "invalid-citation"
    assert CitationCheck([], ["9"]).reason == "invalid-citation"
    assert CitationCheck([], []).reason == "no-citation"


def test_is_invalid_is_asked_about_each_citation_with_the_source_it_names():
    asked = []
    check_citations("A [1]. B [99]. C [b.md#y]. D [1].", SOURCES, is_invalid=lambda t, s: asked.append((t, s)))
    assert asked == [("1", ONE), ("99", None), ("b.md#y", TWO), ("1", ONE)]


def test_is_invalid_decides_what_is_invalid():
    strict = check_citations("A [1]. B [b.md#y].", SOURCES, is_invalid=lambda t, s: s is None or not t.isdigit())
    assert [s.n for s in strict.valid] == [1] and strict.invalid == ["b.md#y"]
    refuse_all = check_citations("A [1]. B [2].", SOURCES, is_invalid=lambda t, s: True)
    assert refuse_all.valid == [] and refuse_all.invalid == ["1", "2"]


def test_a_citation_let_through_that_names_no_source_is_not_valid():
    lenient = check_citations("A [1]. B [99].", SOURCES, is_invalid=lambda t, s: False)
    assert [s.n for s in lenient.valid] == [1] and lenient.invalid == [] and lenient.reason is None
    assert check_citations("B [99].", SOURCES, is_invalid=lambda t, s: False).reason == "no-citation"


def test_parse_citations_reads_numbers_and_ids_in_order():
    assert parse_citations("X [3] y [1,2 , 4] z [lib/json.txt#c4] w [2].") == \
        ["3", "1", "2", "4", "lib/json.txt#c4", "2"]
    assert parse_citations("[see a.md#x] [1.5] [-1] [] [a b#c]") == []


def test_defused_brackets_cite_nothing():
    text = "Use a list [1, 2] or [a.md#x], not [x]."
    assert defuse(text) == "Use a list ［1, 2］ or ［a.md#x］, not [x]."
    assert parse_citations(defuse(text)) == [] and check_citations(defuse(text), SOURCES).reason == "no-citation"
