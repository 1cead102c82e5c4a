"""One text, one vector: in float32 (the default) a text's vector is within 1e-6 in every component whatever
else is in its batch, whatever the cache held, and whatever kernels the CPU runs; in float64 it is the same
bytes; and a notebook's numeric table is the same from two different cache states."""
import os
import random
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from raglab.book.chunking import ChunkSettings, chunk_corpus
from raglab.infra.embedding_batches import PAD_MULTIPLE
from raglab.infra.embedder import Embedder
from raglab.infra.embedding_cache import EmbeddingCache

pytestmark = pytest.mark.slow

TARGETS = ["Which exception does json.loads raise when the document is not valid JSON?",
           "os.path.join joins one or more path segments intelligently."]
SHORT = ["Lists are mutable.", "A dict maps keys to values.", "Use with to close files.", "Tuples are immutable.",
         "Strings have a split method.", "Sets hold unique items.", "print writes to stdout."]


@pytest.fixture(scope="module")
def long_texts(python_docs):
    """Real chunks of the small profile, most of them 150 words or near the 256-token limit."""
    return [c.indexed_text for c in chunk_corpus(python_docs[:4], ChunkSettings("words"))][:40]


# What each precision promises when the batch or the CPU's kernels change: float32 (the default) vectors within
# 1e-6 in a component (1.0e-7 measured across batch sizes and CPUs), float64 the same bytes.
CLOSE_ENOUGH = {"float64": 0.0, "float32": 1e-6}


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_a_text_gets_the_same_vector_in_any_batch(precision, long_texts, tmp_path):
    alone = Embedder(cache=False, precision=precision).encode(TARGETS)
    rng = random.Random(7)
    batches = {
        "alone, one by one": [[t] for t in TARGETS],
        "among short texts": [SHORT[:3] + TARGETS + SHORT[3:]],
        "among long texts": [long_texts[:20] + [TARGETS[0]] + long_texts[20:] + [TARGETS[1]]],
        "shuffled with everything": [rng.sample(SHORT + long_texts + TARGETS, len(SHORT + long_texts) + 2)],
    }
    for label, calls in batches.items():
        for batch_size in (1, 3, 32):
            embedder = Embedder(cache=False, precision=precision, batch_size=batch_size)
            got = {}
            for texts in calls:
                got.update(zip(texts, embedder.encode(texts)))
            for text, vector in zip(TARGETS, alone):
                gap = float(np.abs(got[text] - vector).max())
                assert gap <= CLOSE_ENOUGH[precision], (label, batch_size, gap)   # 0.0 in float64: the same bytes

    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    cold = Embedder(cache=cache, precision=precision).encode(long_texts[:5] + TARGETS)[-2:]
    warm = Embedder(cache=EmbeddingCache(cache.path), precision=precision)
    assert warm.encode(TARGETS).tobytes() == cold.tobytes()
    assert warm.last_stats["hits"] == 2 and warm._model is None


# Other kernels, as on another CPU: MKL and oneDNN held to older instruction sets, one thread.
OTHER_KERNELS = {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41", "OMP_NUM_THREADS": "1"}
EMBED = ("import sys, numpy as np; from raglab.infra.embedder import Embedder; "
         "sys.stdout.write(Embedder(cache=False, precision=sys.argv[1], batch_size=3).encode(sys.argv[2:]).tobytes().hex())")


def _vectors_in_a_process(precision, texts, env):
    run = subprocess.run([sys.executable, "-c", EMBED, precision, *texts], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return bytes.fromhex(run.stdout)


def test_a_vector_is_the_same_under_other_kernels(long_texts):
    """One text, one vector on every CPU: when MKL and oneDNN run other kernels in another process, a float32
    vector (the default) stays within 1e-6 of this process's in every component, and a float64 vector is the
    same bytes. float32 must differ at all, which shows that the kernels did change."""
    texts = TARGETS + SHORT[:3] + long_texts[:3]
    ours, theirs = (np.frombuffer(_vectors_in_a_process("float32", texts, env), dtype=np.float32)
                    for env in ({}, OTHER_KERNELS))
    if np.array_equal(ours, theirs):
        pytest.skip("these settings changed no kernel on this CPU")
    assert np.abs(ours - theirs).max() <= CLOSE_ENOUGH["float32"]
    here = Embedder(cache=False, precision="float64").encode(texts).tobytes()
    assert _vectors_in_a_process("float64", texts, OTHER_KERNELS) == here


def test_padded_vectors_are_those_of_the_unpadded_call(long_texts):
    """Padding to a multiple of 16 (and truncating at the model's limit) leaves each vector that of the
    plain model call on the text alone, unpadded: 1 - cos below 1e-6 in float32, on texts under and
    over the limit and of lengths that are no multiple of 16."""
    from sentence_transformers import SentenceTransformer

    from raglab.infra.packaged_models import minilm_path

    embedder = Embedder(cache=False, precision="float32")
    by_length = sorted(long_texts, key=len)
    texts = SHORT + by_length[:4] + by_length[-4:]
    plain = SentenceTransformer(str(minilm_path()), device="cpu")
    reference = np.vstack([plain.encode([t], normalize_embeddings=True) for t in texts])   # each alone: no padding
    assert 1 - (embedder.encode(texts) * reference).sum(axis=1).min() < 1e-6
    lengths = embedder.token_counts(texts)
    assert any(n > embedder.max_tokens for n in lengths) and any(n % PAD_MULTIPLE for n in lengths)


def test_a_bakeoff_table_is_the_same_from_two_cache_states(tmp_path, monkeypatch):
    """Notebook 07's table (one chunking, three retrievers, the reranker's sentence vectors included)
    from an empty cache, and again from a cache a different run filled half of in other batches. On the help
    center (20 pages, 12,000 words): the property does not depend on the corpus, and every vector is computed
    twice from an empty cache here, so a small corpus keeps the test short."""
    from raglab.evaluation.bakeoff import run_bakeoff
    from raglab.infra.corpus import load_corpus

    def table(workdir, embedder):
        monkeypatch.setenv("RAGLAB_WORKDIR", str(workdir))
        frame, per_question = run_bakeoff("helpcenter", embedder=embedder,
                                          chunkers=(ChunkSettings("words"),), retrievers=("dense", "hybrid", "rerank"))
        return frame.drop(columns="latency_p50_ms"), per_question

    cold_frame, cold_questions = table(tmp_path / "cold", Embedder(cache=EmbeddingCache(tmp_path / "cold.sqlite")))

    chunks = [c.indexed_text for c in chunk_corpus(load_corpus("helpcenter"), ChunkSettings("words"))]
    half = random.Random(3).sample(chunks, len(chunks) // 2)
    other = Embedder(cache=EmbeddingCache(tmp_path / "other.sqlite"), batch_size=5)
    for i in range(0, len(half), 7):                        # a different run: small mixed batches
        other.encode(half[i:i + 7] + SHORT)
    warm_frame, warm_questions = table(tmp_path / "other", Embedder(cache=EmbeddingCache(tmp_path / "other.sqlite")))

    assert len(cold_frame) == 3 and len(next(iter(cold_questions.values()))) >= 10
    pd.testing.assert_frame_equal(cold_frame, warm_frame, check_exact=True)
    assert cold_questions == warm_questions
