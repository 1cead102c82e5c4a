"""The strategies as text-to-span functions (raglab/book/chunkers.py): word windows, character windows,
``pack``, a learner's word windows (``spans_of_windows``) and a learner's spans checked (``checked_spans``).
References: the course's own ``chunk_text`` (a plain loop over ``str.split``) on every page, small texts whose
spans are worked out by hand in the test, properties checked on every page (character windows inside their
size, never cutting a word, mostly ending on sentences) and, on random texts, a character-by-character scan
that every word lies in some span."""
import random
import re

import numpy as np
import pytest

from raglab.book.chunkers import char_spans, checked_spans, pack, spans_of_windows, word_spans
from raglab.book.chunking import ChunkSettings, chunk_corpus, chunk_document
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


@pytest.mark.parametrize("size,overlap", [(150, 30), (60, 0), (200, 199)])
def test_word_windows_match_the_course_reference(python_docs, size, overlap):
    for doc in python_docs:
        ours = [(c.id, c.indexed_text) for c in chunk_document(doc, ChunkSettings("words", size, overlap))]
        assert ours == course_chunk_text(doc.id, doc.text, size, overlap), doc.id


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


def test_pack_overlaps_whole_units():
    units = [(0, 9, 50), (10, 19, 50), (20, 29, 50), (30, 39, 50)]
    assert pack(units, 100, 50) == [(0, 19), (10, 29), (20, 39)]
    assert pack(units, 100, 0) == [(0, 19), (20, 39)]
    assert pack([(0, 5, 500)], 100, 10) == [(0, 5)]


def course_windows(words, size=150, overlap=30):
    """The course's chunk_text, written as a learner would."""
    out, start = [], 0
    while start < len(words):
        out.append(words[start:start + size])
        if start + size >= len(words):
            break
        start += size - overlap
    return out


def test_a_correct_chunker_gives_raglabs_word_windows(python_docs):
    assert chunk_corpus(python_docs, ChunkSettings("words"), windows=course_windows) == \
        chunk_corpus(python_docs, ChunkSettings("words"))
    text = "==== rule\nalpha beta gamma delta epsilon"
    assert spans_of_windows(text, 2, 1, course_windows) == word_spans(text, 2, 1)


def test_a_chunker_that_drops_the_tail_loses_it_and_bad_windows_are_refused():
    text = "one two three four five six seven"
    dropped = spans_of_windows(text, 3, 0, lambda w, s, o: [w[i:i + s] for i in range(0, len(w) - s, s)])
    assert text[dropped[-1][1]:].split() == ["seven"]             # the last word is in no window
    with pytest.raises(ValueError, match="not one of the words the chunker was given"):
        spans_of_windows(text, 3, 0, lambda w, s, o: [[x.upper() for x in w]])
    with pytest.raises(ValueError, match="not a run of consecutive words"):
        spans_of_windows(text, 3, 0, lambda w, s, o: [w[::2]])


# ---------------------------------------------------------------- worked by hand, and properties


def test_word_windows_of_a_hand_worked_text_skip_the_underline_rule():
    # words: Title 0-5 (the rule ===== at 6-11 is no word), alpha 12-17, beta 18-22, gamma 24-29, delta 30-35;
    # windows of 3 words stepping 2: Title alpha beta, then beta gamma delta
    text = "Title\n=====\nalpha beta  gamma\ndelta"
    assert word_spans(text, 3, 1) == [(0, 22), (18, 35)]
    assert word_spans(text, 10, 2) == [(0, 35)]           # fewer words than the window: one span
    assert word_spans("  \n ", 3, 1) == [] and word_spans("", 3, 0) == []


def test_char_windows_of_a_hand_worked_text():
    # One 0-3, two 4-7, three. 8-14 | Four 15-19, five 20-24, six. 25-29 | \n\n | Seven 31-36, eight 37-42,
    # nine 43-47, ten. 48-52. Windows of 20 characters stepping back 5:
    #   from 0 (limit 20): no paragraph end in 10..20, the sentence end 14 is -> "One two three."
    #   back to 9: no sentence starts in 9..14, the next word start is 15 -> from 15 (limit 35): the
    #   paragraph end 29 -> "Four five six."
    #   back to 24: the next word start is 25 -> from 25 (limit 45): no paragraph or sentence end in 35..45,
    #   the last word end 42 -> "six.\n\nSeven eight"
    #   back to 37 -> from 37 (limit 57): past the text's end -> "eight nine ten."
    text = "One two three. Four five six.\n\nSeven eight nine ten."
    assert char_spans(text, 20, 5) == [(0, 14), (15, 29), (25, 42), (37, 52)]


def test_a_word_longer_than_the_char_window_is_its_own_window():
    text = "a " + "x" * 30 + " b"                     # a 0-1, xxx... 2-32, b 33-34
    assert char_spans(text, 10, 0) == [(0, 1), (2, 32), (33, 34)]
    assert char_spans(" \n ", 10, 0) == []


def test_a_page_that_ends_on_a_word_longer_than_the_char_window():
    text = "a " + "x" * 30                           # a 0-1, xxx... 2-32: the long word is the last
    assert char_spans(text, 10, 0) == [(0, 1), (2, 32)]
    assert char_spans(text, 10, 3) == [(0, 1), (2, 32)]           # an overlap cannot reach back past the long word
    assert char_spans(text + " b", 10, 0) == [(0, 1), (2, 32), (33, 34)]


def random_text(rng):
    """A few paragraphs of words and sentences, now and then an underline rule and a word longer than some
    windows; the last word is short."""
    vocab = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
             "a", "of", "the", "Mu.", "Nu!", "Xi?", "(omicron)", "pi,", "rho;", "sigma-tau", "x" * 25]
    paras = []
    for _ in range(rng.randint(1, 5)):
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 60))]
        if rng.random() < 0.3:
            words.insert(0, "Heading\n=======\n")
        paras.append(" ".join(words))
    return "\n\n".join(paras) + " end."


def uncovered(text, spans):
    """The words (underline rules aside) of ``text`` with a character outside every span."""
    covered = np.zeros(len(text), dtype=bool)
    for a, b in spans:
        covered[a:b] = True
    return [m.group() for m in re.finditer(r"\S+", text)
            if not covered[m.start():m.end()].all() and not re.fullmatch(r"[=\-*~^]{4,}", m.group())]


@pytest.mark.parametrize("size, overlap", [(1, 0), (5, 2), (12, 0), (40, 39)])
def test_word_and_char_windows_cover_every_word_in_order_on_random_texts(size, overlap):
    rng = random.Random(size * 100 + overlap)
    for _ in range(60):
        text = random_text(rng)
        words = [m.span() for m in re.finditer(r"\S+", text) if not re.fullmatch(r"[=\-*~^]{4,}", m.group())]
        # the reference word windows: a plain loop over the words' spans
        ref, start = [], 0
        while True:
            ref.append((words[start][0], words[min(start + size, len(words)) - 1][1]))
            if start + size >= len(words):
                break
            start += size - overlap
        assert word_spans(text, size, overlap) == ref
        for spans in (word_spans(text, size, overlap), char_spans(text, size * 6, overlap * 3)):
            assert all(0 <= a < b <= len(text) for a, b in spans)
            assert [a for a, _ in spans] == sorted({a for a, _ in spans})       # strictly in order of start
            assert uncovered(text, spans) == []


def test_checked_spans_keep_a_learners_good_spans_and_drop_blank_ones():
    text = "ab  cd"
    assert checked_spans("mine", lambda t: [(0, 2), (2, 4), (4, 6)], text) == [(0, 2), (4, 6)]
    assert checked_spans("mine", lambda t: np.array([[0, 6]]), text) == [(0, 6)]      # numpy integers are fine
    assert all(type(x) is int for x in checked_spans("mine", lambda t: np.array([[0, 6]]), text)[0])
    with pytest.raises(ValueError, match=r"chunker 'mine': chunk 1 is \(4, 7\), outside the page's 0\.\.6"):
        checked_spans("mine", lambda t: [(0, 2), (4, 7)], text)
