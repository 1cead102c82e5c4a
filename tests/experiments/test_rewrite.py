"""Query rewriting: the rule-based splitter on hand-written questions, the LLM rewriter against a fake
OpenAI-compatible server on 127.0.0.1 (and its fallback when nothing listens), rewrite_search against
plain search and against RRF recomputed by hand, and the experiment's numbers against its own rows."""
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest

from raglab.base import config
from raglab.evaluation.golden import load_golden
from raglab.evaluation.metrics import evidence_recall
from raglab.evaluation.statistics import bootstrap_ci, paired_test
from raglab.experiments.rewrite import format_rewrite, rewrite_search, run_rewrite_experiment
from raglab.experiments.rewrite_rules import rule_rewrite
from raglab.experiments.rewriters import LLMRewriter, RuleRewriter, make_rewriter, parse_queries
from raglab.book.fusion import rrf
from raglab.infra.packaged_models import free_port

SPLITS = [
    ("What does json.dumps do, and how does it handle non-ASCII text?",
     ["What does json.dumps do?", "How does it handle non-ASCII text (json.dumps)?"]),
    ("Where are log files stored and how long are they kept?",
     ["Where are log files stored?", "How long are they kept (log files stored)?"]),
    ("Before I upgrade, which packages break and should I pin them?",
     ["Before I upgrade, which packages break?", "Before I upgrade, should I pin them?"]),
    ("I deploy with Docker; how do I set the port, and where do logs go?",
     ["I deploy with Docker; how do I set the port?", "I deploy with Docker; where do logs go?"]),
    ("How do I reset my password? Can I change my e-mail address too?",
     ["How do I reset my password?", "Can I change my e-mail address too?"]),
    ("What is the difference between a process and a thread?", ["What is a process?", "What is a thread?"]),
    ("How does a tuple differ from a list?", ["What is a tuple?", "What is a list?"]),
    ("Should I use asyncio versus threads for network calls?",
     ["Should I use asyncio for network calls?", "Should I use threads for network calls?"]),
    ("Do both sets and dicts keep insertion order?", ["Do sets keep insertion order?", "Do dicts keep insertion order?"]),
    ("How do I sort a list of dicts, tuples, or objects by a key?",
     ["How do I sort a list of dicts by a key?", "How do I sort a list of tuples by a key?",
      "How do I sort a list of objects by a key?"]),
    ("How many failed logins lock the account, and for how long?",
     ["How many failed logins lock the account?", "For how long (failed logins lock account)?"]),
]
SINGLE = ["How long is a refund valid?", "Which operators give floor division and the remainder?",
          "Does heapq.heappop return the smallest or the largest item?", "How do I read and write files?",
          "What does 'a and b; c' return?", "As a paying member, how quickly will support reply?",
          "The parcel never arrived - who do I contact?", "Explain list comprehensions.",
          "What does it cost to ship to Canada?"]


@pytest.mark.parametrize("question,expected", SPLITS)
def test_rule_rewrite_splits_by_grammar(question, expected):
    assert rule_rewrite(question) == expected


@pytest.mark.parametrize("question", SINGLE)
def test_single_part_questions_come_back_unchanged(question):
    assert rule_rewrite(question) == [question]


def _golden_questions():
    return [q.question for name in ("python_docs_golden.jsonl", "helpcenter_golden.jsonl")
            for q in load_golden(config.PROJECT_ROOT / "evals" / name)]


def test_rule_rewrite_properties():
    """Every sub-query is non-empty and unique, the output is deterministic, and at most five come back."""
    for q in [q for q, _ in SPLITS] + SINGLE + _golden_questions():
        out = rule_rewrite(q)
        assert out == rule_rewrite(q) and 1 <= len(out) <= 5
        assert all(s.strip() for s in out)
        assert len({s.lower() for s in out}) == len(out)
        if len(out) == 1:
            assert out == [q]
    assert rule_rewrite("") == [""]


def test_parse_queries_cleans_model_output():
    text = ("Here are the search queries:\n\n1. What is a deque?\n2) How fast is deque.popleft()?\n"
            "- what is a deque\n* \"Why is list.pop(0) slow?\"\nQuery 4: one too many\n")
    assert parse_queries(text, "Q?") == ["What is a deque?", "How fast is deque.popleft()?", "Why is list.pop(0) slow?"]
    assert parse_queries("", "Q?") == ["Q?"] and parse_queries("1.\n-\n:", "Q?") == ["Q?"]
    assert parse_queries("```bash\npython -m venv env\n```", "Q?") == ["python -m venv env"]


# ---------------------------------------------------------------- a fake OpenAI-compatible server

class _FakeChat(BaseHTTPRequestHandler):
    """Answers every chat completion with ``reply`` and records each request."""

    reply = ""
    requests: ClassVar[list] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": type(self).reply}}],
                              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture()
def fake_llm():
    server = HTTPServer(("127.0.0.1", 0), _FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeChat.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


def test_llm_rewriter_parses_the_model_reply(fake_llm, monkeypatch):
    monkeypatch.setenv("LLM_BASE_URL", fake_llm)
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    monkeypatch.setenv("LLM_API_KEY", "test-key")
    _FakeChat.reply = "Sure:\n1. What is a deque?\n2. What is a deque?\n\n3) deque append speed\n4. list as queue\n5. more"
    rewriter = make_rewriter("auto")
    assert isinstance(rewriter, LLMRewriter) and rewriter.name == "llm:fake-model"
    question = "Why is a list a poor queue, and what should I use instead?"
    assert rewriter.rewrite(question) == ["What is a deque?", "deque append speed", "list as queue"]
    assert rewriter.last_ran == "llm:fake-model" and rewriter.note is None
    sent = _FakeChat.requests[-1]
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer test-key"
    assert sent["body"]["model"] == "fake-model" and sent["body"]["temperature"] == 0
    messages = sent["body"]["messages"]
    assert messages[-1] == {"role": "user", "content": question} and "at most 3" in messages[0]["content"]
    _FakeChat.reply = "   \n"
    assert rewriter.rewrite(question) == [question]


def test_unreachable_server_falls_back_to_the_rules(monkeypatch):
    rewriter = LLMRewriter(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", retries=0, timeout=2)
    question = "How do I create a virtual environment, and how can my code check whether it is running inside one?"
    assert rewriter.rewrite(question) == rule_rewrite(question)
    assert rewriter.last_ran == "rules (fallback from llm:m)" and "could not be reached" in rewriter.note
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    assert isinstance(make_rewriter("auto"), RuleRewriter) and make_rewriter().name == "rules"
    with pytest.raises(ValueError, match="unknown rewriter"):
        make_rewriter("magic")


# ---------------------------------------------------------------- rewrite_search

@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_rewrite_search_is_plain_search_when_nothing_is_split(retriever, mode):
    for q, user in [("How long do I have to return an item?", None), ("What is the Plus Concierge phone number?", ("premium",))]:
        plain = retriever.search(q, mode, 5, user)
        fused = rewrite_search(retriever, q, lambda question: [question], mode, 5, user)
        assert [(h.id, h.doc) for h in fused] == [(h.id, h.doc) for h in plain]


def test_rewrite_search_fuses_every_sub_query_with_rrf(retriever):
    question = "How long is a password reset link valid, and how many wrong passwords lock my account?"
    subs = rule_rewrite(question)
    assert len(subs) == 2
    fused = rewrite_search(retriever, question, RuleRewriter(), "hybrid", 5)
    lists = {f"q{n}": [h.id for h in retriever.search(q, "hybrid", 20)] for n, q in enumerate([question] + subs)}
    assert [h.id for h in fused] == [i for i, _ in rrf(lists)[:5]]
    assert [h.rank for h in fused] == [1, 2, 3, 4, 5]
    assert all(set(h.ranks) <= set(lists) and h.ranks for h in fused)


# ---------------------------------------------------------------- the experiment

def test_rewrite_experiment_numbers_come_from_its_rows(index, embedder):
    bad = LLMRewriter(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", retries=0, timeout=2)
    result = run_rewrite_experiment("helpcenter", "small", rewriter=bad, k=2, embedder=embedder)
    assert {"n", "rewriter", "questions", "baseline", "rewritten", "paired", "verdict", "corpus", "k", "mode"} <= set(result)
    assert result["rewriter"] == "rules (fallback from llm:m)" and "could not be reached" in result["note"]
    golden = load_golden(config.PROJECT_ROOT / "evals" / "helpcenter_golden.jsonl")
    assert [r["id"] for r in result["questions"]] == [q.id for q in golden if q.type == "multi"] and result["n"] == 5
    by_id = {q.id: q for q in golden}
    chunks = index.chunks
    row_of = {c.id: c for c in chunks}
    for row in result["questions"]:
        assert set(row) >= {"id", "question", "sub_queries", "recall_without", "recall_with"}
        assert row["sub_queries"] == rule_rewrite(row["question"])
        q = by_id[row["id"]]
        assert row["recall_with"] == evidence_recall([row_of[i] for i in row["retrieved_with"]], q, 2)
        assert row["recall_without"] == evidence_recall([row_of[i] for i in row["retrieved_without"]], q, 2)
    without = [r["recall_without"] for r in result["questions"]]
    with_ = [r["recall_with"] for r in result["questions"]]
    assert result["baseline"] == bootstrap_ci(without) and result["rewritten"] == bootstrap_ci(with_)
    assert result["baseline"]["value"] == round(sum(without) / len(without), 4)
    assert result["rewritten"]["value"] == round(sum(with_) / len(with_), 4)
    assert result["paired"] == paired_test(without, with_)
    text = format_rewrite(result)
    assert result["verdict"] in text and all(r["id"] in text for r in result["questions"])
    assert f"{result['paired']['diff']:+.3f}" in result["verdict"]
