"""End to end on the help-center corpus: build, load, manifest checks, every mode, access filters, CLI."""
import json

import numpy as np
import pytest

from conftest import HC_SETTINGS as SETTINGS
from raglab.book.chunking import ChunkSettings
from raglab.book.fusion import rrf
from raglab.infra.index import IndexNotReady, load_index
from raglab.infra.rerankers import cross_encoder_reranker
from raglab.surfaces.cli import main


def test_load_checks_the_manifest(index, workdir):
    again = load_index("helpcenter", "small", SETTINGS)
    assert [c.id for c in again.chunks] == [c.id for c in index.chunks] and again.version == index.version
    with pytest.raises(IndexNotReady, match="no index .*raglab index --corpus helpcenter --profile small --strategy headings --size 100"):
        load_index("helpcenter", "small", ChunkSettings("headings", 100, 20, prefix=True))
    # another model's index is a folder of its own: asking for it names the command that builds it
    with pytest.raises(IndexNotReady, match="no index .*-other-model: build it with .*--model other-model`"):
        load_index("helpcenter", "small", SETTINGS, model_id="other-model")
    manifest = index.path / "manifest.json"
    saved = manifest.read_text()
    try:
        manifest.write_text(saved.replace(index.manifest["corpus_sha256"], "0" * 64))
        with pytest.raises(IndexNotReady, match="corpus has changed"):
            load_index("helpcenter", "small", SETTINGS)
    finally:
        manifest.write_text(saved)
    assert not [p for p in index.path.parent.iterdir() if p.name.startswith(".")]


def test_dense_scores_are_cosines_and_exact(index, embedder, retriever):
    q = "How long do I have to return an item?"
    hits = retriever.search(q, "dense", 5, ("premium",))
    vectors = embedder.encode([c.indexed_text for c in index.chunks])
    expected = np.argsort(-(vectors @ embedder.encode_query(q)), kind="stable")[:5]
    assert [index.row_of[h.id] for h in hits] == list(expected)


def test_hybrid_is_the_rrf_of_both_lists(retriever):
    q = "What happens when I exceed the API rate limit?"
    dense = [h.id for h in retriever.search(q, "dense", 20)]
    keyword = [h.id for h in retriever.search(q, "bm25", 20)]
    hybrid = retriever.search(q, "hybrid", 10)
    assert [(h.id, pytest.approx(h.score)) for h in hybrid] == rrf({"dense": dense, "bm25": keyword})[:10]
    for h in hybrid:
        expected = sum(1 / (60 + r) for r in h.ranks.values())
        assert h.score == pytest.approx(expected)
        assert [h.rank for h in hybrid] == list(range(1, len(hybrid) + 1))


def test_k_is_honoured_and_a_depth_given_caps_it(retriever):
    """Asked for more than 20, hybrid and rerank read each list k deep and give k; given the depth 20
    (``CANDIDATES``), hybrid gives at most the two lists' union and rerank the fused top 20."""
    from raglab.book.retrieve import CANDIDATES

    q = "How do I return an item?"
    union = {h.id for h in retriever.search(q, "dense", CANDIDATES)} | {h.id for h in retriever.search(q, "bm25", CANDIDATES)}
    assert len(retriever.search(q, "hybrid", 100)) == 100 and len(retriever.search(q, "rerank", 30)) == 30
    assert len(retriever.hybrid(q, 100, depth=CANDIDATES)) == len(union)
    assert len(retriever.rerank(q, 30, depth=CANDIDATES)) == CANDIDATES


def test_pages_lists_each_page_once_at_its_best_rank(retriever):
    from raglab.book.retrieve import pages

    hits = retriever.search("How do I return an item?", "hybrid", 10)
    found = pages(hits)
    assert [p.doc for p in found] == list(dict.fromkeys(h.doc for h in hits))
    assert [p.rank for p in found] == list(range(1, len(found) + 1))
    assert all(p.score == max(h.score for h in hits if h.doc == p.doc) for p in found)


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid", "rerank"])
def test_public_users_never_get_premium_chunks(retriever, index, mode):
    premium = {c.id for c in index.chunks if "premium" in c.access}
    assert premium
    for q in ["What is the Plus Concierge phone number?", "Parcelo Plus API rate limit per minute",
              "extended warranty accidental damage claim", "ignore all previous instructions"]:
        public = retriever.search(q, mode, 10)
        assert not premium & {h.id for h in public}
        for h in public:
            assert h.ranks  # every record says which retriever found it
    scoped = retriever.search("What is the Plus Concierge phone number?", mode, 5, ("premium",))
    assert scoped[0].doc == "plus/priority-support.md"


def test_rerank_keeps_a_subset_of_the_fused_candidates(retriever):
    q = "Can I change the shipping address after ordering?"
    fused = {h.id: h.rank for h in retriever.search(q, "hybrid", 20)}
    reranked = retriever.search(q, "rerank", 5)
    assert len(reranked) == 5 and all(h.id in fused and h.ranks["fused"] == fused[h.id] for h in reranked)
    assert [h.score for h in reranked] == sorted((h.score for h in reranked), reverse=True)


def test_cross_encoder_plumbing_with_a_tiny_local_model(tmp_path, retriever):
    """No cross-encoder weights exist offline: build a tiny random one locally and check the wiring."""
    import shutil

    from transformers import BertConfig, BertForSequenceClassification

    from raglab.infra.packaged_models import minilm_path

    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(minilm_path() / name, tmp_path / name)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(tmp_path)
    reranker = cross_encoder_reranker(str(tmp_path), precision="float32")   # the reference below predicts in float32
    q = "refund window"
    hits = retriever.search(q, "hybrid", 8)
    texts = [retriever.text(h) for h in hits]
    scores = reranker.model.predict([(q, t) for t in texts])
    got = reranker.rerank(q, hits, texts)
    assert [h.id for h in got] == [hits[i].id for i in np.argsort(-scores, kind="stable")]


def test_search_errors(retriever):
    with pytest.raises(ValueError, match="empty query"):
        retriever.search("   ", "dense")
    with pytest.raises(ValueError, match="unknown mode 'fuzzy'"):
        retriever.search("x", "fuzzy")


def test_cli_index_and_search_every_mode(index, capsys):
    for mode in ["dense", "bm25", "hybrid", "rerank"]:
        assert main(["search", "How do webhooks retry?", "--corpus", "helpcenter", "--strategy", "headings",
                     "--prefix", "--mode", mode, "--k", "3", "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert len(rows) == 3 and {"id", "doc", "score", "rank", "text"} <= set(rows[0])
    assert main(["search", "x", "--corpus", "helpcenter", "--strategy", "chars"]) == 2
    assert "raglab index --corpus helpcenter" in capsys.readouterr().err
