"""Index writes fail closed: a build killed at any write point, a truncated file, or two builds of
the same index at once leave a usable index or a clear error naming the file and the rebuild command.

Builds run in subprocesses (``RAGLAB_CRASH_AT`` makes one SIGKILL itself at a named point) with a
hashing embedder, so that no model is loaded and each build takes about a second.
"""
import json
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from raglab.book.chunking import ChunkSettings
from raglab.base.files import dir_lock
from raglab.infra.index import IndexNotReady, build_index, index_name, load_index

pytestmark = pytest.mark.slow   # a model, a server, PostgreSQL or many subprocess builds

SETTINGS = ChunkSettings("words", 40, 0)
MODEL = "hash-embedder"
HERE = Path(__file__).parent
PAGES = {"returns.md": "# Returns\n\nYou may return an item within 30 days of delivery for a refund.\n",
         "shipping.md": "# Shipping\n\nParcels ship within two days. Tracking numbers arrive by e-mail.\n",
         "billing/cards.md": "# Cards\n\nWe accept credit cards and bank transfers for every order.\n"}
# Every crash point a build passes, in order, and whether the index a kill there leaves is the new one.
BUILD_POINTS = [("file-written:1", False), ("index-write", False), ("index-dense", False), ("index-bm25", False),
                ("file-written:2", False), ("dir-written", False), ("dir-set-aside", False), ("dir-renamed", True)]


class HashEmbedder:
    """Unit vectors from a hash of each text: deterministic, no model (the builds here test files, not search)."""

    model_id = MODEL

    def __init__(self):
        self.last_stats = {}

    def encode(self, texts):
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:16] for t in texts]
        vectors = np.array(rows, dtype=np.float32) + 1.0
        self.last_stats = {"texts": len(texts), "misses": len(texts)}
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build(folder, root, lock_timeout="60"):
    """One build of the test index (also what the subprocesses run)."""
    return build_index(str(folder), "small", SETTINGS, HashEmbedder(), root=Path(root), lock_timeout=float(lock_timeout))


def load(folder, root, **kw):
    return load_index(str(folder), "small", SETTINGS, MODEL, root=Path(root), precision="float32", **kw)


def start_build(folder, root, crash_at="", lock_timeout=60):
    """A build in a subprocess (killed at ``crash_at`` if given)."""
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); from test_index_writes import build; build(*sys.argv[1:])"
    env = {**os.environ, "RAGLAB_CRASH_AT": crash_at}
    return subprocess.Popen([sys.executable, "-c", code, str(folder), str(root), str(lock_timeout)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_build(folder, root, crash_at="", lock_timeout=60):
    proc = start_build(folder, root, crash_at, lock_timeout)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def leftovers(root):
    """Anything in the indexes folder but finished indexes (temporary or set-aside folders)."""
    return sorted(p.name for p in Path(root).iterdir() if p.name.startswith(".") or p.name.endswith(".old"))


def usable(index):
    """Every row of the index can be searched both ways, and the files agree."""
    assert len(index.chunks) == len(index.dense) == index.bm25.n_docs == index.manifest["n_chunks"]
    assert index.dense_search(HashEmbedder().encode(["refund"])[0], 3, None)
    assert index.bm25_search("refund", 3, None)
    return True


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_WORKDIR", str(tmp_path / "work"))
    root = tmp_path / "docs"
    for name, text in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def root(tmp_path):
    return tmp_path / "indexes"


def edit(folder):
    """Change the corpus, so that the next build differs from the last one."""
    page = folder / "returns.md"
    page.write_text(page.read_text() + "\nStore credit is issued within a week.\n")


def test_every_write_point_has_a_crash_test():
    names = set()
    for module in ("base/files", "infra/index"):
        names |= set(re.findall(r'crash_point\("([^"]+)"\)', (HERE.parents[1] / "raglab" / f"{module}.py").read_text()))
    assert names == {p.split(":")[0] for p, _ in BUILD_POINTS}


@pytest.mark.parametrize("crash_at,new", BUILD_POINTS)
def test_a_rebuild_killed_at_any_write_point_leaves_a_usable_index(folder, root, crash_at, new):
    before = build(folder, root)
    edit(folder)
    killed = run_build(folder, root, crash_at)
    assert killed.returncode == -9, killed.stderr[-2000:]
    after = load(folder, root, allow_stale=True)
    assert usable(after)
    assert after.version != before.version if new else after.version == before.version
    done = run_build(folder, root)
    assert done.returncode == 0, done.stderr[-2000:]
    final = load(folder, root)
    assert usable(final) and final.version != before.version
    assert final.manifest["changes"]["updated"] == ([] if new else ["returns.md"])
    assert leftovers(root) == []


@pytest.mark.parametrize("crash_at,new", [(p, n) for p, n in BUILD_POINTS if p != "dir-set-aside"])
def test_a_first_build_killed_at_any_write_point_leaves_an_index_or_a_clear_error(folder, root, crash_at, new):
    killed = run_build(folder, root, crash_at)
    assert killed.returncode == -9, killed.stderr[-2000:]
    if new:
        assert usable(load(folder, root))
    else:
        with pytest.raises(IndexNotReady, match=r"no index at .*: build it with `(RAGLAB_EMBED_PRECISION=float32 )?raglab index --corpus "):
            load(folder, root)
    assert run_build(folder, root).returncode == 0
    assert usable(load(folder, root)) and leftovers(root) == []


def test_a_set_aside_index_left_by_an_older_version_is_put_back(folder, root):
    before = build(folder, root)
    dest = root / before.path.name
    dest.rename(dest.with_name(dest.name + ".old"))   # what the old two renames left when killed between them
    assert load(folder, root).version == before.version
    assert leftovers(root) == []


@pytest.mark.parametrize("name,damage", [
    ("manifest.json", lambda b: b[: len(b) // 2]),
    ("manifest.json", lambda b: b"[]"),
    ("dense.faiss", lambda b: b[: len(b) // 2]),
    ("bm25.npz", lambda b: b[: len(b) // 2]),
    ("chunks.jsonl", lambda b: b[: len(b) // 2]),
    ("chunks.jsonl", lambda b: b.split(b"\n", 1)[1]),
])
def test_a_damaged_file_is_a_clear_error_and_a_rebuild_mends_it(folder, root, name, damage):
    index = build(folder, root)
    path = index.path / name
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(IndexNotReady) as caught:
        load(folder, root)
    message = str(caught.value)
    assert str(index.path) in message and "raglab index --corpus " in message
    assert name in message or "inconsistent" in message
    build(folder, root)
    assert usable(load(folder, root))


def test_a_second_build_waits_for_the_first_and_never_deletes_its_files(folder, root):
    from raglab.base.files import atomic_dir

    dest = root / index_name(str(folder), "small", SETTINGS, model_id=MODEL)
    with pytest.raises(RuntimeError, match="the first build stops"):
        with atomic_dir(dest) as tmp:          # a first build, in the middle of writing
            (tmp / "chunks.jsonl").write_text("{}\n")
            second = run_build(folder, root, lock_timeout=0.5)
            assert second.returncode == 1
            assert f"is being written by process {os.getpid()}" in second.stderr
            assert "raglab index --corpus " in second.stderr
            assert (tmp / "chunks.jsonl").exists()
            raise RuntimeError("the first build stops here, and leaves nothing")
    assert leftovers(root) == []
    assert run_build(folder, root).returncode == 0 and usable(load(folder, root))


def test_the_lock_names_another_process_holding_it(folder, root):
    dest = root / index_name(str(folder), "small", SETTINGS, model_id=MODEL)
    code = ("import sys, time; from raglab.base.files import dir_lock\n"
            "with dir_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(dest)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(IndexNotReady, match=rf"is being written by process {holder.pid}: gave up after waiting 0.3 s"):
            build(folder, root, lock_timeout=0.3)
    finally:
        holder.kill()
        holder.wait()
    assert usable(build(folder, root, lock_timeout=5))


def test_two_builds_at_once_both_finish_and_leave_one_usable_index(folder, root):
    dest = root / index_name(str(folder), "small", SETTINGS, model_id=MODEL)
    with dir_lock(dest):                      # both start while the folder is busy, so they overlap
        procs = [start_build(folder, root) for _ in range(2)]
        assert all(p.poll() is None for p in procs)
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in results]
    assert usable(load(folder, root)) and leftovers(root) == []



def test_every_file_and_the_folder_are_synced_before_the_switch(folder, root, monkeypatch):
    events, real_fsync, real_rename = [], os.fsync, os.rename

    def fsync(fd):
        events.append(("sync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def rename(src, dest):
        events.append(("rename", str(src), str(dest)))
        real_rename(src, dest)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    index = build(folder, root)
    switch = next(i for i, e in enumerate(events) if e[0] == "rename" and e[2] == str(index.path))
    tmp = events[switch][1]
    synced = {e[1] for e in events[:switch] if e[0] == "sync"}
    assert {f"{tmp}/{name}" for name in ("chunks.jsonl", "dense.faiss", "bm25.npz", "manifest.json")} | {tmp} <= synced
    assert ("sync", str(root)) in events[switch:]


def test_an_index_cut_by_an_older_chunker_is_refused_with_its_rebuild_command(folder, root):
    import json

    from raglab.book.chunking import CHUNKER_VERSION

    index = build(folder, root)
    manifest = json.loads((index.path / "manifest.json").read_text())
    assert manifest["chunker"] == CHUNKER_VERSION
    del manifest["chunker"]                      # as an index written before the chunker was versioned
    (index.path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexNotReady, match=rf"does not match: its chunker is None, not {CHUNKER_VERSION}; rebuild it with `(RAGLAB_EMBED_PRECISION=float32 )?raglab index --corpus "):
        load(folder, root)
    build(folder, root)
    assert usable(load(folder, root))


def test_a_refusal_record_never_overwrites_a_build_made_after_its_index_was_loaded(folder, root):
    """An answer that calibrates a folder writes its refusal record into the manifest of the build it
    loaded; if the folder was rebuilt meanwhile (a page changed), the new build's manifest is left as
    it is, and while a build holds the folder's lock the record waits briefly, then gives up."""
    from raglab.infra import calibration
    from raglab.base.files import dir_lock

    old = build(folder, root)
    assert calibration.record(load(folder, root), {"threshold": 0.4}) is True
    assert json.loads((old.path / "manifest.json").read_text())["refusal"] == {"threshold": 0.4}
    stale = load(folder, root)
    (folder / "returns.md").write_text(PAGES["returns.md"] + "\nStore credit never expires.\n")
    new = build(folder, root)
    written = (new.path / "manifest.json").read_text()
    assert calibration.record(stale, {"threshold": 0.9}) is False
    assert (new.path / "manifest.json").read_text() == written and "refusal" not in json.loads(written)
    assert usable(load(folder, root))
    calibration.LOCK_WAIT_RECORD, wait = 0.2, calibration.LOCK_WAIT_RECORD
    try:
        with dir_lock(new.path):          # a build in progress
            assert calibration.record(load(folder, root), {"threshold": 0.5}) is False
    finally:
        calibration.LOCK_WAIT_RECORD = wait
    assert calibration.record(load(folder, root), {"threshold": 0.5}) is True
