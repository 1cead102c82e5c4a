"""raglab.infra.minilm (issue 35): the packaged MiniLM's forward pass in plain torch makes exactly the vectors
sentence-transformers makes from the same batch (the reference), in float32 and under bfloat16 autocast, for
texts shorter and longer than the padded length; and the embedder uses it without importing
sentence-transformers."""
import contextlib
import subprocess
import sys

import numpy as np
import pytest

from raglab.infra.embedder import Embedder
from raglab.infra.minilm import MiniLM

TEXTS = ["How do I sort a list in place?", "x", "Wie lange gilt der Link? Über 24 Stunden.",
         "def f(*args, **kwargs):\n    return sorted(args, key=len)", "a " * 400,
         "The json module's dumps() takes sort_keys=True and indent=4 to print a stable, readable document."]


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
@pytest.mark.parametrize("length", [16, 64, 256])
def test_the_vectors_are_sentence_transformers_own(precision, length):
    import torch
    from sentence_transformers import SentenceTransformer

    from raglab.infra.packaged_models import minilm_path

    reference = SentenceTransformer(str(minilm_path()), device="cpu")
    features = reference.tokenizer(TEXTS, padding="max_length", truncation=True, max_length=length, return_tensors="pt")
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bfloat16" else contextlib.nullcontext()
    with torch.inference_mode(), ctx:
        want = reference(dict(features))["sentence_embedding"].float().numpy()
        got = MiniLM().forward(TEXTS, length).float().numpy()
    assert got.shape == (len(TEXTS), 384)
    assert np.array_equal(got, want)


def test_the_embedder_answers_a_query_without_sentence_transformers(tmp_path):
    code = ("import sys; from raglab.infra.embedder import Embedder; e = Embedder(cache=None); "
            "v = e.encode_query('How do I sort a list?'); "
            "print(round(float((v * v).sum()), 5), 'sentence_transformers' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1.0", "False", "False"]


def test_a_loaded_sentence_transformer_is_used_as_before():
    e = Embedder(cache=None, precision="float32")
    light = e.encode(TEXTS[:3])
    e.model  # noqa: B018 -- loads sentence-transformers (training does)
    assert np.array_equal(Embedder(cache=None, precision="float32").encode(TEXTS[:3]), light)
    assert np.array_equal(e._embed(TEXTS[:3], 16), Embedder(cache=None, precision="float32")._embed(TEXTS[:3], 16))


def test_the_books_pooling_is_the_models():
    """The book's ``mean_pool`` and ``to_unit_length`` (numpy), applied to sentence-transformers' own token vectors,
    give its sentence vectors: the idea taught in notebook 02 is what the model does."""
    import torch
    from sentence_transformers import SentenceTransformer

    from raglab.book.embed import mean_pool, to_unit_length
    from raglab.infra.packaged_models import minilm_path

    reference = SentenceTransformer(str(minilm_path()), device="cpu")
    features = reference.tokenizer(TEXTS, padding="max_length", truncation=True, max_length=64, return_tensors="pt")
    with torch.inference_mode():
        out = reference(dict(features))
    tokens, mask = out["token_embeddings"].numpy(), features["attention_mask"].numpy()
    got = to_unit_length(mean_pool(tokens, mask))
    assert np.allclose(got, out["sentence_embedding"].numpy(), atol=1e-6)


def test_exact_search_is_faiss_inner_product_search():
    """The book's brute-force ``exact_search`` ranks as FAISS's exact ``IndexFlatIP`` on unit vectors."""
    import faiss

    from raglab.book.embed import exact_search, to_unit_length

    rng = np.random.default_rng(0)
    vectors = to_unit_length(rng.normal(size=(500, 16)).astype(np.float32))
    index = faiss.IndexFlatIP(16)
    index.add(vectors)
    for query in to_unit_length(rng.normal(size=(5, 16)).astype(np.float32)):
        scores, rows = index.search(query[None], 10)
        got = exact_search(query, vectors, 10)
        assert [r for r, _ in got] == rows[0].tolist()
        assert np.allclose([s for _, s in got], scores[0], atol=1e-5)
