"""The in-memory index (raglab/book/memory_index.py): ``dense_search`` against a numpy brute force (the cosine of
unit vectors, only the rows the user may read, best first) for several users, ``bm25_search`` against the
textbook BM25 (``raglab.book.bm25.TextbookBM25``, a loop per document) with the rows the user may not read
removed, the access masks against groups written out by hand, and the calls of the ``SearchIndex`` protocol.
One index is random; the other is built with ``build_memory_index`` from a folder of pages written in
``tmp_path``, embedded by a deterministic hashed-words function, whose readers the test knows page by page."""
import hashlib
import inspect

import numpy as np
import pytest

from raglab.base.records import Hit
from raglab.book.bm25 import BM25, TextbookBM25, tokenize
from raglab.book.chunking import Chunk, ChunkSettings
from raglab.book.documents import load_folder
from raglab.book.memory_index import MemoryIndex, SearchIndex, access_mask, build_memory_index, rule_mask

# ---------------------------------------------------------------- the in-memory index against numpy

def _index(n=300, dim=16, seed=3):
    rng = np.random.default_rng(seed)
    groups = [("public",), ("premium",), ("staff",), ("premium", "staff")]
    words = ["list", "dict", "sort", "key", "lambda", "file", "open", "read"]
    chunks, texts = [], []
    for i in range(n):
        text = " ".join(rng.choice(words, size=rng.integers(3, 12)))
        texts.append(text)
        chunks.append(Chunk(f"d{i}#0", f"d{i}", (), 0, len(text), text, text, groups[i % 4], "words"))
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return MemoryIndex(chunks, vectors, BM25(texts)), rng


@pytest.mark.parametrize("user", [None, ("premium",), ("staff",), ("premium", "staff")])
def test_dense_search_is_brute_force_over_the_readable_rows(user):
    index, rng = _index()
    readable = access_mask(index.chunks, user)
    for _ in range(5):
        q = rng.normal(size=16).astype(np.float32)
        q /= np.linalg.norm(q)
        scores = np.where(readable, index.vectors @ q, -np.inf)
        want = [int(i) for i in np.argsort(-scores, kind="stable")[:10]]
        got = index.dense_search(q, 10, user)
        assert [r for r, _ in got] == want and all(readable[r] for r, _ in got)
        assert np.allclose([s for _, s in got], scores[want])


@pytest.mark.parametrize("user", [None, ("staff",)])
def test_bm25_search_scores_only_the_readable_rows(user):
    index, _ = _index()
    readable = access_mask(index.chunks, user)
    got = index.bm25_search("sort key lambda", 10, user)
    assert got and all(readable[r] for r, _ in got)
    scores = index.bm25.scores("sort key lambda")
    best = sorted((i for i in np.flatnonzero(readable) if scores[i] > 0), key=lambda i: (-scores[i], i))[:10]
    assert [r for r, _ in got] == best


def test_rows_that_do_not_line_up_are_refused():
    index, _ = _index(n=10)
    with pytest.raises(ValueError, match="row i of each must be chunk i"):
        MemoryIndex(index.chunks, index.vectors[:9], index.bm25)


def test_hits_name_chunks_of_the_index():
    index, _ = _index(n=10)
    assert index.chunk("d3#0").doc == "d3" and index.passages() is index.chunks and len(index.version) == 12
    with pytest.raises(KeyError, match="no chunk 'nope'"):
        index.chunk("nope")
    assert Hit("d3#0", "d3", 1.0, 1).id in index.row_of


# ---------------------------------------------------------------- an index built from a folder of pages

PAGES = {
    "returns.md": ("public", "# Returns\n\nYou can return a parcel within thirty days. Refunds arrive within a week."
                             "\n\n## Damaged parcels\n\nPhotograph the damage before returning a parcel.\n"),
    "plus/limits.md": ("premium", "# Plus limits\n\nA Plus production key gets 1,800 requests per minute.\n\n"
                                  "## Bursts\n\nShort bursts above the request limit are queued, never dropped.\n"),
    "desk.md": ("staff", "# Refund desk\n\nStaff approve refunds above fifty euros by hand, within a week.\n"),
    "board.md": ("premium, staff", "# Board\n\nThe parcel refund numbers of the week go to the board.\n"),
}
# who may read each page, written out: public pages for everyone, the others for their groups
READERS = {"returns.md": {"public"}, "plus/limits.md": {"premium"}, "desk.md": {"staff"},
           "board.md": {"premium", "staff"}}
USERS = [None, ("premium",), ("staff",), ("premium", "staff"), ("gold",)]
QUERIES = ["How do I return a damaged parcel?", "refunds within a week", "requests per minute limit", "nothing here"]


def embed(texts):
    """Each word of four letters or more counted in one of 256 buckets (its sha1)."""
    out = np.zeros((len(texts), 256), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in (w for w in tokenize(text) if len(w) >= 4):
            out[row, int(hashlib.sha1(word.encode()).hexdigest(), 16) % 256] += 1
    return out


def may_read(user, doc) -> bool:
    return "public" in READERS[doc] or bool(READERS[doc] & set(user or ()))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    for name, (access, body) in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        front = "" if access == "public" else f"---\naccess: [{access}]\n---\n"
        (root / name).write_text(front + body, encoding="utf-8")
    return build_memory_index(load_folder(root, (".md",)), ChunkSettings("headings"), embed)


def test_the_folder_index_holds_every_section_of_every_page(built):
    assert sorted({c.doc for c in built.chunks}) == sorted(PAGES) and len(built.chunks) == 6
    assert built.row_of == {c.id: i for i, c in enumerate(built.chunks)}
    assert np.allclose(np.linalg.norm(built.vectors, axis=1), 1.0)


@pytest.mark.parametrize("user", USERS)
def test_dense_search_on_built_pages_is_brute_force_over_the_pages_the_user_may_read(built, user):
    for query in QUERIES:
        q = embed([query])[0].astype(float)
        q = q / np.linalg.norm(q) if q.any() else q
        cosines = {}
        for row, chunk in enumerate(built.chunks):
            if may_read(user, chunk.doc):
                v = embed([chunk.indexed_text])[0].astype(float)
                cosines[row] = float(q @ (v / np.linalg.norm(v)))
        want = sorted(cosines, key=lambda r: (-cosines[r], r))
        got = built.dense_search(q.astype(np.float32), 50, user)
        assert [r for r, _ in got] == want, (user, query)
        assert [s for _, s in got] == pytest.approx([cosines[r] for r in want], abs=1e-6)
        assert built.dense_search(q.astype(np.float32), 2, user) == got[:2]


@pytest.mark.parametrize("user", USERS)
def test_bm25_search_on_built_pages_is_the_textbook_bm25_with_unreadable_rows_removed(built, user):
    """The whole index's statistics (idf, average length) score a row; the access rule only removes rows."""
    textbook = TextbookBM25([c.indexed_text for c in built.chunks])
    for query in QUERIES:
        scores = {row: textbook.score(query, row) for row, c in enumerate(built.chunks) if may_read(user, c.doc)}
        want = sorted((r for r, s in scores.items() if s > 0), key=lambda r: (-scores[r], r))
        got = built.bm25_search(query, 50, user)
        assert [r for r, _ in got] == want, (user, query)
        assert [s for _, s in got] == pytest.approx([scores[r] for r in want], rel=1e-12)


# ---------------------------------------------------------------- access masks, by hand

GROUPS = [("public",), ("premium",), ("staff",), ("premium", "staff"), (), ("public", "staff")]


class Row:
    def __init__(self, access):
        self.access = access


@pytest.mark.parametrize("user,mask", [
    (None,                  [1, 0, 0, 0, 0, 1]),
    ((),                    [1, 0, 0, 0, 0, 1]),
    (("public",),           [1, 0, 0, 0, 0, 1]),
    (("premium",),          [1, 1, 0, 1, 0, 1]),
    (("staff",),            [1, 0, 1, 1, 0, 1]),
    (("staff", "premium"),  [1, 1, 1, 1, 0, 1]),
    (("gold",),             [1, 0, 0, 0, 0, 1]),
])
def test_access_mask_on_groups_written_out(user, mask):
    got = access_mask([Row(a) for a in GROUPS], user)
    assert got.dtype == bool and got.tolist() == [bool(m) for m in mask]


def test_access_mask_remembers_a_mask_per_set_of_groups():
    rows, memo = [Row(a) for a in GROUPS], {}
    first = access_mask(rows, ("premium", "staff"), memo)
    assert access_mask(rows, ("staff", "premium", "staff"), memo) is first      # the same groups, in any order
    assert access_mask(rows, ("public",), memo) is access_mask(rows, None, memo)  # public is always there
    assert set(memo) == {frozenset({"public", "premium", "staff"}), frozenset({"public"})}


def test_rule_mask_hands_the_rule_each_rows_groups_and_the_users_own_groups():
    seen = []

    def only_exact(access, user):
        """Rows whose groups are exactly the user's (numpy integers), and row 0 (a Python integer)."""
        seen.append((access, user))
        return [np.int64(i) for i, a in enumerate(access) if set(a) == user] + [0]

    rows = [Row(a) for a in GROUPS]
    assert rule_mask(rows, ("staff", "premium"), only_exact).tolist() == [True, False, False, True, False, False]
    assert seen == [(GROUPS, {"premium", "staff"})]     # no public added: the rule decides
    assert not rule_mask(rows, None, lambda access, user: []).any()


def test_rule_mask_refuses_what_is_not_a_row_and_remembers_by_the_users_groups():
    rows = [Row(a) for a in GROUPS]
    for bad in (-1, 6, "2", 1.0, True, np.True_):           # a True/False mask is not row numbers
        with pytest.raises(ValueError, match=f"the access rule returned {bad!r}, not a row number from 0 to 5"):
            rule_mask(rows, None, lambda access, user: [1, bad])
    calls, memo = [], {}

    def counted(access, user):
        calls.append(user)
        return [0]

    assert rule_mask(rows, ("staff",), counted, memo) is rule_mask(rows, ("staff", "staff"), counted, memo)
    assert calls == [{"staff"}]


# ---------------------------------------------------------------- the SearchIndex calls

def test_the_memory_index_answers_every_call_of_the_search_index_protocol(built):
    methods = [n for n, f in vars(SearchIndex).items() if callable(f) and not n.startswith("_")]
    assert sorted(methods) == ["allowed", "bm25_search", "chunk", "dense_search", "passages"]
    for name in methods:
        assert list(inspect.signature(getattr(MemoryIndex, name)).parameters) == \
            list(inspect.signature(getattr(SearchIndex, name)).parameters), name
    for name in SearchIndex.__annotations__:                        # chunks, bm25, parents, row_of
        assert hasattr(built, name), name
    assert isinstance(built.bm25, BM25) and built.parents == []
    # what each call returns
    mask = built.allowed(("premium",))
    assert mask.dtype == bool and mask.shape == (len(built.chunks),)
    assert built.allowed(("premium",)) is mask                     # computed once per set of groups
    for pairs in (built.dense_search(embed(["parcel refund"])[0] / 2 ** 0.5, 3, None),
                  built.bm25_search("parcel refund", 3, None)):
        assert pairs and all(type(r) is int and type(s) is float for r, s in pairs)
    first = built.chunks[0]
    assert built.chunk(first.id) is first and built.passages() is built.chunks


def test_the_version_follows_the_chunks_and_a_manifest_names_its_own():
    index, _ = _index(n=10)
    same, _ = _index(n=10)
    assert index.version == same.version
    changed = [*index.chunks[:-1], Chunk("d9#0", "d9", (), 0, 4, "else", "else", ("public",), "words")]
    assert MemoryIndex(changed, index.vectors, index.bm25).version != index.version
    assert MemoryIndex(index.chunks, index.vectors, index.bm25, manifest={"version_id": "v7"}).version == "v7"
