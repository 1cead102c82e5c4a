"""Access fails closed (issue 12): every page that once leaked through its front matter is, on FAISS and
pgvector, either read as restricted or stops the load with ``file:line``; ``raglab search`` and ``POST /ask``
as a public user find nothing of it; an index built before the fix is refused, and pgvector re-syncs
every page whose access changed."""
import hashlib
import json
import re

import pytest
from fastapi.testclient import TestClient

from raglab.base import config

from raglab.infra import embedder as embeddings
from raglab.infra.assemble import build_assistant
from raglab.book.chunking import ChunkSettings
from raglab.infra.corpus import load_corpus
from raglab.base.corpus_files import CorpusError
from raglab.infra.index import IndexNotReady, index_name
from raglab.surfaces.web.app import create_app
from raglab.surfaces.cli import main

SECRET = "7391-ZEPHYR"
PAGE = "vault/secret.md"
QUESTION = "What is the vault door code?"
BODY = f"# Vault door\n\nThe vault door code is {SECRET}. Only the night shift may open the vault door.\n"
SETTINGS = ChunkSettings("words", 60, 10)
CHUNKING = ["--profile", "small", "--strategy", "words", "--size", "60", "--overlap", "10"]
TOKENS = {"fail-closed-public-0001": ["public"], "fail-closed-premium-0002": ["premium"]}
PUBLIC = {"Authorization": "Bearer fail-closed-public-0001"}
PREMIUM = {"Authorization": "Bearer fail-closed-premium-0002"}

# Each page was found today by a public search (the first five variants in the issue, plus its neighbours);
# each must now be read as premium.
READ_AS_PREMIUM = {
    "trailing space on the fence": {"secret.md": "--- \naccess: [premium]\n---\n" + BODY},
    "blank first line": {"secret.md": "\n---\naccess: [premium]\n---\n" + BODY},
    "byte-order mark": {"secret.md": "\ufeff---\naccess: [premium]\n---\n" + BODY},
    "windows line ends": {"secret.md": ("---\naccess: [premium]\n---\n" + BODY).replace("\n", "\r\n")},
    "comment before the fence": {"secret.md": "<!-- draft -->\n---\naccess: [premium]\n---\n" + BODY},
    "folder default, no front matter": {"secret.md": BODY, "raglab.toml": 'default_access = ["premium"]\n'},
}
# Each must stop the load, naming the file and line.
REFUSED = {
    "repeated key": ("---\naccess: [premium]\naccess: public\n---\n" + BODY,
                     r"vault/secret\.md:3: front matter key 'access' is repeated \(first on line 2\)"),
    "misspelt key": ("---\nacces: [premium]\n---\n" + BODY,
                     r"vault/secret\.md:2: unknown front matter key 'acces' \(did you mean 'access'\?\)"),
    "access in a second block": ("---\ntitle: Vault\n---\n---\naccess: [premium]\n---\n" + BODY,
                                 r"vault/secret\.md:4: a second '---' block follows the front matter"),
}


@pytest.fixture(scope="module", autouse=True)
def one_model_load(workdir):
    """Every ``Embedder`` of this module shares one loaded model (each CLI verb makes its own Embedder)."""
    loaded = {}
    load = embeddings.Embedder._load

    def shared(self):
        if self.model_id not in loaded:
            loaded[self.model_id] = load(self)
        return loaded[self.model_id]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(embeddings.Embedder, "_load", shared)
        yield


@pytest.fixture(params=["faiss", "pgvector"])
def store(request):
    if request.param == "pgvector":
        request.getfixturevalue("pg_url")
    return request.param


def _corpus(root, vault: dict[str, str]) -> str:
    """Two public pages and a ``vault/`` folder holding ``vault`` (file name -> text, written as UTF-8 bytes)."""
    (root / "vault").mkdir(parents=True)
    (root / "shipping.md").write_text("---\ntitle: Shipping\n---\n# Shipping\n\nParcels ship within two days.\n")
    (root / "returns.md").write_text("# Returns\n\nReturn an item within 30 days for a refund of the full price.\n")
    for name, text in vault.items():
        (root / "vault" / name).write_bytes(text.encode("utf-8"))
    return str(root)


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _search(capsys, corpus: str, store: str, user: str) -> list[dict]:
    code, out, err = _run(capsys, "search", QUESTION, "--corpus", corpus, *CHUNKING, "--store", store,
                          "--user", user, "--k", 10, "--json")
    assert code == 0, err
    return json.loads(out)


def _ask(corpus: str, store: str, headers: dict) -> str:
    """``POST /ask`` through the HTTP app over the index already built; the response's text."""
    assistant = build_assistant(corpus, "small", SETTINGS, generator="extractive", threshold=0.0, store=store,
                                build=False)
    with TestClient(create_app(assistant=assistant, tokens=TOKENS)) as client:
        r = client.post("/ask", json={"question": QUESTION}, headers=headers)
    assert r.status_code == 200, r.text
    return r.text


def _finds_nothing_of_the_page(text: str) -> bool:
    return SECRET not in text and PAGE not in text


@pytest.mark.parametrize("variant", READ_AS_PREMIUM)
def test_a_restricted_page_stays_restricted_whatever_its_front_matter_looks_like(variant, store, tmp_path, capsys):
    corpus = _corpus(tmp_path / "docs", READ_AS_PREMIUM[variant])
    code, out, err = _run(capsys, "corpus", "info", "--corpus", corpus, "--json")
    assert code == 0, err
    assert {p["id"]: p["access"] for p in json.loads(out)["pages"]}[PAGE] == ["premium"]
    code, out, err = _run(capsys, "index", "--corpus", corpus, *CHUNKING, "--store", store)
    assert code == 0, err

    public = _search(capsys, corpus, store, "public")
    assert public and _finds_nothing_of_the_page(json.dumps(public))
    premium = _search(capsys, corpus, store, "premium")   # the page is indexed: the filter hides it, not luck
    assert premium[0]["doc"] == PAGE and SECRET in premium[0]["text"]

    assert _finds_nothing_of_the_page(_ask(corpus, store, PUBLIC))
    assert SECRET in _ask(corpus, store, PREMIUM)


@pytest.mark.parametrize("variant", REFUSED)
def test_an_unreadable_access_stops_index_search_and_ask_with_file_and_line(variant, store, tmp_path, capsys):
    page, error = REFUSED[variant]
    corpus = _corpus(tmp_path / "docs", {"secret.md": "---\naccess: [premium]\n---\n" + BODY})
    assert _run(capsys, "index", "--corpus", corpus, *CHUNKING, "--store", store)[0] == 0
    (tmp_path / "docs" / PAGE).write_text(page)   # the page is edited after the index was built

    for verb in (["index"], ["search", QUESTION, "--user", "public", "--json"],
                 ["ask", QUESTION, "--user", "public", "--json"]):
        code, out, err = _run(capsys, *verb, "--corpus", corpus, *CHUNKING, "--store", store)
        assert code == 2 and SECRET not in out + err and "Traceback" not in err
        assert re.search(error, err), err
    with pytest.raises(CorpusError, match=error):   # `raglab serve` does not start
        with TestClient(create_app(tokens=TOKENS, loader=lambda: build_assistant(
                corpus, "small", SETTINGS, generator="extractive", store=store, build=False))):
            pass


def _old_corpus_hash(docs) -> str:
    """The corpus hash of an index built before the fix: ids and file bytes only."""
    return hashlib.sha256("".join(d.id + d.sha256 for d in docs).encode()).hexdigest()


def _as_built_before_the_fix(corpus: str, store: str) -> None:
    """Turn a fresh index into what the old code built from the trailing-space page: format 1, the page public."""
    docs = load_corpus(corpus, "small")
    if store == "faiss":
        path = config.work_dir() / "indexes" / index_name(corpus, "small", SETTINGS)
        manifest = json.loads((path / "manifest.json").read_text())
        manifest.update(format=1, corpus_sha256=_old_corpus_hash(docs), documents={d.id: d.sha256 for d in docs})
        (path / "manifest.json").write_text(json.dumps(manifest))
        rows = [json.loads(line) for line in (path / "chunks.jsonl").read_text().splitlines()]
        rows = [{**r, "access": ["public"]} if r["doc"] == PAGE else r for r in rows]
        (path / "chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return
    from raglab.infra.pg_index import table_name
    from raglab.infra.stores.pgvector_store import PgVectorStore

    with PgVectorStore(table_name(corpus, "small", SETTINGS)) as pg, pg.transaction():
        pg.conn.execute(f"UPDATE {pg.table} SET access = %s WHERE doc = %s", (["public"], PAGE))
        for d in docs:
            pg.set_doc_hash(d.id, d.sha256)
        manifest = json.loads(pg.get_meta("manifest"))
        pg.set_meta("manifest", json.dumps({**manifest, "format": 1, "corpus_sha256": _old_corpus_hash(docs)}))


def test_an_index_built_before_the_fix_is_refused_with_the_rebuild_command(store, tmp_path, capsys):
    corpus = _corpus(tmp_path / "docs", READ_AS_PREMIUM["trailing space on the fence"])
    assert _run(capsys, "index", "--corpus", corpus, *CHUNKING, "--store", store)[0] == 0
    _as_built_before_the_fix(corpus, store)

    code, out, err = _run(capsys, "search", QUESTION, "--corpus", corpus, *CHUNKING, "--store", store,
                          "--user", "public", "--json")
    assert code == 2 and SECRET not in out + err and "format" in err
    rebuild = "raglab index --store pgvector --corpus" if store == "pgvector" else "raglab index --corpus"
    assert f"{rebuild} {corpus} --profile small --strategy words --size 60 --overlap 10" in err
    with pytest.raises(IndexNotReady, match="format"):
        _ask(corpus, store, PUBLIC)

    code, out, err = _run(capsys, "index", "--corpus", corpus, *CHUNKING, "--store", store, "--json")
    assert code == 0, err
    if store == "pgvector":   # every page is re-synced once: none has the fingerprint the new code records
        assert json.loads(out)["updated"] == 3
    assert _finds_nothing_of_the_page(json.dumps(_search(capsys, corpus, store, "public")))
    assert _finds_nothing_of_the_page(_ask(corpus, store, PUBLIC))


def test_a_folder_default_alone_resyncs_the_pages_of_that_folder(store, tmp_path, capsys):
    corpus = _corpus(tmp_path / "docs", {"secret.md": BODY, "note.md": "---\naccess: [public]\n---\n# Note\n\nHello.\n"})
    assert _run(capsys, "index", "--corpus", corpus, *CHUNKING, "--store", store)[0] == 0
    assert SECRET in json.dumps(_search(capsys, corpus, store, "public"))   # public, as written

    (tmp_path / "docs" / "vault" / "raglab.toml").write_text('default_access = ["premium"]\n')   # no page changes
    code, out, err = _run(capsys, "search", QUESTION, "--corpus", corpus, *CHUNKING, "--store", store, "--json")
    assert code == 2 and "changed" in err and SECRET not in out   # the old index is stale, not served
    code, out, err = _run(capsys, "index", "--corpus", corpus, *CHUNKING, "--store", store, "--json")
    assert code == 0, err
    report = json.loads(out)
    if store == "faiss":   # the folder's default is in the hash of each of its pages, with or without front matter
        assert report["changes"]["updated"] == ["vault/note.md", PAGE]
        assert report["changes"]["unchanged"] == ["returns.md", "shipping.md"]
        assert report["folder_settings"] == {"vault/raglab.toml": {"default_access": ["premium"]}}
    else:
        assert (report["updated"], report["unchanged"]) == (2, 2)
    assert _finds_nothing_of_the_page(json.dumps(_search(capsys, corpus, store, "public")))
    assert _finds_nothing_of_the_page(_ask(corpus, store, PUBLIC))
    assert SECRET in _ask(corpus, store, PREMIUM)
