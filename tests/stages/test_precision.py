"""Embedding precision: the default (bfloat16 only on a CPU with native bfloat16), its setting, the
cache key of each precision, and the index manifest that records it. No model is loaded here
(the bfloat16 against float32 vector comparison is in test_embeddings.py)."""
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from raglab.book.chunking import ChunkSettings
from raglab.infra.embedder import Embedder
from raglab.infra import precision as precisions
from raglab.infra.embedding_cache import EmbeddingCache, cache_key
from raglab.infra.precision import cpu_flags, native_bf16, resolve_precision
from raglab.infra.index import IndexNotReady, build_index, load_index

TEXTS = ["How do I open a file?", "Lists are mutable sequences."]
SETTINGS = ChunkSettings("words", 40, 0)


def refuse(*args, **kwargs):
    raise AssertionError("the model must not be loaded")


def test_cpu_flags_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile\n\n"
                    "processor\t: 1\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile\n")
    assert cpu_flags(info) == {"fpu", "avx2", "avx512f", "avx512_bf16", "amx_tile"}
    assert native_bf16(cpu_flags(info)) and not native_bf16(cpu_flags(tmp_path / "absent"))


def test_native_bf16_agrees_with_torch():
    """The flags the kernel reports against torch's own CPU detection (cpuinfo, from CPUID)."""
    if not cpu_flags():
        pytest.skip("no /proc/cpuinfo here")
    torch = pytest.importorskip("torch")
    if not hasattr(torch.cpu, "_is_avx512_bf16_supported"):
        pytest.skip("this torch has no bfloat16 capability check")
    by_torch = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert native_bf16() == by_torch


@pytest.mark.parametrize("setting, native, expected", [
    (None, True, "float32"), (None, False, "float32"), ("auto", True, "bfloat16"), ("auto", False, "float32"),
    ("float32", True, "float32"), ("bfloat16", False, "bfloat16"), (" BFloat16 ", True, "bfloat16")])
def test_the_setting_overrides_the_default(monkeypatch, setting, native, expected):
    monkeypatch.setattr(precisions, "native_bf16", lambda flags=None: native)
    if setting is None:
        monkeypatch.delenv("RAGLAB_EMBED_PRECISION", raising=False)
    else:
        monkeypatch.setenv("RAGLAB_EMBED_PRECISION", setting)
    assert resolve_precision() == expected
    assert Embedder(cache=False).precision == expected
    assert Embedder(cache=False, precision="float32").precision == "float32"   # an argument beats the setting
    assert resolve_precision(device="cuda") == ("float32" if setting in (None, "auto") else expected)


def test_an_unknown_precision_is_refused(monkeypatch):
    monkeypatch.setenv("RAGLAB_EMBED_PRECISION", "float16")
    with pytest.raises(ValueError, match="unknown precision 'float16'.*auto, float32, bfloat16"):
        Embedder(cache=False)
    with pytest.raises(ValueError, match="unknown precision 'int8'"):
        Embedder(cache=False, precision="int8")
    with pytest.raises(ValueError, match="cannot contain '@'"):
        Embedder("some/model@bfloat16", cache=False)


def test_each_precision_has_its_own_cache_key(tmp_path, monkeypatch):
    """bfloat16 vectors live under ``sha256("all-MiniLM-L6-v2@bfloat16+pad16\\0" + text)``, float32 ones
    under ``all-MiniLM-L6-v2@float32+pad16``: neither is served for the other, nor are vectors cached
    before the padding rule (under the bare model id or ``model@bfloat16``)."""
    monkeypatch.setattr(Embedder, "_load", refuse)
    monkeypatch.setattr(Embedder, "_load_light", refuse)   # nor its plain-torch forward pass
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    bf16 = Embedder(cache=cache, precision="bfloat16")
    fp32 = Embedder(cache=cache, precision="float32")
    assert (bf16.cache_id, fp32.cache_id) == ("all-MiniLM-L6-v2@bfloat16+pad16", "all-MiniLM-L6-v2@float32+pad16")
    assert cache_key(bf16.cache_id, TEXTS[0]) == hashlib.sha256(f"all-MiniLM-L6-v2@bfloat16+pad16\0{TEXTS[0]}".encode()).digest()
    vectors = np.eye(2, 384, dtype=np.float32)
    cache.put_many("all-MiniLM-L6-v2", TEXTS, vectors)              # vectors from before the padding rule
    cache.put_many("all-MiniLM-L6-v2@bfloat16", TEXTS, vectors)
    with pytest.raises(AssertionError, match="must not be loaded"):
        bf16.encode(TEXTS)
    cache.put_many("all-MiniLM-L6-v2@bfloat16+pad16", TEXTS, vectors)
    np.testing.assert_array_equal(bf16.encode(TEXTS), vectors)
    assert bf16.last_stats["hits"] == 2
    with pytest.raises(AssertionError, match="must not be loaded"):    # float32 misses: it would load the model
        fp32.encode(TEXTS)
    cache.put_many("all-MiniLM-L6-v2@float32+pad16", TEXTS, vectors[::-1])
    np.testing.assert_array_equal(fp32.encode(TEXTS), vectors[::-1])
    np.testing.assert_array_equal(bf16.encode(TEXTS), vectors)


class HashEmbedder:
    """Unit vectors from a hash of each text, in a declared precision (no model)."""

    model_id = "hash-embedder"

    def __init__(self, precision):
        self.precision, self.last_stats = precision, {}

    def encode(self, texts):
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:16] for t in texts]
        vectors = np.array(rows, dtype=np.float32) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture()
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "returns.md").write_text("# Returns\n\nYou may return an item within 30 days of delivery for a refund.\n")
    (root / "shipping.md").write_text("# Shipping\n\nParcels ship within two days. Tracking numbers arrive by e-mail.\n")
    return root


def test_the_manifest_records_the_precision_and_load_refuses_another(folder, tmp_path, monkeypatch):
    root = tmp_path / "indexes"
    monkeypatch.setenv("RAGLAB_EMBED_PRECISION", "float32")
    fp32 = build_index(str(folder), "small", SETTINGS, HashEmbedder("float32"), root=root)
    assert fp32.manifest["precision"] == "float32"
    assert load_index(str(folder), "small", SETTINGS, "hash-embedder", root=root).version == fp32.version
    with pytest.raises(IndexNotReady, match=r"embedded in float32, not bfloat16: rebuild it with "
                                            r"`RAGLAB_EMBED_PRECISION=bfloat16 raglab index --corpus \S+ --profile small"):
        load_index(str(folder), "small", SETTINGS, "hash-embedder", root=root, precision="bfloat16")

    bf16 = build_index(str(folder), "small", SETTINGS, HashEmbedder("bfloat16"), root=root)
    assert bf16.manifest["precision"] == "bfloat16" and bf16.version != fp32.version
    with pytest.raises(IndexNotReady, match=r"embedded in bfloat16, not float32: rebuild it with `raglab index --corpus"):
        load_index(str(folder), "small", SETTINGS, "hash-embedder", root=root)      # the setting's float32
    monkeypatch.setenv("RAGLAB_EMBED_PRECISION", "auto")
    monkeypatch.setattr(precisions, "native_bf16", lambda flags=None: True)
    assert load_index(str(folder), "small", SETTINGS, "hash-embedder", root=root).manifest["precision"] == "bfloat16"


def test_an_index_from_before_the_padding_rule_is_rebuilt(folder, tmp_path, monkeypatch):
    """An index whose manifest is of an earlier format (vectors padded batch by batch, or no precision
    recorded) is refused with the rebuild command."""
    root = tmp_path / "indexes"
    index = build_index(str(folder), "small", SETTINGS, HashEmbedder("float32"), root=root)
    assert index.manifest["padding"] == "pad16" and index.manifest["format"] == 3
    manifest_file = Path(index.path) / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    del manifest["precision"], manifest["padding"]
    manifest_file.write_text(json.dumps(manifest | {"format": 2}))
    with pytest.raises(IndexNotReady, match="its format is 2, not 3; rebuild it with `.*raglab index"):
        load_index(str(folder), "small", SETTINGS, "hash-embedder", root=root, precision="float32")
