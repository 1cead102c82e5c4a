"""Token counting, prices and the cost experiment, the last against the real local SmolLM2 server.

One server is started for the module on 127.0.0.1 and stopped by its PID. Answers are capped at a few
tokens so the run stays short on a 2-core machine; the arithmetic does not depend on their length.
"""
import itertools
import json
import os
import urllib.request

import numpy as np
import pytest

from raglab.infra.corpus import load_corpus
from raglab.experiments.cost import LOCAL_KEY, NO_CALL, format_cost, run_cost_experiment
from raglab.experiments.pricing import Price, PriceError, answer_cost, load_prices, per_1000
from raglab.experiments.tokens import chat_prompt, count_message_tokens, count_tokens
from raglab.guards.guard import Guard
from raglab.book.prompt import Source, build_messages
from raglab.infra.packaged_models import MODEL_ALIAS, free_port, start_server

pytestmark = pytest.mark.slow   # a model, a server, PostgreSQL or many subprocess builds


@pytest.fixture(scope="module")
def server():
    srv = start_server(free_port())
    try:
        yield srv
    finally:
        srv.stop()
    assert srv.process.poll() is not None


# ---------------------------------------------------------------- counting

def test_count_tokens_basic_properties():
    assert count_tokens("") == 0
    assert count_tokens("Hello world") == 2
    assert count_tokens("<|im_start|>") == 1                       # a special token written in the text
    assert count_tokens("héllo ünïcode 日本") > 0


def test_count_tokens_is_nearly_additive_over_concatenation(python_docs):
    text = next(d for d in python_docs if d.id == "library/json.txt").text
    pieces = [p for p in text.split("\n\n") if p.strip()][:60]
    for a, b in itertools.pairwise(pieces):
        joined = count_tokens(a + "\n\n" + b)
        parts = count_tokens(a) + count_tokens("\n\n") + count_tokens(b)
        assert abs(joined - parts) <= 3, (a[:40], b[:40])
    whole = count_tokens("\n\n".join(pieces))
    assert abs(whole - sum(count_tokens(p) for p in pieces) - 59 * count_tokens("\n\n")) <= 3 * 59


def test_count_tokens_grows_with_the_text(python_docs):
    text = python_docs[0].text
    counts = [count_tokens(text[:n]) for n in range(0, len(text), max(1, len(text) // 20))]
    assert counts[0] == 0 and all(b >= a - 1 for a, b in itertools.pairwise(counts)) and counts[-1] > counts[1]


def test_chat_prompt_uses_the_models_template():
    p = chat_prompt([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])
    assert p == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"


def _doc_source(doc, n=1, limit=1500):
    from raglab.book.chunking import Chunk

    text = doc.text[:limit]
    return Source(n, Chunk(doc.id + "#0", doc.id, (doc.title,), 0, len(text), text, text, doc.access, "words"))


def test_message_tokens_equal_the_servers_prompt_tokens(server, python_docs):
    from openai import OpenAI

    client = OpenAI(base_url=server.base_url, api_key="unused")
    by_id = {d.id: d for d in python_docs}
    cases = [("Does json.dumps escape non-ASCII?", [_doc_source(by_id["library/json.txt"], 1, 700)]),
             ("Ünïcode & <tags> \"quoted\" — what?", [_doc_source(by_id["library/csv.txt"], 1, 300),
                                                     _doc_source(by_id["tutorial/venv.txt"], 2, 400)]),
             ("No sources at all?", [])]
    for question, sources in cases:
        messages = build_messages(question, sources, visible=Guard().visible)
        resp = client.chat.completions.create(model=MODEL_ALIAS, messages=messages, temperature=0, max_tokens=4)
        assert resp.usage.prompt_tokens == count_message_tokens(messages)
        text = resp.choices[0].message.content or ""
        assert abs(resp.usage.completion_tokens - count_tokens(text)) <= 2


# ---------------------------------------------------------------- prices

def test_price_arithmetic_by_hand():
    mini = Price("gpt-4o-mini", "OpenAI", "gpt-4o-mini", True, 0.15, 0.60)
    # 1,500 prompt tokens x $0.15/1M = $0.000225; 100 completion tokens x $0.60/1M = $0.00006
    assert answer_cost(1500, 100, mini) == pytest.approx(0.000285, abs=1e-12)
    assert per_1000([answer_cost(1500, 100, mini)] * 3) == pytest.approx(0.285, abs=1e-9)
    big = Price("gpt-4o", "OpenAI", "gpt-4o", True, 2.50, 10.00)
    # two answers: (2,000 x 2.5 + 200 x 10) / 1e6 = 0.007 and (0 + 0) = 0 -> mean 0.0035 -> $3.50 per 1,000
    assert per_1000([answer_cost(2000, 200, big), answer_cost(0, 0, big)]) == pytest.approx(3.5, abs=1e-9)
    assert answer_cost(10**6, 10**6, big) == pytest.approx(12.5)


def test_the_shipped_price_table_loads():
    prices = load_prices()
    assert prices["as_of"] and "change" in prices["note"] and "provider" in prices["note"]
    local = prices["models"][LOCAL_KEY]
    assert not local.hosted and local.input_per_1m == local.output_per_1m == 0
    hosted = [p for p in prices["models"].values() if p.hosted]
    assert len(hosted) >= 3 and all(p.source.startswith("https://") and p.output_per_1m >= p.input_per_1m > 0
                                    for p in hosted)


GOOD = {"as_of": "2025-06-01", "note": "Prices change: check with the provider.",
        "models": {"m": {"provider": "P", "model": "m-1", "hosted": True, "input_per_1m": 1, "output_per_1m": 2,
                         "source": "https://example.invalid/pricing"}}}


def _with(path, change):
    data = json.loads(json.dumps(GOOD))
    change(data)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("as_of"), r"as_of is missing"),
    (lambda d: d.update(as_of="June 2025"), r"as_of must be a date YYYY-MM-DD"),
    (lambda d: d.pop("note"), r"note is missing"),
    (lambda d: d.update(models={}), r"field models must be a non-empty object"),
    (lambda d: d["models"]["m"].update(input_per_1m=-1), r"models\.m\.input_per_1m must be a number >= 0"),
    (lambda d: d["models"]["m"].update(output_per_1m="2"), r"models\.m\.output_per_1m must be a number >= 0"),
    (lambda d: d["models"]["m"].update(output_per_1m=True), r"models\.m\.output_per_1m must be a number"),
    (lambda d: d["models"]["m"].pop("input_per_1m"), r"models\.m\.input_per_1m must be a number"),
    (lambda d: d["models"]["m"].pop("source"), r"models\.m\.source is missing"),
    (lambda d: d["models"]["m"].update(hosted="yes"), r"models\.m\.hosted must be true or false"),
    (lambda d: d["models"]["m"].pop("provider"), r"models\.m\.provider is missing"),
    (lambda d: d.update(currency="EUR"), r"currency must be 'USD'"),
])
def test_price_table_errors_name_the_file_and_field(tmp_path, change, message):
    path = _with(tmp_path / "prices.json", change)
    with pytest.raises(PriceError, match=message) as err:
        load_prices(path)
    assert str(path) in str(err.value)


def test_price_table_file_errors(tmp_path):
    with pytest.raises(PriceError, match=r"missing\.json: price table not found"):
        load_prices(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"as_of": "2025-06-01",\n "note": }')
    with pytest.raises(PriceError, match=r"bad\.json: not valid JSON \(line 2"):
        load_prices(bad)
    assert load_prices(_with(tmp_path / "ok.json", lambda d: None))["models"]["m"].output_per_1m == 2.0


# ---------------------------------------------------------------- the experiment, on the real server

@pytest.fixture(scope="module")
def experiment(server, tmp_path_factory):
    trace = tmp_path_factory.mktemp("cost") / "cost.jsonl"
    return run_cost_experiment("python-docs", "small", n=3, server_url=server.base_url, hosted="gpt-4o-mini",
                               max_tokens=16, trace_path=trace, reps=500)


def test_per_1000_numbers_equal_recomputation_from_rows(experiment):
    prices = load_prices()["models"]
    rows = experiment["rows"]
    price_of = {"local": prices[LOCAL_KEY], "hosted": prices["gpt-4o-mini"],
                "extractive": Price("x", "x", "x", False, 0.0, 0.0)}
    for name, price in price_of.items():
        mine = [r for r in rows if r["config"] == name]
        assert len(mine) == 3
        cfg = experiment["configs"][name]
        costs = [(r["prompt_tokens"] * price.input_per_1m + r["completion_tokens"] * price.output_per_1m) / 1e6
                 for r in mine]
        assert cfg["cost_per_1000_usd"] == pytest.approx(1000 * np.mean(costs), abs=1e-9)
        assert cfg["cost_per_answer_usd"] == pytest.approx(np.mean(costs), abs=1e-12)
        assert cfg["cost_per_1000_usd_ci"][0] <= round(cfg["cost_per_1000_usd"], 4) <= cfg["cost_per_1000_usd_ci"][1]
        assert cfg["prompt_tokens_per_1000"] == pytest.approx(1000 * np.mean([r["prompt_tokens"] for r in mine]))
        assert cfg["completion_tokens_per_1000"] == pytest.approx(1000 * np.mean([r["completion_tokens"] for r in mine]))
        assert cfg["model_calls"] == sum(r["model_called"] for r in mine)
        assert cfg["refused_before_model"] == sum(not r["model_called"] for r in mine)
        if cfg["latency_measured"]:
            lat = [r["latency_ms"] for r in mine]
            assert cfg["latency_p50_ms"]["value"] == pytest.approx(np.percentile(lat, 50), abs=1e-3)
            assert cfg["latency_p95_ms"]["value"] == pytest.approx(np.percentile(lat, 95), abs=1e-3)
            assert cfg["answer_correct"]["value"] == pytest.approx(np.mean([r["correct"] for r in mine]), abs=1e-4)
    local = [r for r in rows if r["config"] == "local"]
    hosted = [r for r in rows if r["config"] == "hosted"]
    assert [(r["prompt_tokens"], r["completion_tokens"]) for r in hosted] == \
           [(r["prompt_tokens"], r["completion_tokens"]) for r in local]
    assert experiment["configs"]["local"]["cost_per_1000_usd"] == 0
    assert experiment["configs"]["hosted"]["latency_p50_ms"] == "not measured"
    table = {p["key"]: p["cost_per_1000_usd"] for p in experiment["price_table"]}
    for key, price in prices.items():
        assert table[key] == pytest.approx(1000 * np.mean([answer_cost(r["prompt_tokens"], r["completion_tokens"], price)
                                                            for r in local]), abs=1e-9)


def test_token_sources_and_zero_cost_refusals(experiment):
    for r in experiment["rows"]:
        if not r["model_called"]:
            assert r["reason"] in ("weak-evidence", None) and r["token_source"] == NO_CALL
            assert r["prompt_tokens"] == r["completion_tokens"] == r["cost_usd"] == 0
        elif r["config"] in ("local", "hosted"):
            assert r["token_source"] == "usage" and r["prompt_tokens"] > 500 and 0 < r["completion_tokens"] <= 16
        else:
            assert r["config"] == "extractive" and r["token_source"] == "no-model" and r["prompt_tokens"] == 0
    assert any(r["token_source"] == NO_CALL for r in experiment["rows"]), "the unanswerable question is refused early"


def test_recommendation_and_report_are_built_from_the_numbers(experiment):
    rec = experiment["recommendation"]
    hosted = experiment["configs"]["hosted"]
    assert f"${hosted['cost_per_1000_usd']:.2f}" in rec and "Recommendation:" in rec
    assert f"{experiment['configs']['local']['answer_correct']['value']:.2f}" in rec
    text = format_cost(experiment)
    assert "not measured" in text and "extractive" in text and rec in text


def test_tokenizer_fallback_when_the_server_reports_no_usage(server):
    from raglab.experiments.pricing import token_usage
    from raglab.book.llm import Generation

    docs = {d.id: d for d in load_corpus("python-docs", "small")}
    sources = [_doc_source(docs["library/heapq.txt"])]
    prompt, completion, source = token_usage(Generation("It returns the smallest item [1].", "x"), "heappop?", sources,
                                             "I can't find this in the documentation.")
    assert source == "tokenizer" and completion == count_tokens("It returns the smallest item [1].")
    assert prompt == count_message_tokens(build_messages("heappop?", sources, visible=Guard().visible))


def test_the_experiment_starts_and_stops_its_own_server(tmp_path):
    result = run_cost_experiment("python-docs", "small", n=1, max_tokens=4, trace_path=tmp_path / "t.jsonl", reps=100)
    assert result["server"]["started_here"]
    port = int(result["server"]["base_url"].rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
    with pytest.raises(ProcessLookupError):
        os.kill(result["server"]["pid"], 0)  # stopped by its PID and reaped


def test_a_configured_hosted_endpoint_is_measured(server, monkeypatch, tmp_path):
    # the local server stands in for a hosted provider (it answers to any model name)
    monkeypatch.setenv("RAGLAB_HOSTED_BASE_URL", server.base_url)
    result = run_cost_experiment("python-docs", "small", n=2, server_url=server.base_url, max_tokens=4,
                                 trace_path=tmp_path / "t.jsonl", reps=100)
    measured = result["configs"]["hosted-measured"]
    assert measured["latency_measured"] and measured["latency_p50_ms"]["value"] > 0
    assert measured["token_sources"].get("usage", 0) >= 1
    assert "measured" in result["configs"]["hosted"]["latency_note"]
