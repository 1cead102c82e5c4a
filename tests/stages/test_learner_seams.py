"""The library's seams where a learner's function replaces a stage (``raglab.course.exercises.stage``
wires them in the notebooks; the retriever's and the assistant's are the course layer's, tested in
tests/course/test_stages.py): each gives raglab's own result for a correct function, carries a buggy
one's bug through to the result, and refuses output it cannot lay back onto the index."""
import random
from types import SimpleNamespace

import numpy as np
import pytest

from raglab.book.chunkers import spans_of_windows, word_spans
from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.book.memory_index import access_mask, rule_mask


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


def test_a_learners_access_rule_gives_the_mask_and_bad_rows_are_refused():
    rng = random.Random(3)
    groups = ["public", "premium", "staff"]
    chunks = [SimpleNamespace(access=tuple(rng.sample(groups, rng.randint(1, 2)))) for _ in range(50)]

    def by_sets(access, user):
        return [i for i, a in enumerate(access) if set(a) & (set(user) | {"public"})]

    for user in [None, ("premium",), ("staff", "premium")]:
        assert np.array_equal(rule_mask(chunks, user, by_sets), access_mask(chunks, user))
    forgets_public = rule_mask(chunks, None, lambda access, user: [i for i, a in enumerate(access) if set(a) & user])
    assert not forgets_public.any()
    with pytest.raises(ValueError, match="not a row number from 0 to 49"):
        rule_mask(chunks, None, lambda access, user: [50])
