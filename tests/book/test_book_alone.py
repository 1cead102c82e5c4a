"""The book runs alone: from ``raglab.book`` and ``raglab.base`` only, a learner builds an index from a folder,
searches it in every mode for a user, and answers with a checked citation or the refusal, with any embedding
function passed in (here a tiny deterministic one: words of five letters or more hashed into 4,096 buckets). The script runs in a new
process, whose ``sys.modules`` then holds no module of infra, the guards, the answerer, evaluation, the
experiments, the course or the surfaces.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
HELPCENTER = ROOT / "data" / "helpcenter"
ROOMS = ("infra", "guards", "answerer", "evaluation", "experiments", "course", "surfaces")

SCRIPT = r'''
import hashlib, json, sys
import numpy as np
from raglab.book.assistant import Assistant
from raglab.book.bm25 import tokenize
from raglab.book.chunking import ChunkSettings
from raglab.book.documents import load_folder
from raglab.book.embed import FunctionEmbedder
from raglab.book.llm import ScriptedGenerator
from raglab.book.memory_index import build_memory_index
from raglab.book.rerank import SentenceMaxReranker
from raglab.book.retrieve import MODES, Retriever

def embed(texts):
    """Each word of five letters or more counted in one of 4,096 buckets (its sha1): texts that share such words
    point the same way."""
    out = np.zeros((len(texts), 4096), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in (w for w in tokenize(text) if len(w) >= 5):
            out[row, int(hashlib.sha1(word.encode()).hexdigest(), 16) % 4096] += 1
    return out

index = build_memory_index(load_folder(sys.argv[1], (".md",)), ChunkSettings("headings"), embed)
embedder = FunctionEmbedder(embed)
retriever = Retriever(index, embedder, reranker=SentenceMaxReranker(embedder))
question = "How many requests per minute does a Plus production key get?"
found = {mode: [h.doc for h in retriever.search(question, mode, 5, ("premium",))] for mode in MODES}
public = {mode: [h.doc for h in retriever.search(question, mode, 5)] for mode in MODES}
restricted = sorted({c.doc for c in index.chunks if "public" not in c.access})

def ask(text, q=question, user=("premium",)):
    answer = Assistant(retriever, ScriptedGenerator(text), threshold=0.5, k=5).ask(q, user)
    return {"refused": answer.refused, "reason": answer.reason, "cited": [c.doc for c in answer.citations],
            "evidence": answer.evidence}

print(json.dumps({
    "chunks": len(index.chunks), "found": found, "public": public, "restricted": restricted,
    "cited": ask("A Plus production key gets 1,800 requests per minute [1]."),
    "invented": ask("A Plus production key gets 1,800 requests per minute [9]."),
    "off_topic": ask("It is about 11 metres per second [1].", "What is the airspeed of an unladen swallow?"),
    "modules": sorted(m for m in sys.modules if m.startswith("raglab")),
}))
'''


@pytest.fixture(scope="module")
def alone():
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(HELPCENTER)], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_nothing_but_the_book_and_base_was_imported(alone):
    rooms = {m.split(".")[1] for m in alone["modules"] if m.count(".") >= 1}
    assert rooms <= {"book", "base"} and not rooms & set(ROOMS), alone["modules"]


def test_every_mode_finds_the_page_that_holds_the_answer(alone):
    page = "plus/api-limits.md"
    assert alone["chunks"] > 20
    assert {mode: page in docs for mode, docs in alone["found"].items()} == dict.fromkeys(alone["found"], True)


def test_a_public_user_never_gets_a_restricted_page(alone):
    assert alone["restricted"] and "plus/api-limits.md" in alone["restricted"]
    for mode, docs in alone["public"].items():
        assert not set(docs) & set(alone["restricted"]), mode


def test_a_cited_answer_passes_an_invented_citation_and_weak_evidence_are_refused(alone):
    assert alone["cited"]["refused"] is False and alone["cited"]["cited"] == ["plus/api-limits.md"]
    assert alone["invented"]["refused"] is True and alone["invented"]["reason"] == "invalid-citation"
    assert alone["off_topic"]["refused"] is True and alone["off_topic"]["reason"] == "weak-evidence"
    assert alone["off_topic"]["evidence"] < 0.5 <= alone["cited"]["evidence"]
