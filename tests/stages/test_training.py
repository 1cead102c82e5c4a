"""Training on the docs: the mined pairs' properties, and a tiny training run of each model that must
move toward its objective, be cached by content, and be refused where another model's vectors are."""
import json

import numpy as np
import pytest

from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.experiments.finetune import TrainSettings, model_name, train_bi_encoder, train_cross_encoder
from raglab.experiments.mining import KINDS, candidates, mine_pairs, section_of

SETTINGS = ChunkSettings("headings", prefix=True)
TINY = TrainSettings(pairs=24, batch_size=8, epochs=3, learning_rate=1e-4, max_length=64, cross_max_length=96,
                     warmup=0.0)


@pytest.fixture(scope="module")
def chunks(python_docs):
    return chunk_corpus(python_docs, SETTINGS)


@pytest.fixture(scope="module")
def pairs(chunks):
    return mine_pairs(chunks, 24)


def test_pairs_are_seeded_even_and_never_their_own_section(chunks, pairs):
    again = mine_pairs(chunks, 24)
    assert pairs == again
    assert pairs != mine_pairs(chunks, 24, seed=26)
    counts = {k: sum(p.kind == k for p in pairs) for k in KINDS}
    assert sorted(counts.values()) == [8, 8, 8], counts
    by_id = {c.id: c for c in chunks}
    sections = {}
    for c in chunks:
        sections.setdefault(c.doc, set()).add(section_of(c))
    for p in pairs:
        positive, negative = by_id[p.chunk], by_id[p.negative_chunk]
        assert section_of(positive) != section_of(negative)
        if len(sections[positive.doc]) > 1:                 # another section of the same page
            assert negative.doc == positive.doc
        assert p.negative == by_id[p.negative_chunk].indexed_text
        if p.kind != "heading":
            assert p.query not in p.positive           # the cloze sentence / signature is taken out
            assert p.query in " ".join(by_id[p.chunk].indexed_text.split())


def test_bm25_negatives_are_the_best_other_section_for_the_query(chunks):
    from raglab.book.bm25 import BM25, top_k

    bm25 = BM25([c.indexed_text for c in chunks])
    by_id = {c.id: c for c in chunks}
    for p in mine_pairs(chunks, 12, negatives="bm25"):
        ranked = [chunks[r] for r, _ in top_k(bm25.scores(p.query), 30)]
        first = next(c for c in ranked if section_of(c) != section_of(by_id[p.chunk]))
        assert p.negative_chunk == first.id
    with pytest.raises(ValueError, match="unknown negatives"):
        mine_pairs(chunks, 3, negatives="random")


def test_dense_negatives_are_the_best_other_section_of_the_dense_top_20(chunks, embedder):
    pairs = mine_pairs(chunks, 24, negatives="dense", embedder=embedder)
    by_id = {c.id: c for c in chunks}
    vectors = embedder.encode([c.indexed_text for c in chunks])     # the same vectors (cached); ranked here by argsort
    for p in pairs:
        top = np.argsort(-(vectors @ embedder.encode([p.query])[0]), kind="stable")[:20]
        best = next(chunks[r] for r in top if section_of(chunks[r]) != section_of(by_id[p.chunk]))
        assert p.negative_chunk == best.id, p.query
    with pytest.raises(ValueError, match="embedder"):
        mine_pairs(chunks, 4, negatives="dense")


def test_heading_pairs_are_not_a_string_copy(chunks):
    for query, positive, row in candidates(chunks, "heading")[:50]:
        assert query == " > ".join(chunks[row].heading)
        assert not positive.startswith(chunks[row].heading[-1])


def test_a_golden_question_is_never_a_training_query(chunks):
    # plant the exact text of some candidate queries as "questions": they can no longer be drawn
    pool = candidates(chunks, "cloze")
    planted = [q for q, _, _ in pool[:40]]
    drawn = mine_pairs(chunks, len(pool), kinds=["cloze"], forbidden=[p.upper() for p in planted])
    assert not {p.query for p in drawn} & set(planted)
    assert len(drawn) <= len(pool) - 40


def test_model_name_is_the_content(pairs):
    a = model_name("bi", pairs, TINY.check())
    assert a == model_name("bi", list(pairs), TINY.check())
    assert a != model_name("bi", pairs[:-1], TINY.check())
    assert a != model_name("bi", pairs, TrainSettings(**{**TINY.__dict__, "seed": 1}).check())
    assert a != model_name("cross", pairs, TINY.check())
    with pytest.raises(ValueError, match="unknown pair kind"):
        TrainSettings(kinds=("questions",)).check()


def _margin(encode, pairs):
    """Mean of cos(query, positive) - cos(query, negative) over the pairs."""
    q = encode([p.query for p in pairs])
    pos = encode([p.positive for p in pairs])
    neg = encode([p.negative for p in pairs])
    return float(np.mean((q * pos).sum(1) - (q * neg).sum(1)))


@pytest.mark.slow
def test_bi_encoder_learns_is_cached_and_is_its_own_index(workdir, python_docs, pairs, embedder):
    from raglab.infra.embedder import Embedder
    from raglab.infra.index import IndexNotReady, build_index, load_index

    trained = train_bi_encoder(pairs, TINY, progress=False)
    assert not trained.cached and trained.record["pairs"] == len(pairs)
    assert all(np.isfinite(trained.record["loss"]))
    again = train_bi_encoder(pairs, TINY, progress=False)
    assert again.cached and again.path == trained.path
    tuned = Embedder(trained.model_id, cache=False)
    before, after = _margin(embedder.encode, pairs), _margin(tuned.encode, pairs)
    assert after > before + 0.01, (before, after)
    # an index embedded by the trained model is its own folder and records the model; a manifest that
    # names another model is refused with the command that rebuilds it
    index = build_index("helpcenter", "small", SETTINGS, tuned)
    assert index.manifest["model"] == trained.model_id and trained.name in index.path.name
    assert load_index("helpcenter", "small", SETTINGS, tuned.model_id).manifest["model"] == trained.model_id
    manifest = json.loads((index.path / "manifest.json").read_text())
    (index.path / "manifest.json").write_text(json.dumps({**manifest, "model": embedder.model_id}))
    with pytest.raises(IndexNotReady, match=f"--model {trained.model_id}"):
        load_index("helpcenter", "small", SETTINGS, tuned.model_id)


@pytest.mark.slow
def test_cross_encoder_learns_and_reranks(workdir, pairs):
    from raglab.infra.rerankers import make_reranker

    trained = train_cross_encoder(pairs, TINY, progress=False)
    reranker = make_reranker(f"trained/{trained.name}", None)
    assert reranker.reads == "indexed_text" and reranker.model.max_length == TINY.cross_max_length   # as trained
    scores = reranker.model.predict([(p.query, t) for p in pairs for t in (p.positive, p.negative)],
                                    show_progress_bar=False).reshape(-1, 2)
    # a fresh one-logit head is a coin; after training the positive wins on most of its own pairs
    assert (scores[:, 0] > scores[:, 1]).mean() >= 0.75
    assert train_cross_encoder(pairs, TINY, progress=False).cached


def test_a_missing_trained_model_names_the_command(workdir):
    from raglab.infra.embedder import Embedder

    with pytest.raises(RuntimeError, match="raglab train"):
        Embedder("trained/bi-0000000000000000", cache=False).encode(["x"])
