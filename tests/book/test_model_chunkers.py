"""The strategies that need the model (raglab/book/model_chunkers.py): token windows, the recursive splitter and
semantic breakpoints, each handed a fake tokenizer (whitespace words as tokens, a long word cut into pieces of a
few characters, with character offsets and the two special tokens) and a hand-made embedding function instead
of MiniLM. References: token windows computed by a plain loop over the words, LangChain's splitter built here
with the same count, semantic cuts placed where the hand-made embedding changes topic (or where the size is
reached), spans worked out by hand, and the properties every strategy is held to: spans inside the text, in
order, covering every word. The one test that reads the real tokenizer (moved here) checks the same through
``chunk_document``."""
import random
import re
from types import SimpleNamespace

import numpy as np
import pytest

from raglab.base.text import blank_rules
from raglab.book.chunking import ChunkSettings, chunk_document
from raglab.book.documents import Document
from raglab.book.model_chunkers import (
    RECURSIVE_SEPARATORS,
    recursive_spans,
    semantic_spans,
    sentence_pieces,
    token_spans,
)
from raglab.infra.tokenizer import load_tokenizer


class FakeTokenizer:
    """Whitespace-separated words as tokens, a word longer than ``piece`` characters cut into pieces of
    ``piece`` (like word pieces); ``encode`` adds [CLS] and [SEP] (offsets (0, 0)) unless told not to,
    as the model's tokenizer does."""

    def __init__(self, piece: int | None = None):
        self.piece = piece

    def encode(self, text: str, add_special_tokens: bool = True):
        offsets = []
        for m in re.finditer(r"\S+", text):
            step = self.piece or len(m.group())
            offsets += [(a, min(a + step, m.end())) for a in range(m.start(), m.end(), step)]
        ids = [sum(map(ord, text[a:b])) % 30000 for a, b in offsets]
        if add_special_tokens:
            offsets, ids = [(0, 0)] + offsets + [(0, 0)], [101] + ids + [102]
        return SimpleNamespace(ids=ids, offsets=offsets)

    def encode_batch(self, texts):
        return [self.encode(t) for t in texts]


def words_of(text):
    """The spans of the words of ``text`` (underline rules aside)."""
    return [m.span() for m in re.finditer(r"\S+", blank_rules(text))]


def check_properties(text, spans, tokenizer=None, size=None, overlapping=True):
    """Spans inside the text, non-empty, in order of start (never overlapping unless allowed), every word
    in some span; with a size, no span over ``size`` tokens, the two special ones included."""
    assert all(0 <= a < b <= len(text) for a, b in spans)
    assert [a for a, _ in spans] == sorted({a for a, _ in spans})
    if not overlapping:
        assert all(b <= a2 for (_, b), (a2, _) in zip(spans, spans[1:]))
    covered = np.zeros(len(text), dtype=bool)
    for a, b in spans:
        covered[a:b] = True
    assert [text[a:b] for a, b in words_of(text) if not covered[a:b].all()] == []
    if size is not None:
        assert all(len(tokenizer.encode(text[a:b]).ids) <= size for a, b in spans)


def random_text(rng, long_words=True):
    """Paragraphs of sentences; some words long enough to be cut into pieces by ``FakeTokenizer(3)``. No word
    is a single letter: "a." would be a list label, not a sentence's end (``raglab.base.text.sentence_ends``)."""
    vocab = ["cat", "dog", "tax", "fee", "an", "the", "of", "purrs", "sleeps", "payment", "refund", "invoice"]
    if long_words:
        vocab += ["extraordinarily", "tokenization"]
    paras = []
    for _ in range(rng.randint(1, 4)):
        sentences = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 12))).capitalize() + "."
                     for _ in range(rng.randint(1, 6))]
        paras.append(" ".join(sentences))
    return "\n\n".join(paras)


# ---------------------------------------------------------------- token windows


def reference_token_windows(text, tokenizer, size, overlap):
    """Windows of whole words by a plain loop: from a word, take the next words while their tokens fit in
    ``size - 2``; the next window starts at the first word at least ``overlap`` tokens before the end (and
    after this window's start). Only for texts whose every word fits in a window."""
    words = words_of(text)
    counts = [len(tokenizer.encode(text[a:b], add_special_tokens=False).ids) for a, b in words]
    first = [sum(counts[:w]) for w in range(len(words) + 1)]          # the token each word starts at
    spans, s = [], 0
    while True:
        e, used = s, 0
        while e < len(words) and used + counts[e] <= size - 2:
            used, e = used + counts[e], e + 1
        spans.append((words[s][0], words[e - 1][1]))
        if e == len(words):
            return spans
        s = next(w for w in range(s + 1, e + 1) if first[w] >= first[e] - overlap)


def test_token_windows_of_a_hand_worked_text():
    tok = FakeTokenizer()
    # one token a word: windows of 3 tokens (5 with [CLS] and [SEP]) stepping back 1: a b c, c d e, e f g
    assert token_spans("a b c d e f g", 5, 1, tok) == [(0, 5), (4, 9), (8, 13)]
    # the underline rule is no token: Title 0-5, x 12-13, y 14-15
    assert token_spans("Title\n=====\nx y", 4, 0, tok) == [(0, 13), (14, 15)]
    assert token_spans(" \n ", 5, 1, tok) == []


def test_token_windows_end_on_words_unless_a_word_fills_the_window():
    tok = FakeTokenizer(piece=4)      # tokenization: toke 0-4, niza 4-8, tion 8-12; is 13-15; fun 16-19
    text = "tokenization is fun"
    assert token_spans(text, 6, 0, tok) == [(0, 15), (16, 19)]           # 4 tokens: tokenization is | fun
    assert token_spans(text, 5, 0, tok) == [(0, 12), (13, 19)]           # 3 tokens: the word alone fits
    # 2 tokens: the word is longer than the window, so it is cut, and the next window starts inside it
    assert token_spans(text, 4, 0, tok) == [(0, 8), (8, 15), (16, 19)]


@pytest.mark.parametrize("piece", [None, 3])
@pytest.mark.parametrize("size, overlap", [(3, 0), (8, 2), (12, 5), (40, 10)])
def test_token_windows_equal_a_plain_loop_over_words_on_random_texts(piece, size, overlap):
    tok, rng = FakeTokenizer(piece), random.Random(size * 10 + overlap)
    for _ in range(40):
        # with pieces of 3 characters, a word of up to 15 letters is 5 tokens: it fits a window of 8 and more
        text = random_text(rng, long_words=piece is None or size >= 8)
        spans = token_spans(text, size, overlap, tok)
        if piece is None or size >= 8:
            assert spans == reference_token_windows(text, tok, size, overlap)
        check_properties(text, spans, tok, size)


# ---------------------------------------------------------------- the recursive splitter


def test_recursive_chunks_of_a_hand_worked_text():
    tok = FakeTokenizer()
    # paragraphs first: 3 words, then 4 (the window holds 6 - 2 = 4), then 1
    text = "one two three.\n\nfour five six seven.\n\neight."
    assert [text[a:b] for a, b in recursive_spans(text, 6, 0, tok)] == ["one two three.", "four five six seven.",
                                                                       "eight."]
    # one paragraph of 6 words in windows of 4 repeating 1: a b c d, d e f
    assert recursive_spans("a b c d e f", 6, 1, tok) == [(0, 7), (6, 11)]
    # a repeated sentence: the second chunk is the second copy, not the first one again
    text = "same words here.\n\nsame words here."
    assert recursive_spans(text, 5, 0, tok) == [(0, 16), (18, 34)]


@pytest.mark.parametrize("size, overlap", [(6, 0), (10, 3), (30, 8)])
def test_recursive_chunks_are_langchains_strings_laid_on_the_page(size, overlap):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    tok, rng = FakeTokenizer(), random.Random(size)
    splitter = RecursiveCharacterTextSplitter(
        separators=list(RECURSIVE_SEPARATORS), keep_separator="end", chunk_size=size - 2, chunk_overlap=overlap,
        length_function=lambda s: len(tok.encode(s, add_special_tokens=False).ids))
    for _ in range(30):
        text = random_text(rng, long_words=False)
        spans = recursive_spans(text, size, overlap, tok)
        assert [text[a:b] for a, b in spans] == splitter.split_text(text)
        check_properties(text, spans, tok, size)


# ---------------------------------------------------------------- sentences and semantic breakpoints


def test_sentence_pieces_of_a_hand_worked_text():
    assert sentence_pieces("First one. Second one.\n\nThird") == [(0, 10), (11, 22), (24, 29)]
    # Title 0-5; the rule (6-11) and the blank line part it from Body one. 13-22, Body two. 23-32
    assert sentence_pieces("Title\n=====\n\nBody one. Body two.") == [(0, 5), (13, 22), (23, 32)]


def topic_of(sentence: str) -> str:
    return "cats" if "cat" in sentence.lower() else "money"


def by_topic(texts):
    """Hand-made unit vectors: a sentence about cats points one way, about money the other."""
    return np.array([[1.0, 0.0] if topic_of(t) == "cats" else [0.0, 1.0] for t in texts], dtype=np.float32)


PETS = "Cats sleep a lot. A cat purrs when calm. Taxes are due in April. Late taxes cost a fee."


def test_the_semantic_cut_is_where_the_topic_changes():
    # neighbour distances 0, 1, 0: the 90th percentile is 0.8, and only the jump is above it
    tok = FakeTokenizer()
    assert [PETS[a:b] for a, b in semantic_spans(PETS, 256, 90, by_topic, tok)] == [
        "Cats sleep a lot. A cat purrs when calm.", "Taxes are due in April. Late taxes cost a fee."]


def test_the_size_caps_a_semantic_chunk():
    # the sentences are 4, 5, 5 and 5 tokens. In 9 tokens (11 with [CLS] and [SEP]) the two cat sentences fit
    # together and the tax sentences, on one topic, do not; in 6 tokens (8) each stands alone
    tok = FakeTokenizer()
    sentences = ["Cats sleep a lot.", "A cat purrs when calm.", "Taxes are due in April.", "Late taxes cost a fee."]
    assert [PETS[a:b] for a, b in semantic_spans(PETS, 11, 90, by_topic, tok)] == [
        "Cats sleep a lot. A cat purrs when calm.", "Taxes are due in April.", "Late taxes cost a fee."]
    assert [PETS[a:b] for a, b in semantic_spans(PETS, 8, 90, by_topic, tok)] == sentences


def one_topic(texts):
    """Every sentence the same unit vector: no neighbours drift apart."""
    return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)


def test_a_sentence_longer_than_the_window_is_cut_in_token_windows():
    text = "one two three four five six seven eight nine ten."
    # 10 tokens in windows of 4 (6 with [CLS] and [SEP]): one two three four | five six seven eight | nine ten.
    assert [text[a:b] for a, b in semantic_spans(text, 6, 90, one_topic, FakeTokenizer())] == [
        "one two three four", "five six seven eight", "nine ten."]


def test_one_sentence_needs_no_embedding():
    def never(texts):
        raise AssertionError("embed called for a single sentence")

    assert semantic_spans("Just one sentence here.", 256, 90, never, FakeTokenizer()) == [(0, 23)]


def reference_semantic(text, size, breakpoint):
    """The semantic rule by a plain loop, for ``random_text``'s sentences (each starts with a capital and ends
    with '.', all shorter than the window) and ``by_topic``'s vectors, whose neighbour distances are 0 (same
    topic) or 1 (a change). The ``breakpoint``-th percentile of such distances (numpy's linear rule: the value
    at position q * (m - 1) of the m sorted distances) is below 1 exactly when that position falls among the zeros,
    and then every change is a cut; a cut also comes where the next sentence's words would pass ``size - 2``."""
    pieces = [m.span() for m in re.finditer(r"[A-Z][^.]*\.", text)]
    if len(pieces) < 2:
        return pieces
    topics = [topic_of(text[a:b]) for a, b in pieces]
    same = sum(t == u for t, u in zip(topics, topics[1:]))
    cut_at_change = breakpoint / 100 * (len(pieces) - 2) < same        # m = len(pieces) - 1 distances
    words = [len(text[a:b].split()) for a, b in pieces]
    spans, start, used = [], pieces[0][0], words[0]
    for i in range(1, len(pieces)):
        if cut_at_change and topics[i - 1] != topics[i] or used + words[i] > size - 2:
            spans.append((start, pieces[i - 1][1]))
            start, used = pieces[i][0], 0
        used += words[i]
    return spans + [(start, pieces[-1][1])]


@pytest.mark.parametrize("size", [14, 256])
@pytest.mark.parametrize("breakpoint", [25, 50, 90])
def test_semantic_chunks_equal_a_plain_loop_on_random_texts(size, breakpoint):
    tok, rng = FakeTokenizer(), random.Random(size + breakpoint)
    for _ in range(40):
        text = random_text(rng, long_words=False)
        spans = semantic_spans(text, size, breakpoint, by_topic, tok)
        assert spans == reference_semantic(text, size, breakpoint), text
        check_properties(text, spans, tok, size, overlapping=False)


# ---------------------------------------------------------------- every strategy on real pages, fake model


@pytest.mark.parametrize("strategy", ["tokens", "recursive", "semantic"])
def test_every_strategy_covers_every_word_of_the_help_center_in_order(helpcenter, strategy):
    tok = FakeTokenizer(piece=6)
    for doc in helpcenter:
        if strategy == "tokens":
            spans = token_spans(doc.text, 64, 8, tok)
        elif strategy == "recursive":
            spans = recursive_spans(doc.text, 64, 8, tok)
        else:
            spans = semantic_spans(doc.text, 64, 90, by_topic, tok)
        check_properties(doc.text, spans, tok, 64, overlapping=strategy != "semantic")


# ---------------------------------------------------------------- with the model's own tokenizer


def model_tokens(text: str) -> int:
    """The model's own count, [CLS] and [SEP] included (an independent call of the tokenizer)."""
    return len(load_tokenizer().encode(text).ids)


def topic_embed(texts):
    """Hand-made sentence vectors: a sentence about cats points one way, about taxes another."""
    return np.array([[1.0, 0.0] if "cat" in t.lower() else [0.0, 1.0] for t in texts], dtype=np.float32)


def test_semantic_breakpoints_cut_where_the_topic_changes():
    """Four sentences, two on each topic: the distances between neighbours are 0, 1, 0, so only the
    jump (above the page's 90th percentile, 0.8) is a cut."""
    text = "Cats sleep a lot. A cat purrs when calm. Taxes are due in April. Late taxes cost a fee."
    doc = Document("pets", "Pets", text, sha256="", access=("public",))
    chunks = chunk_document(doc, ChunkSettings("semantic"), embed=topic_embed, tokenizer=load_tokenizer())
    assert [c.text for c in chunks] == ["Cats sleep a lot. A cat purrs when calm.", "Taxes are due in April. Late taxes cost a fee."]
    # the size still caps a chunk: at 12 tokens each sentence stands alone
    small = chunk_document(doc, ChunkSettings("semantic", size=12), embed=topic_embed,
                           tokenizer=load_tokenizer())
    assert len(small) == 4 and all(model_tokens(c.indexed_text) <= 12 for c in small)
    with pytest.raises(ValueError, match="embed="):
        chunk_document(doc, ChunkSettings("semantic"))
