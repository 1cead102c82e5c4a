"""BM25 (raglab/book/bm25.py): the sparse index against bm25s (method lucene, whose scores are ours
divided by k1 + 1) and rank_bm25 (BM25Okapi with Lucene's idf), the textbook loops and a score worked by
hand; the tokenizer; the access filter. Saving and loading an index is tests/stages/test_bm25_file.py."""
import math

import bm25s
import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from raglab.book.bm25 import BM25, TextbookBM25, tokenize
from raglab.book.chunking import ChunkSettings, chunk_corpus

QUERIES = [
    "__init__", "__repr__", "__missing__", "dict_keys", "KeyError", "ValueError", "StopIteration",
    "os.path.join", "os.path", "json.dumps", "json.loads", "collections.OrderedDict", "collections.namedtuple",
    "functools.lru_cache", "itertools.chain", "pathlib.Path", "str.format", '"dict.keys()"', "heapq.heappush",
    "how do I join two paths", "what is the difference between a list and a tuple", "how to format a string",
    "check if a file exists", "sort a dictionary by value", "read a csv file with a header",
    "what does the with statement do", "how are exceptions raised and handled", "create a virtual environment",
    "path path path", "the", "zzzunknownword os.path.join",
]


@pytest.fixture(scope="session")
def texts(python_docs):
    """The small profile's Python docs in the course's 150-word chunks (about 600)."""
    return [c.indexed_text for c in chunk_corpus(python_docs, ChunkSettings("words"))]


@pytest.fixture(scope="session")
def bm(texts):
    return BM25(texts)


@pytest.fixture(scope="session")
def reference(texts):
    """bm25s, method lucene, fed our tokens."""
    r = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    r.index([tokenize(t) for t in texts], show_progress=False)
    return r


class LuceneOkapi(BM25Okapi):
    """rank_bm25's Okapi BM25 with Lucene's idf instead of its epsilon-floored one."""

    def _calc_idf(self, nd):
        for word, n in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5))


# ---------------------------------------------------------------- tokenizer

def test_tokenizer_keeps_identifiers_and_folds_case():
    assert tokenize("__init__") == ["__init__"]
    assert tokenize("a dict_keys view") == ["a", "dict_keys", "view"]
    assert tokenize("raises KeyError.") == ["raises", "keyerror"]
    assert tokenize("The PATH Module") == ["the", "path", "module"]


def test_tokenizer_emits_dotted_parts_and_whole_name():
    assert tokenize("os.path") == ["os", "path", "os.path"]
    assert tokenize("Use os.path.join().") == ["use", "os", "path", "join", "os.path.join"]
    assert tokenize("End of sentence. Next") == ["end", "of", "sentence", "next"]


def test_tokenizer_strips_quotes_and_punctuation():
    assert tokenize('"dict.keys()"') == ["dict", "keys", "dict.keys"]
    assert tokenize("'__init__', (KeyError); [x]") == ["__init__", "keyerror", "x"]
    assert tokenize('"..." -- !!') == []


# ---------------------------------------------------------------- against references

@pytest.mark.parametrize("query", QUERIES)
def test_top10_and_scores_match_bm25s(bm, reference, query):
    # bm25s' "lucene" leaves out the constant factor (k1 + 1) of the term score, as Lucene >= 8 does:
    # the ranking is the same and its scores are ours divided by k1 + 1 = 2.5
    full = bm.scores(query)
    ours = bm.search(query, 10)
    ids, scores = reference.retrieve([tokenize(query)], k=10, show_progress=False)
    theirs = [(int(i), 2.5 * float(s)) for i, s in zip(ids[0], scores[0]) if s > 0]
    assert len(ours) == len(theirs) and ours
    for (i, s), (j, t) in zip(ours, theirs):
        assert t == pytest.approx(s, rel=1e-5)
        assert i == j or abs(full[i] - full[j]) <= 1e-6 * s  # only tied documents may swap
    every = reference.get_scores_from_ids(reference.get_tokens_ids(tokenize(query)))
    assert 2.5 * every == pytest.approx(full, rel=1e-5)


def test_all_scores_match_rank_bm25_with_lucene_idf(texts, bm):
    okapi = LuceneOkapi([tokenize(t) for t in texts], k1=1.5, b=0.75)
    for query in QUERIES:
        assert bm.scores(query) == pytest.approx(okapi.get_scores(tokenize(query)), rel=1e-9, abs=0), query


def test_textbook_version_gives_the_same_scores_and_ranking(texts, bm):
    book = TextbookBM25(texts)
    for query in ["__init__", "os.path.join", "how do I join two paths", "path path", "!!"]:
        assert bm.scores(query) == pytest.approx([book.score(query, i) for i in range(len(texts))], rel=1e-12, abs=0)
        assert [i for i, _ in bm.search(query)] == [i for i, _ in book.search(query)]


def test_a_score_worked_by_hand():
    texts = ["The cat sat on the mat.", "The dog sat.", "Cats and dogs!"]
    n_docs, avgdl, k1, b = 3, (6 + 3 + 3) / 3, 1.5, 0.75
    # "the" occurs twice in document 0 (6 tokens) and is in 2 of 3 documents; "cat" once, in 1 document.
    idf_the = math.log(1 + (n_docs - 2 + 0.5) / (2 + 0.5))
    idf_cat = math.log(1 + (n_docs - 1 + 0.5) / (1 + 0.5))
    norm = k1 * (1 - b + b * 6 / avgdl)
    by_hand = idf_the * 2 * (k1 + 1) / (2 + norm) + idf_cat * 1 * (k1 + 1) / (1 + norm)
    # ln(1.6) = 0.4700, ln(8/3) = 0.9808, norm = 1.5 * (0.25 + 0.75 * 1.5) = 2.0625
    assert by_hand == pytest.approx(0.4700036 * 5 / 4.0625 + 0.9808293 * 2.5 / 3.0625, rel=1e-6)
    assert by_hand == pytest.approx(1.3791429, rel=1e-6)
    assert BM25(texts).scores("the cat")[0] == pytest.approx(by_hand, rel=1e-12)
    assert TextbookBM25(texts).score("the cat", 0) == pytest.approx(by_hand, rel=1e-12)


# ---------------------------------------------------------------- query edge cases

@pytest.mark.parametrize("query", ["", "   ", "!?., -- ()", '""'])
def test_empty_queries_score_zero(bm, query):
    assert not bm.scores(query).any() and bm.search(query) == []
    mask = np.arange(bm.n_docs) % 2 == 0
    assert (bm.scores(query, mask)[mask] == 0).all() and bm.search(query, allowed=mask) == []


def test_unknown_terms_add_nothing_and_repeats_count_per_occurrence(bm):
    assert np.array_equal(bm.scores("zzzunknownword os.path.join"), bm.scores("os.path.join"))
    assert bm.scores("path path") == pytest.approx(2 * bm.scores("path"), rel=1e-12)


def test_ties_go_to_the_lower_row_and_only_positive_scores_are_returned():
    index = BM25(["a b", "c d", "a b", "e"])
    assert [i for i, _ in index.search("a", k=10)] == [0, 2]
    assert index.search("a", k=1) == index.search("a")[:1]
    assert index.n_docs == 4 and index.vocab_size == 5


# ---------------------------------------------------------------- access filter

@pytest.mark.parametrize("seed,share", [(0, 0.5), (1, 0.1), (2, 0.9), (3, 0.0), (4, 1.0)])
def test_filter_scores_allowed_rows_exactly_and_never_returns_others(bm, seed, share):
    mask = np.random.default_rng(seed).random(bm.n_docs) < share
    for query in QUERIES:
        full, filtered = bm.scores(query), bm.scores(query, mask)
        assert np.isneginf(filtered[~mask]).all()
        assert np.array_equal(filtered[mask], full[mask])
        hits = bm.search(query, 10, allowed=mask)
        assert all(mask[i] for i, _ in hits)
        assert hits == [(i, s) for i, s in bm.search(query, bm.n_docs) if mask[i]][:10]


class ReadLog(np.ndarray):
    """An array that records the positions read through indexing."""

    def __getitem__(self, key):
        self.reads.append(np.arange(len(self))[key])
        return np.asarray(self)[key]


def _spy_reads(bm, monkeypatch, query, allowed):
    spy = bm._data.view(ReadLog)
    spy.reads = []
    monkeypatch.setattr(bm, "_data", spy)
    bm.scores(query, allowed)
    monkeypatch.undo()
    return np.concatenate(spy.reads) if spy.reads else np.array([], dtype=int)


@pytest.mark.parametrize("query", ["the", "os.path.join", "how do I join two paths"])
def test_filter_never_reads_a_disallowed_rows_weights(bm, monkeypatch, query):
    mask = np.random.default_rng(7).random(bm.n_docs) < 0.3
    postings = np.concatenate([np.arange(bm._indptr[t], bm._indptr[t + 1]) for t in bm.term_ids(query)])
    # the spy sees everything when there is no filter...
    assert sorted(_spy_reads(bm, monkeypatch, query, None)) == sorted(postings)
    # ...and with a filter, exactly the allowed postings of the query's terms, nothing else
    read = _spy_reads(bm, monkeypatch, query, mask)
    assert len(read) and mask[bm._indices[read]].all()
    assert sorted(read) == sorted(postings[mask[bm._indices[postings]]])


def test_filter_must_be_a_boolean_mask_of_the_right_length(bm):
    with pytest.raises(ValueError, match="boolean"):
        bm.scores("path", np.ones(bm.n_docs - 1, dtype=bool))
    with pytest.raises(ValueError, match="boolean"):
        bm.scores("path", np.arange(bm.n_docs))
