"""Corpora: the bundled archive, the folder loader, front matter, bad input, the downloader."""
import functools
import hashlib
import http.server
import json
import threading
import warnings
from pathlib import Path

import pytest

from raglab import config
from raglab.corpus import (BUNDLED_SHA256, CorpusError, CorpusWarning, fetch_python_docs, load_corpus,
                           load_folder, parse_front_matter, python_docs_dir, read_text_file)
from raglab.io import read_jsonl

ARCHIVE = config.data_dir() / "python-docs-text-3.11.tar.xz"


def test_bundled_archive_checksum_matches_data_readme():
    assert hashlib.sha256(ARCHIVE.read_bytes()).hexdigest() == BUNDLED_SHA256
    readme = (config.data_dir() / "README.md").read_text()
    assert BUNDLED_SHA256 in readme and "Python Software Foundation" in readme


def test_full_profile_has_every_page_and_attribution_pages():
    root = python_docs_dir()
    pages = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.txt"))
    assert len(pages) == 497
    assert "license.txt" in pages and "copyright.txt" in pages


def test_small_profile_is_a_subset_and_holds_every_golden_page(python_docs):
    listed = config.small_profile_pages()
    assert [d.id for d in python_docs] == sorted(listed)
    for golden in sorted(Path(config.PROJECT_ROOT, "evals").glob("python_docs*.jsonl")):
        for record in read_jsonl(golden):
            for ev in record.get("evidence", []):
                assert ev["doc"] in listed, f"{golden.name}: {ev['doc']} is not in the small profile"


def test_python_docs_documents_carry_title_source_hash(python_docs):
    doc = next(d for d in python_docs if d.id == "library/json.txt")
    assert doc.title.startswith('"json"')
    assert doc.source == "https://docs.python.org/3.11/library/json.html"
    raw = (python_docs_dir() / "library/json.txt").read_bytes()
    assert doc.sha256 == hashlib.sha256(raw).hexdigest()
    assert doc.access == ("public",)


def test_folder_loader_recurses_and_reads_front_matter(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "deep.md").write_text("---\ntitle: Deep page\naccess: [premium, staff]\n---\n# Ignored\n\nText.\n")
    (tmp_path / "top.txt").write_text("Top Title\n*********\n\nBody text.\n")
    (tmp_path / "plain.md").write_text("no heading here\n")
    (tmp_path / "skip.rst").write_text("not loaded")
    docs = {d.id: d for d in load_folder(tmp_path)}
    assert sorted(docs) == ["a/deep.md", "plain.md", "top.txt"]
    assert docs["a/deep.md"].title == "Deep page"
    assert docs["a/deep.md"].access == ("premium", "staff")
    assert docs["a/deep.md"].text.startswith("# Ignored")
    assert docs["top.txt"].title == "Top Title" and docs["top.txt"].access == ("public",)
    assert docs["plain.md"].title == "plain"


def test_front_matter_block_list_and_errors_name_file_and_line():
    meta, body = parse_front_matter("---\naccess:\n  - premium\n  - staff\n---\nx", "f.md")
    assert meta["access"] == ("premium", "staff") and body == "x"
    with pytest.raises(CorpusError, match=r"f\.md:1: .*never closed"):
        parse_front_matter("---\ntitle: x\n", "f.md")
    with pytest.raises(CorpusError, match=r"f\.md:3: .*not 'key: value'"):
        parse_front_matter("---\ntitle: x\nthis is not metadata\n---\n", "f.md")
    with pytest.raises(CorpusError, match=r"f\.md:2: access group 'pre mium'"):
        parse_front_matter("---\naccess: [pre mium]\n---\n", "f.md")
    with pytest.raises(CorpusError, match=r"f\.md:2: .*unbalanced"):
        parse_front_matter("---\naccess: [premium\n---\n", "f.md")


def test_malformed_front_matter_stops_the_load(tmp_path):
    (tmp_path / "ok.md").write_text("# Fine\n")
    (tmp_path / "bad.md").write_text("---\naccess: [premium\n---\n# Secret\n")
    with pytest.raises(CorpusError, match="bad.md:2"):
        load_folder(tmp_path)


def test_empty_binary_and_broken_files_are_skipped_with_a_named_warning(tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nText.\n")
    (tmp_path / "empty.md").write_text("  \n")
    (tmp_path / "binary.txt").write_bytes(b"\x89PNG\x00\x00\x01")
    (tmp_path / "only-meta.md").write_text("---\ntitle: x\n---\n")
    (tmp_path / "dangling.md").symlink_to(tmp_path / "missing.md")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = load_folder(tmp_path)
    assert [d.id for d in docs] == ["good.md"]
    messages = " | ".join(str(w.message) for w in caught if w.category is CorpusWarning)
    for name, why in [("empty.md", "empty file"), ("binary.txt", "binary"),
                      ("only-meta.md", "no text"), ("dangling.md", "broken symlink")]:
        assert f"{name}: {why}" in messages


def test_invalid_utf8_is_replaced_and_reported_with_its_line(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes(b"line one\nline two caf\xe9\nline three\n")
    with pytest.warns(CorpusWarning, match=r"latin\.txt:2: invalid UTF-8, 1 byte sequence"):
        text, digest = read_text_file(path)
    assert text == "line one\nline two caf\ufffd\nline three\n"
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_large_file_is_streamed_intact_across_block_boundaries(tmp_path):
    # multi-byte characters placed so that many straddle the 1 MiB read blocks
    unit = "naïve café — ünïcode\r\n"
    text = unit * 400_000  # about 10 MB
    path = tmp_path / "big.txt"
    path.write_bytes(text.encode("utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, digest = read_text_file(path)
    assert got == text.replace("\r\n", "\n")
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.warns(CorpusWarning, match=r"big\.txt: .* over the 1,000-byte limit"):
        assert read_text_file(path, max_bytes=1000) is None


def test_symlink_loop_is_reported_and_the_walk_ends(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.md").write_text("# Page\n")
    (tmp_path / "sub" / "loop").symlink_to(tmp_path, target_is_directory=True)
    with pytest.warns(CorpusWarning, match="symlink loop"):
        docs = load_folder(tmp_path)
    assert "sub/page.md" in [d.id for d in docs]


def test_unknown_corpus_and_missing_profile_page_are_clear_errors(tmp_path, monkeypatch):
    with pytest.raises(CorpusError, match="unknown corpus 'nope'.*python-docs, helpcenter"):
        load_corpus("nope")
    (tmp_path / "a.txt").write_text("A\n")
    with pytest.raises(CorpusError, match="missing: b.txt"):
        load_folder(tmp_path, only=["b.txt"])
    with pytest.raises(ValueError, match="RAGLAB_PROFILE"):
        config.profile("huge")


@pytest.fixture
def archive_server(tmp_path):
    """A local HTTP server on 127.0.0.1 serving the bundled archive and a truncated copy."""
    root = tmp_path / "srv"
    root.mkdir()
    (root / "good.tar.xz").write_bytes(ARCHIVE.read_bytes())
    (root / "truncated.tar.xz").write_bytes(ARCHIVE.read_bytes()[:100_000])
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_fetch_downloads_checks_and_extracts(archive_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_WORKDIR", str(tmp_path / "work"))
    dest = fetch_python_docs("3.99", url=f"{archive_server}/good.tar.xz", sha256=BUNDLED_SHA256)
    assert dest == tmp_path / "work" / "corpora" / "python-docs-3.99"
    assert len(list(dest.rglob("*.txt"))) == 497
    recorded = json.loads((dest / ".raglab-source.json").read_text())
    assert recorded["sha256"] == BUNDLED_SHA256 and recorded["version"] == "3.99"
    assert _leftovers(dest.parent) == []
    docs = load_corpus("python-docs-3.99")
    assert len(docs) == 497


def test_fetch_refuses_a_bad_checksum_and_leaves_nothing(archive_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_WORKDIR", str(tmp_path / "work"))
    with pytest.raises(CorpusError, match="sha256 is .* expected 0000"):
        fetch_python_docs("3.98", url=f"{archive_server}/good.tar.xz", sha256="0" * 64)
    corpora = tmp_path / "work" / "corpora"
    assert list(corpora.iterdir()) == []


def test_refetch_must_match_the_recorded_hash_and_keeps_the_old_copy(archive_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_WORKDIR", str(tmp_path / "work"))
    dest = fetch_python_docs("3.97", url=f"{archive_server}/good.tar.xz")
    with pytest.raises(CorpusError, match="sha256"):
        fetch_python_docs("3.97", url=f"{archive_server}/truncated.tar.xz")
    assert len(list(dest.rglob("*.txt"))) == 497
    assert _leftovers(dest.parent) == []


def test_fetch_reports_an_unreachable_server_and_a_broken_archive(archive_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_WORKDIR", str(tmp_path / "work"))
    with pytest.raises(CorpusError, match="download failed"):
        fetch_python_docs("3.96", url=f"{archive_server}/missing.tar.xz")
    with pytest.raises(CorpusError, match="cannot extract"):
        fetch_python_docs("3.96", url=f"{archive_server}/truncated.tar.xz")
    assert list((tmp_path / "work" / "corpora").iterdir()) == []
    with pytest.raises(CorpusError, match="expected a Python version"):
        fetch_python_docs("latest")


def test_a_genuine_replacement_character_is_not_reported(tmp_path):
    path = tmp_path / "codecs.txt"
    path.write_text("On decoding, use \ufffd (U+FFFD).\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text, _ = read_text_file(path)
    assert "\ufffd" in text


def test_invalid_byte_line_is_counted_across_read_blocks(tmp_path):
    path = tmp_path / "late.txt"
    path.write_bytes(b"x\n" * 700_000 + b"bad \xff byte\n")  # past the first 1 MiB block
    with pytest.warns(CorpusWarning, match=r"late\.txt:700001: invalid UTF-8"):
        read_text_file(path)
