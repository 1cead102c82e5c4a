"""Tokens, money and time per answer: what the cited assistant costs with a local model, a hosted one,
or no model at all (the extractive generator).

The experiment. ``run_cost_experiment`` asks every golden question (answerable and unanswerable)
of the normal assistant (same retriever, threshold and checks) with two generators: the local
SmolLM2-135M server and the extractive generator (no model, 0 tokens). A question refused for weak
evidence never reaches a model: it costs 0 tokens (``token_source = "no-model-call"``). The hosted
configuration prices the local run's token counts; its latency and answer quality are measured only
when a hosted endpoint is configured (``RAGLAB_HOSTED_BASE_URL``, with ``LLM_API_KEY``), else they
are reported as not measured.

The token counting and the price table are ``raglab.experiments.pricing``.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from collections import Counter
from pathlib import Path

from raglab.base import config
from raglab.book.assistant import Assistant
from raglab.infra.traces import Tracer
from raglab.guards.guard import Guard
from raglab.infra.assemble import build_assistant
from raglab.evaluation.golden import golden_file, load_golden, user_for
from raglab.evaluation.scoreboard import Result, score_answer
from raglab.evaluation.statistics import bootstrap_ci, paired_test, quantile
from raglab.experiments.pricing import (
    PRICES_PATH,
    Price,
    RecordingGenerator,
    answer_cost,
    load_prices,
    per_1000,
    token_usage,
)
from raglab.experiments.recorded import recorded, recorded_note
from raglab.experiments.tokens import MAX_TOKENS, N_CTX
from raglab.book.llm import OpenAIGenerator
from raglab.infra.packaged_models import MODEL_ALIAS, free_port, start_server

LOCAL_KEY = "local-smollm2"
HOSTED_ENV = "RAGLAB_HOSTED_BASE_URL"
NO_CALL = "no-model-call"


# ---------------------------------------------------------------- the experiment

def select_questions(questions: list, n: int | None) -> list:
    """All questions, or ``n`` of them evenly spaced from the first to the last line of the file (a small
    ``n`` still mixes types: the golden sets list their unanswerable questions last).

    >>> select_questions(list(range(10)), 3)
    [0, 5, 9]
    """
    if n is None or n >= len(questions):
        return list(questions)
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    if n == 1:
        return [questions[0]]
    return [questions[math.floor(i * (len(questions) - 1) / (n - 1) + 0.5)] for i in range(n)]


def latency_ci(values, q: float, reps: int = 2000, seed: int = 0) -> dict:
    """The q-th percentile of latencies with a bootstrap 95% interval (``raglab.evaluation.bootstrap_ci``)."""

    return bootstrap_ci(values, reps, seed, stat=quantile(q))


def _load_avg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover - not on every platform
        return None


def _summarize(rows: list[dict], price: Price, reps: int, seed: int, measured: bool, quality: bool) -> dict:
    """One configuration's aggregates, every one recomputable from its rows."""

    calls = [r for r in rows if r["model_called"]]
    answerable = [r for r in rows if r["type"] != "unanswerable"]
    unanswerable = [r for r in rows if r["type"] == "unanswerable"]
    out = {
        "price_key": price.key, "provider": price.provider, "model": price.model,
        "input_per_1m": price.input_per_1m, "output_per_1m": price.output_per_1m,
        "questions": len(rows), "model_calls": len(calls), "refused_before_model": len(rows) - len(calls),
        "token_sources": dict(Counter(r["token_source"] for r in rows)),
        "prompt_tokens_per_answer": bootstrap_ci([r["prompt_tokens"] for r in rows], reps, seed),
        "completion_tokens_per_answer": bootstrap_ci([r["completion_tokens"] for r in rows], reps, seed),
        "prompt_tokens_per_1000": per_1000([r["prompt_tokens"] for r in rows]),
        "completion_tokens_per_1000": per_1000([r["completion_tokens"] for r in rows]),
        "cost_per_answer_usd": per_1000([r["cost_usd"] for r in rows]) / 1000,
        "cost_per_1000_usd": per_1000([r["cost_usd"] for r in rows]),
    }
    ci = bootstrap_ci([1000 * r["cost_usd"] for r in rows], reps, seed)   # per 1,000: 4 decimals are enough
    out["cost_per_1000_usd_ci"] = [ci["ci_low"], ci["ci_high"]]
    if measured:
        out.update({"latency_measured": True,
                    "latency_p50_ms": latency_ci([r["latency_ms"] for r in rows], 50, reps, seed),
                    "latency_p95_ms": latency_ci([r["latency_ms"] for r in rows], 95, reps, seed),
                    "generate_p50_ms": latency_ci([r["generate_ms"] for r in calls], 50, reps, seed),
                    "generate_p95_ms": latency_ci([r["generate_ms"] for r in calls], 95, reps, seed)})
    else:
        out.update({"latency_measured": False, "latency_p50_ms": "not measured", "latency_p95_ms": "not measured",
                    "generate_p50_ms": "not measured", "generate_p95_ms": "not measured"})
    if quality:
        out.update({"answer_correct": bootstrap_ci([r["correct"] for r in rows], reps, seed),
                    "answerable_correct": bootstrap_ci([r["correct"] for r in answerable], reps, seed),
                    "answerable_refused": bootstrap_ci([float(r["refused"]) for r in answerable], reps, seed),
                    "unanswerable_refused": bootstrap_ci([float(r["refused"]) for r in unanswerable], reps, seed),
                    "reasons": dict(Counter(r["reason"] for r in rows if r["refused"]))})
    else:
        out.update({"answer_correct": "not measured", "answerable_correct": "not measured", "answerable_refused": "not measured",
                    "unanswerable_refused": "not measured", "reasons": "not measured"})
    return out


def _ask_row(assistant, recorder, q, config_name: str, price: Price) -> dict:
    """Ask one question, time it, and account for its tokens and cost."""

    if recorder is not None:
        recorder.last = None
    t = time.perf_counter()
    answer = assistant.ask(q.question, user_for(q))
    latency = (time.perf_counter() - t) * 1000
    called = "generate" in answer.timings_ms
    if not called:
        prompt, completion, source = 0, 0, NO_CALL
    elif recorder is None:  # the extractive generator: no model, no tokens
        prompt, completion, source = 0, 0, "no-model"
    else:
        question, sources, refusal, generation = recorder.last
        prompt, completion, source = token_usage(generation, question, sources, refusal, recorder.extra_instruction)
    index = assistant.retriever.index
    scored = Result(q.id, q.type, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, [])
    score_answer(scored, q, answer, index)
    return {"id": q.id, "type": q.type, "config": config_name, "model_called": called,
            "prompt_tokens": prompt, "completion_tokens": completion, "token_source": source,
            "cost_usd": answer_cost(prompt, completion, price),
            "latency_ms": round(latency, 2), "generate_ms": answer.timings_ms.get("generate"),
            "refused": answer.refused, "reason": answer.reason, "correct": scored.correct,
            "abstention_ok": scored.abstention_ok}


def run_cost_experiment(corpus: str = "python-docs", profile: str | None = None, n: int | None = None,
                        server_url: str | None = None, hosted: str = "gpt-4o-mini", prices_path: str | Path | None = None,
                        golden: str | Path | None = None, hosted_url: str | None = None, reps: int = 2000,
                        seed: int = 0, trace_path: str | Path | None = None, max_tokens: int = MAX_TOKENS,
                        timeout: float = 600.0) -> dict:
    """Cost and latency per answer, local model vs a hosted model's prices vs the extractive generator.

    Starts the local SmolLM2 server on a free port when ``server_url`` is None (stopped by its PID at
    the end). ``hosted_url`` (default ``$RAGLAB_HOSTED_BASE_URL``) runs the hosted model for real;
    without it the hosted row prices the local run's token counts and measures no latency.
    ``max_tokens`` caps each answer (``OpenAIGenerator``'s default; tests lower it for speed); ``timeout`` is
    generous because a timed-out request keeps the single-slot local server busy for the retry behind it.

    With ``$RAGLAB_RECORDED`` set (``raglab grade`` sets it) and no server or hosted endpoint given, the local
    model runs once and every later call with the same parameters reads that recording
    (``raglab.experiments.recorded``).
    """
    hosted_url = hosted_url or config.get(HOSTED_ENV)
    args = dict(corpus=corpus, profile=profile, n=n, server_url=server_url, hosted=hosted, prices_path=prices_path,
                golden=golden, hosted_url=hosted_url, reps=reps, seed=seed, trace_path=trace_path,
                max_tokens=max_tokens, timeout=timeout)
    if server_url is not None or hosted_url:
        return _measure_cost(**args)
    params = {"corpus": corpus, "profile": config.profile(profile), "n": n, "hosted": hosted, "reps": reps, "seed": seed,
              "max_tokens": max_tokens, "golden": str(golden or golden_file(corpus, profile)),
              "prices": hashlib.sha256(Path(prices_path or PRICES_PATH).read_bytes()).hexdigest()}   # the table, not its date
    return recorded("cost", params, lambda: _measure_cost(**args))


def _measure_cost(corpus, profile, n, server_url, hosted, prices_path, golden, hosted_url, reps, seed, trace_path,
                  max_tokens, timeout) -> dict:
    started, load_before = time.perf_counter(), _load_avg()
    prices = load_prices(prices_path)
    models = prices["models"]
    if hosted not in models or not models[hosted].hosted:
        choices = ", ".join(k for k, p in models.items() if p.hosted)
        raise ValueError(f"{prices['path']}: no hosted model {hosted!r} (choose one of {choices})")
    local_price, hosted_price = models.get(LOCAL_KEY, Price(LOCAL_KEY, "local", MODEL_ALIAS, False, 0.0, 0.0)), models[hosted]
    free = Price("extractive", "raglab", "extractive (no model)", False, 0.0, 0.0)

    base = build_assistant(corpus, profile, generator="extractive")
    questions = select_questions(load_golden(golden or golden_file(corpus, profile)), n)
    trace = Path(trace_path) if trace_path else config.work_dir() / "traces" / "cost.jsonl"
    server = None
    try:
        if server_url is None:
            server = start_server(free_port())
            server_url = server.base_url
        rule, tracer = Guard(), Tracer(trace)     # a model's prompt hides what the injection rule flags
        local = RecordingGenerator(OpenAIGenerator(base_url=server_url, model=MODEL_ALIAS, max_tokens=max_tokens,
                                                   timeout=timeout, visible=rule.visible))
        arms = [("local", Assistant(base.retriever, local, base.threshold, rerank=base.rerank, evidence=base.evidence, guard=rule, trace=tracer),
                 local, local_price),
                ("extractive", Assistant(base.retriever, base.generator, base.threshold, rerank=base.rerank, evidence=base.evidence,
                                         guard=base.guard, trace=tracer), None, free)]
        if hosted_url:
            remote = RecordingGenerator(OpenAIGenerator(base_url=hosted_url, model=hosted_price.model,
                                                        max_tokens=max_tokens, timeout=timeout, visible=rule.visible))
            arms.append(("hosted-measured", Assistant(base.retriever, remote, base.threshold, rerank=base.rerank, evidence=base.evidence,
                                                      guard=rule, trace=tracer), remote, hosted_price))
        # warm-up: retrieval caches (query vectors, reranker sentences) and the server's first call, so that
        # every arm's latency is measured in the same state; the arms then alternate question by question
        for q in questions:
            base.retriever.search(q.question, base.mode, base.k)
        local.inner.client.chat.completions.create(model=MODEL_ALIAS, messages=[{"role": "user", "content": "Hi"}],
                                                   max_tokens=1, temperature=0)
        rows = []
        for q in questions:
            for name, assistant, recorder, price in arms:
                rows.append(_ask_row(assistant, recorder, q, name, price))
    finally:
        if server is not None:
            server.stop()
    # the hosted configuration at list price: the local run's token counts, no latency or quality measured
    for r in [r for r in rows if r["config"] == "local"]:
        rows.append({**r, "config": "hosted", "cost_usd": answer_cost(r["prompt_tokens"], r["completion_tokens"], hosted_price),
                     "latency_ms": None, "generate_ms": None, "refused": None, "reason": None, "correct": None,
                     "abstention_ok": None})

    def of(name):
        return [r for r in rows if r["config"] == name]

    configs = {
        "local": {"label": f"local {MODEL_ALIAS} (SmolLM2-135M, llama-cpp server)",
                  **_summarize(of("local"), local_price, reps, seed, True, True)},
        "hosted": {"label": f"{hosted} at list price (local token counts)",
                   **_summarize(of("hosted"), hosted_price, reps, seed, False, False),
                   "latency_note": "not measured: no hosted endpoint is configured (set "
                                   f"{HOSTED_ENV} and LLM_API_KEY to measure it)" if not hosted_url else
                                   "measured in the hosted-measured row"},
        "extractive": {"label": "extractive generator (no model)", **_summarize(of("extractive"), free, reps, seed, True, True)},
    }
    if hosted_url:
        configs["hosted-measured"] = {"label": f"{hosted} at {hosted_url}",
                                      **_summarize(of("hosted-measured"), hosted_price, reps, seed, True, True)}
    local_rows, ext_rows = of("local"), of("extractive")
    paired = paired_test([r["correct"] for r in ext_rows], [r["correct"] for r in local_rows])
    price_table = [{"key": p.key, "provider": p.provider, "model": p.model, "input_per_1m": p.input_per_1m,
                    "output_per_1m": p.output_per_1m,
                    "cost_per_1000_usd": per_1000([answer_cost(r["prompt_tokens"], r["completion_tokens"], p)
                                                   for r in local_rows])}
                   for p in models.values()]
    result = {
        "corpus": corpus, "profile": config.profile(profile), "golden": str(golden or golden_file(corpus, profile)),
        "n_questions": len(questions), "question_ids": [q.id for q in questions],
        "prices": {k: prices[k] for k in ("path", "as_of", "currency", "unit", "note")},
        "hosted": hosted, "server": {"base_url": server_url, "model": MODEL_ALIAS, "started_here": server is not None,
                                     "pid": server.process.pid if server is not None else None,
                                     "n_ctx": N_CTX if server is not None else None},
        "threshold": base.threshold, "max_tokens": max_tokens, "configs": configs, "price_table": price_table,
        "paired_correct_local_minus_extractive": paired, "rows": rows,
    }
    result["recommendation"] = recommend(result)
    # the machine is shared: its load (runnable processes, 1-minute average) says how noisy the latencies are
    result["timing"] = {"wall_s": round(time.perf_counter() - started, 1), "cpus": os.cpu_count(),
                        "load_avg_1m": {"start": load_before, "end": _load_avg()}}
    return result


def _fmt_ci(ci: dict, digits: int = 2, scale: float = 1.0) -> str:
    if not isinstance(ci, dict) or ci.get("value") is None:
        return str(ci) if not isinstance(ci, dict) else "n/a"
    return f"{ci['value'] * scale:.{digits}f} [{ci['ci_low'] * scale:.{digits}f}, {ci['ci_high'] * scale:.{digits}f}]"


def recommend(result: dict) -> str:
    """A recommendation built from the measured numbers (costs, latency, quality under the checks)."""
    c = result["configs"]
    loc, ext, hst = c["local"], c["extractive"], c["hosted"]
    paired = result["paired_correct_local_minus_extractive"]
    n, calls = loc["questions"], loc["model_calls"]
    p_tok, c_tok = loc["prompt_tokens_per_answer"]["value"], loc["completion_tokens_per_answer"]["value"]
    in_cost = p_tok * hst["input_per_1m"]
    out_cost = c_tok * hst["output_per_1m"]
    share = in_cost / (in_cost + out_cost) if in_cost + out_cost else 0.0
    l50, e50 = loc["latency_p50_ms"]["value"], ext["latency_p50_ms"]["value"]
    reasons = loc["reasons"]
    top = max(reasons.items(), key=lambda kv: kv[1]) if reasons else None
    parts = [
        (f"Cost per 1,000 questions ({n} golden questions, {calls} reached the model, {n - calls} refused before any "
        f"model call at 0 tokens): local {result['server']['model']} ${loc['cost_per_1000_usd']:.2f}, "
        f"{result['hosted']} ${hst['cost_per_1000_usd']:.2f} at list price "
        f"({p_tok:.0f} prompt + {c_tok:.0f} completion tokens per question, input {share:.0%} of the cost), "
        f"extractive $0.00."),
        f"Latency p50: local {l50 / 1000:.2f} s [{loc['latency_p50_ms']['ci_low'] / 1000:.2f}, "
        f"{loc['latency_p50_ms']['ci_high'] / 1000:.2f}], extractive {e50:.0f} ms "
        f"[{ext['latency_p50_ms']['ci_low']:.0f}, {ext['latency_p50_ms']['ci_high']:.0f}]"
        + (f", {l50 / e50:.0f}x faster than the local model" if e50 and l50 / e50 >= 1.5 else "")
        + (f"; {result['hosted']} not measured (no hosted endpoint configured)." if not hst["latency_measured"] else "."),
        f"Quality under the citation checks: local answer_correct {_fmt_ci(loc['answer_correct'])} "
        f"(answerable questions alone {_fmt_ci(loc['answerable_correct'])}), "
        f"{loc['answerable_refused']['value']:.0%} of answerable questions refused"
        + (f" (most often {top[0]}: {top[1]} of {n})" if top else "")
        + f"; extractive {_fmt_ci(ext['answer_correct'])}; local minus extractive {paired['diff']:+.2f} "
        f"[{paired['ci_low']:+.2f}, {paired['ci_high']:+.2f}].",
    ]
    if paired["significant"] and paired["diff"] < 0:
        refused = loc["answerable_refused"]["value"]
        verdict = ("Recommendation: the local model is free but "
                   + ("slower, " if l50 > e50 else "")
                   + ("and most of its answers are refused by the checks" if refused > 0.5 else
                      f"and {refused:.0%} of its answers to answerable questions are refused by the checks")
                   + "; the extractive generator answers more questions correctly at no token cost, so keep it offline. ")
    elif paired["significant"]:
        verdict = "Recommendation: the local model is free and answers better than the extractive generator here; use it. "
    else:
        verdict = ("Recommendation: no measurable quality difference between the local model and the extractive "
                   f"generator on {n} questions, and the extractive one is "
                   + ("faster" if e50 <= l50 else "slower") + " at the same $0; prefer "
                   + ("the extractive generator. " if e50 <= l50 else "the local model. "))
    verdict += (f"A hosted model would cost about ${hst['cost_per_1000_usd']:.2f} per 1,000 questions at these token "
                f"counts (prices as of {result['prices']['as_of']}; check them with the provider); pay for it only "
                "after measuring its answer_correct on this golden set with a hosted endpoint configured.")
    return " ".join(parts + [verdict])


def format_cost(result: dict) -> str:
    """The cost table (per answer and per 1,000 questions) and the recommendation, as text."""
    c = result["configs"]
    lines = [(f"cost and latency per answer: {result['n_questions']} golden questions ({result['corpus']}, "
             f"{result['profile']} profile); prices as of {result['prices']['as_of']} (they change: check with the provider)"),
             (f"{'configuration':<44}{'in $/1M':>8}{'out $/1M':>9}{'prompt tok':>11}{'compl tok':>10}"
             f"{'$/answer':>11}{'$/1,000':>9}  {'latency p50 [95% CI]':<24}{'p95':>9}  answer correct")]
    for key in [k for k in ("local", "hosted", "hosted-measured", "extractive") if k in c]:
        s = c[key]
        if s["latency_measured"]:
            p50 = s["latency_p50_ms"]
            lat = f"{p50['value']:.0f} [{p50['ci_low']:.0f}, {p50['ci_high']:.0f}] ms"
            p95 = f"{s['latency_p95_ms']['value']:.0f} ms"
        else:
            lat, p95 = "not measured", "-"
        correct = _fmt_ci(s["answer_correct"]) if isinstance(s["answer_correct"], dict) else s["answer_correct"]
        lines.append(f"{s['label'][:43]:<44}{s['input_per_1m']:>8.2f}{s['output_per_1m']:>9.2f}"
                     f"{s['prompt_tokens_per_answer']['value']:>11.0f}{s['completion_tokens_per_answer']['value']:>10.1f}"
                     f"{s['cost_per_answer_usd']:>11.6f}{s['cost_per_1000_usd']:>9.3f}  {lat:<24}{p95:>9}  {correct}")
    lines.append("token sources (local): " + ", ".join(f"{k} {v}" for k, v in c["local"]["token_sources"].items())
                 + f"; {NO_CALL} = refused for weak evidence before any model call (0 tokens)")
    lines.append("hosted rows use the local run's token counts (SmolLM2's tokenizer and answer lengths): a hosted "
                 "model's own tokenizer and answers would differ")
    lines.append("every hosted model at the local token counts: " + ", ".join(
        f"{p['key']} ${p['cost_per_1000_usd']:.3f}" for p in result["price_table"]) + " per 1,000 questions")
    t = result.get("timing", {})
    lines += recorded_note(result)
    if t:
        lines.append(f"run: {t['wall_s']} s wall on {t['cpus']} shared cores, load average "
                     f"{t['load_avg_1m']['start']} -> {t['load_avg_1m']['end']} (latencies are noisy when the machine is busy)")
    lines.append(result["recommendation"])
    return "\n".join(lines)
