"""bench/chunk_libraries.py: the three splitters' spans are honest offsets within the capacity, and the
boundary agreement is computed correctly."""
import sys
from pathlib import Path

import pytest

from raglab.infra.tokenizer import token_lengths

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from chunk_libraries import (  # noqa: E402  (the bench folder is not a package)
    LIBRARIES,
    agreement,
    boundaries,
    boundary_scores,
    locate_chunks,
    word_piece_tokenizer,
)

CAPACITY = 40      # small, so that a few paragraphs are cut into several chunks

TEXT = """Recursive splitters
===================

A recursive splitter first tries to cut a text at blank lines. When a paragraph is still too long for the
capacity, it cuts that paragraph at line breaks, then at sentence ends, then at spaces. The café serves
résumés — and naïve tokenizers must still count every piece correctly.

Short paragraph.

Every chunk must be a span of the original text, so that a citation can point at the characters it came
from. The offsets are character offsets, not byte offsets: a non-ASCII letter such as é is one character.
Overlapping chunks are harder to locate, because the same words occur in two chunks.

    def example():
        return "code blocks keep their indentation"

The last paragraph ends here. It has a few sentences. Each one is short. None of them is long.
"""


@pytest.mark.parametrize("library", list(LIBRARIES))
def test_spans_are_in_order_inside_the_text_and_within_capacity(library):
    spans = LIBRARIES[library](CAPACITY, 0)(TEXT)
    assert len(spans) > 3, "the text should be cut into several chunks"
    assert all(s.found for s in spans)
    assert all(0 <= s.start < s.end <= len(TEXT) for s in spans)
    assert all(a.start < b.start and a.end <= b.start for a, b in zip(spans, spans[1:])), "in order, no overlap"
    assert all(TEXT[s.start:s.end] == s.text for s in spans)
    assert max(token_lengths([s.text for s in spans], word_piece_tokenizer())) <= CAPACITY + 2   # + [CLS], [SEP]
    # no words lost: everything but whitespace is inside some chunk
    assert "".join("".join(s.text.split()) for s in spans) == "".join(TEXT.split())


def test_boundary_scores():
    spans = LIBRARIES["semchunk"](CAPACITY, 0)(TEXT)
    same = agreement([TEXT], [spans], [spans], tolerance=0)
    assert same["f1_exact"] == same["f1_tol"] == same["identical_spans_share"] == 1.0
    assert same["boundaries_a"] == len(spans) - 1 == len(boundaries(TEXT, spans))   # the page end is left out

    # hand-worked: 10 and 30 agree, 20 and 25 do not: 2 of 3 on either side
    assert boundary_scores([10, 20, 30], [10, 25, 30], tolerance=0) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    assert boundary_scores([10, 20, 30], [10, 25, 30], tolerance=5) == (1.0, 1.0, 1.0)
    # one-to-one: a predicted boundary matches at most one reference boundary
    assert boundary_scores([10, 12], [11], tolerance=5) == pytest.approx((1.0, 0.5, 2 / 3))
    # a shifted boundary list: every end moved by 3 characters
    shifted = [e + 3 for e in boundaries(TEXT, spans)]
    assert boundary_scores(boundaries(TEXT, spans), shifted, tolerance=0) == (0.0, 0.0, 0.0)
    assert boundary_scores(boundaries(TEXT, spans), shifted, tolerance=3) == (1.0, 1.0, 1.0)


def test_locate_chunks_finds_repeats_in_order_and_flags_strangers():
    text = "ab ab ab"
    spans = locate_chunks(text, ["ab", "ab ab", "not here", "ab"])
    assert [(s.start, s.end, s.found) for s in spans] == [(0, 2, True), (3, 8, True), (3, 11, False), (6, 8, True)]
    # chunks that do not overlap are looked for after the previous chunk, not on an earlier copy of their words
    text = "See: Fails. Then Fails."
    chunks = ["See: Fails. Then", "Fails."]
    assert [s.start for s in locate_chunks(text, chunks, overlapping=False)] == [0, 17]
    assert [s.start for s in locate_chunks(text, chunks, overlapping=True)] == [0, 5]   # the ambiguity overlap brings
