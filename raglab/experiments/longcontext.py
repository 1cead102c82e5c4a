"""When not to use RAG: a long-context baseline that puts WHOLE documents in the prompt.

The pages are ranked and packed into the model's context budget by ``raglab.experiments.packing``
(document-level BM25, whole pages most relevant first, the top page cut when not even it fits).

``run_longcontext_experiment`` answers every golden question twice with the same generator and the
same checks: (a) the normal assistant (``build_assistant``: hybrid retrieval, the sentence
reranker, its weak-evidence refusal) and (b) long context, where the packed pages are the sources
(each page one source, cited by its number) and the answer goes through ``Assistant.ask``'s own
code, so the refusal and citation checks are literally the same. The long-context arm has no
retrieval score to refuse on (a system without retrieval has none): it answers whenever the
generator does. ``longcontext_gated`` also reports what it would score behind the retrieval arm's
evidence gate (refuse when the retrieval arm refused for weak evidence), which separates "whole
pages instead of chunks" from "no evidence gate".

The extractive generator on whole pages. ``ExtractiveGenerator`` quotes from the top 3 sources and
reads at most 24 sentences of each (``raglab.book.rerank.MAX_SENTENCES``): harmless on 150-word chunks
(1 of the small profile's 593 chunks has more), but on whole pages it would silently read only
each page's opening. Both arms therefore use the SAME generator object, with its per-source
sentence cap (``ExtractiveGenerator(sentence_cap=...)``) as a parameter: ``sentence_cap=None``
(default) reads every sentence of every source in both arms, ``sentence_cap=24`` reproduces the
stock generator in both arms. The top-3-sources rule is kept in both arms.
"""
from __future__ import annotations

import math
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

from raglab.base import config
from raglab.book.assistant import Assistant
from raglab.infra.assemble import build_assistant
from raglab.infra.corpus import load_corpus
from raglab.evaluation.golden import golden_file, load_golden, user_for
from raglab.evaluation.metrics import answer_correct, evidence_recall
from raglab.evaluation.statistics import bootstrap_ci, interval_text, paired_test
from raglab.experiments.cost import _load_avg, select_questions
from raglab.experiments.packing import PackedRetriever
from raglab.experiments.recorded import recorded, recorded_note
from raglab.experiments.tokens import MAX_TOKENS, N_CTX, count_message_tokens
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.book.llm import OpenAIGenerator
from raglab.guards.guard import Guard
from raglab.infra.traces import Tracer
from raglab.book.prompt import Source, build_messages
from raglab.guards.widening import source_at
from raglab.infra.packaged_models import MODEL_ALIAS, free_port, start_server


# ---------------------------------------------------------------- the experiment

def _arm_row(assistant, q, sources_of, extra_instruction) -> dict:
    t = time.perf_counter()
    answer = assistant.ask(q.question, user_for(q))
    latency = (time.perf_counter() - t) * 1000
    sources = sources_of(answer)
    prompt = count_message_tokens(build_messages(q.question, sources, assistant.refusal, extra_instruction, Guard().visible))
    called = "generate" in answer.timings_ms
    row = {"answer": answer.answer, "refused": answer.refused, "reason": answer.reason, "correct": answer_correct(q, answer),
           "prompt_tokens": prompt, "sent_tokens": prompt if called else 0, "model_called": called,
           "latency_ms": round(latency, 2), "generate_ms": answer.timings_ms.get("generate"),
           "evidence_strength": answer.evidence, "sources": [s.chunk.id for s in sources],
           "evidence_in_context": evidence_recall([s.chunk for s in sources], q, len(sources)) if q.evidence else None}
    return row


def _summary(rows: list[dict], reps: int, seed: int) -> dict:
    answerable = [r for r in rows if r["type"] != "unanswerable"]
    unanswerable = [r for r in rows if r["type"] == "unanswerable"]
    q = lambda p: (lambda a, axis=None: np.percentile(a, p, axis=axis))
    return {"answer_correct": bootstrap_ci([r["correct"] for r in rows], reps, seed),
            "answerable_correct": bootstrap_ci([r["correct"] for r in answerable], reps, seed),
            "unanswerable_refused": bootstrap_ci([float(r["refused"]) for r in unanswerable], reps, seed),
            "answerable_refused": bootstrap_ci([float(r["refused"]) for r in answerable], reps, seed),
            "evidence_in_context": bootstrap_ci([r["evidence_in_context"] for r in answerable], reps, seed),
            "prompt_tokens": bootstrap_ci([r["prompt_tokens"] for r in rows], reps, seed),
            "sent_tokens": bootstrap_ci([r["sent_tokens"] for r in rows], reps, seed),
            "latency_p50_ms": bootstrap_ci([r["latency_ms"] for r in rows], reps, seed, stat=q(50)),
            "latency_p95_ms": bootstrap_ci([r["latency_ms"] for r in rows], reps, seed, stat=q(95)),
            "latency_mean_ms": bootstrap_ci([r["latency_ms"] for r in rows], reps, seed),
            "generate_p50_ms": bootstrap_ci([r["generate_ms"] for r in rows if r["generate_ms"] is not None], reps, seed,
                                            stat=q(50)),
            "model_calls": sum(r["model_called"] for r in rows),
            "reasons": dict(Counter(r["reason"] for r in rows if r["refused"]))}


def run_longcontext_experiment(corpus: str = "python-docs", profile: str | None = None, generator: str = "extractive",
                               budget: int | None = None, n: int | None = None, server_url: str | None = None,
                               sentence_cap: int | None = None, golden: str | Path | None = None, reps: int = 2000,
                               seed: int = 0, trace_path: str | Path | None = None, warmup: bool = True,
                               max_tokens: int = MAX_TOKENS, timeout: float = 600.0) -> dict:
    """Retrieval vs long context on a golden set, same generator and checks; see the module docstring.

    ``generator``: ``"extractive"`` (offline) or ``"openai"`` (the local SmolLM2 server at ``server_url``,
    started here and stopped by its PID when None). ``budget``: tokens for the sources block (default:
    per question, the window minus answer, instructions and margin). ``n`` limits the questions (evenly
    spaced). With ``warmup`` (extractive only) a first untimed pass embeds every sentence both arms will
    quote from, so the timed latencies compare warm arms; the cold cost is ``timing.warmup_s``.
    ``timeout`` (seconds a model request may take) is generous: on 2 busy cores a 3,700-token prompt can
    take minutes, and a timed-out request keeps the single-slot server busy for the retry behind it.

    With ``$RAGLAB_RECORDED`` set (``raglab grade`` sets it) and no server given, the experiment runs once and
    every later call with the same parameters reads that recording (``raglab.experiments.recorded``): its
    timings are the instructor's measurement, not a student's work.
    """

    if generator not in ("extractive", "openai"):
        raise ValueError(f"generator must be 'extractive' or 'openai', got {generator!r}")
    args = dict(corpus=corpus, profile=profile, generator=generator, budget=budget, n=n, server_url=server_url,
                sentence_cap=sentence_cap, golden=golden, reps=reps, seed=seed, trace_path=trace_path, warmup=warmup,
                max_tokens=max_tokens, timeout=timeout)
    if server_url is not None:
        return _measure_longcontext(**args)
    params = {k: v for k, v in args.items() if k not in ("server_url", "trace_path", "timeout")}
    params.update(profile=config.profile(profile), golden=str(golden or golden_file(corpus, profile)))
    return recorded("longcontext", params, lambda: _measure_longcontext(**args))


def _measure_longcontext(corpus, profile, generator, budget, n, server_url, sentence_cap, golden, reps, seed,
                         trace_path, warmup, max_tokens, timeout) -> dict:
    started, load_before = time.perf_counter(), _load_avg()
    base = build_assistant(corpus, profile, generator="extractive")
    docs = load_corpus(corpus, profile)
    questions = select_questions(load_golden(golden or golden_file(corpus, profile)), n)
    trace = Path(trace_path) if trace_path else config.work_dir() / "traces" / "longcontext.jsonl"
    setup_s = time.perf_counter() - started
    server = None
    try:
        if generator == "openai":
            if server_url is None:
                server = start_server(free_port())
                server_url = server.base_url
            gen = OpenAIGenerator(base_url=server_url, model=MODEL_ALIAS, max_tokens=max_tokens, timeout=timeout,
                                  visible=Guard().visible)
        else:
            gen = ExtractiveGenerator(base.retriever.embedder, sentence_cap=sentence_cap)
        extra = getattr(gen, "extra_instruction", None)
        guard = Guard(getattr(gen, "detector", None))
        rag = Assistant(base.retriever, gen, base.threshold, k=base.k, rerank=base.rerank, evidence=base.evidence, guard=guard, trace=Tracer(trace))
        packer = PackedRetriever(docs, budget, base.retriever.embedder, max_tokens=max_tokens, extra_instruction=extra)
        lc = Assistant(packer, gen, threshold=-math.inf, guard=guard, trace=Tracer(trace))   # no retrieval score, no evidence gate
        index = base.retriever.index

        def rag_sources(answer):
            return [source_at(i, *index.locate(r["id"])) for i, r in enumerate(answer.retrieved, 1)]

        def lc_sources(answer):
            return [Source(i, c) for i, c in enumerate(packer.index.chunks, 1)]

        t = time.perf_counter()
        if generator == "openai":   # the server's first request pays for loading; keep it out of the latencies
            gen.client.chat.completions.create(model=MODEL_ALIAS, messages=[{"role": "user", "content": "Hi"}],
                                               max_tokens=1, temperature=0)
        if warmup:
            for q in questions:   # retrieval caches for both arms, and (extractive) every sentence either arm quotes from
                hits = base.retriever.search(q.question, base.mode, base.k, user_for(q))
                if generator == "extractive":
                    gen.generate(q.question, [source_at(i, *index.locate(h.id))
                                              for i, h in enumerate(hits, 1)])
                    packer.search(q.question, user=user_for(q))
                    gen.generate(q.question, lc_sources(None))
        warmup_s = time.perf_counter() - t
        rows, arm_s = [], {"retrieval": 0.0, "longcontext": 0.0}
        for q in questions:
            t = time.perf_counter()
            r = _arm_row(rag, q, rag_sources, extra)
            arm_s["retrieval"] += time.perf_counter() - t
            t = time.perf_counter()
            lcr = _arm_row(lc, q, lc_sources, extra)
            arm_s["longcontext"] += time.perf_counter() - t
            info = packer.last_info
            lcr.update({"docs": info["docs"], "n_docs": info["n_docs"], "truncated": info["truncated"],
                        "context_tokens": info["tokens"], "budget_tokens": info["budget_tokens"],
                        "pack_ms": packer.timings_ms["pack"]})
            lcr["fits_window"] = lcr["prompt_tokens"] + max_tokens <= N_CTX
            gated = 1.0 if r["reason"] == "weak-evidence" and q.type == "unanswerable" else (
                0.0 if r["reason"] == "weak-evidence" else lcr["correct"])
            rows.append({"id": q.id, "type": q.type, "question": q.question, "retrieval": r, "longcontext": lcr,
                         "longcontext_gated_correct": gated})
    finally:
        if server is not None:
            server.stop()

    def arm(name):
        return [{**row[name], "type": row["type"]} for row in rows]

    rag_s, lc_s = _summary(arm("retrieval"), reps, seed), _summary(arm("longcontext"), reps, seed)

    lc_rows = arm("longcontext")
    lc_s.update({"truncated": bootstrap_ci([float(r["truncated"]) for r in lc_rows], reps, seed),
                 "pack_p50_ms": bootstrap_ci([r["pack_ms"] for r in lc_rows], reps, seed,
                                             stat=lambda a, axis=None: np.percentile(a, 50, axis=axis)),
                 "docs_per_question": bootstrap_ci([r["n_docs"] for r in lc_rows], reps, seed),
                 "budget_tokens": {"min": min(r["budget_tokens"] for r in lc_rows),
                                   "max": max(r["budget_tokens"] for r in lc_rows)},
                 "all_fit_window": all(r["fits_window"] for r in lc_rows)})
    gated = {"answer_correct": bootstrap_ci([row["longcontext_gated_correct"] for row in rows], reps, seed)}
    corpus_tokens = packer.last_info["corpus_tokens"] if rows else 0
    median_budget = float(np.median([r["budget_tokens"] for r in lc_rows])) if rows else 0.0
    result = {
        "corpus": corpus, "profile": config.profile(profile), "golden": str(golden or golden_file(corpus, profile)),
        "generator": gen.name, "sentence_cap": sentence_cap if generator == "extractive" else None,
        "budget": budget if budget is not None else "default: n_ctx - max_tokens - instructions - margin, per question",
        "n_ctx": N_CTX, "max_tokens": max_tokens, "threshold": base.threshold, "n_questions": len(rows),
        "corpus_stats": {"documents": len(docs), "tokens": corpus_tokens, "median_budget_tokens": median_budget,
                         "times_budget": round(corpus_tokens / median_budget, 1) if median_budget else None,
                         "fits_window": corpus_tokens <= median_budget},
        "arms": {"retrieval": rag_s, "longcontext": lc_s, "longcontext_gated": gated},
        "paired_correct": paired_test([row["retrieval"]["correct"] for row in rows],
                                      [row["longcontext"]["correct"] for row in rows]),
        "paired_correct_gated": paired_test([row["retrieval"]["correct"] for row in rows],
                                            [row["longcontext_gated_correct"] for row in rows]),
        "token_ratio": _ratio(lc_s["prompt_tokens"]["value"], rag_s["prompt_tokens"]["value"]),
        "latency_ratio_p50": _ratio(lc_s["latency_p50_ms"]["value"], rag_s["latency_p50_ms"]["value"]),
        "rows": rows,
    }
    result["verdict"] = verdict(result)
    result["timing"] = {"setup_s": round(setup_s, 1), "warmup_s": round(warmup_s, 1),
                        "retrieval_arm_s": round(arm_s["retrieval"], 1), "longcontext_arm_s": round(arm_s["longcontext"], 1),
                        "wall_s": round(time.perf_counter() - started, 1), "cpus": os.cpu_count(),
                        "load_avg_1m": {"start": load_before, "end": _load_avg()}}
    return result


def _ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


def _ci(d: dict, digits: int = 2) -> str:
    return interval_text(d, digits)


def verdict(result: dict) -> str:
    """When each arm wins, in words built from the measured numbers."""
    rag, lc = result["arms"]["retrieval"], result["arms"]["longcontext"]
    gated = result["arms"]["longcontext_gated"]
    p, pg = result["paired_correct"], result["paired_correct_gated"]
    cs = result["corpus_stats"]
    n = result["n_questions"]

    def who(test):
        ahead = "long context" if test["diff"] > 0 else "retrieval"
        if test["significant"]:     # the paired 95% interval excludes 0
            return f"{ahead} wins"
        if test["diff"]:
            return f"{ahead} ahead, but the paired 95% interval includes 0: no measurable difference"
        return "no measurable difference"

    parts = [
        (f"On {n} golden questions with the {result['generator']} generator, long context sends "
        f"{result['token_ratio']:.1f}x the prompt tokens of retrieval ({lc['prompt_tokens']['value']:.0f} vs "
        f"{rag['prompt_tokens']['value']:.0f} per question) and its p50 latency is {result['latency_ratio_p50']:.1f}x "
        f"({lc['latency_p50_ms']['value']:.0f} vs {rag['latency_p50_ms']['value']:.0f} ms)."),
        (f"answer_correct: retrieval {_ci(rag['answer_correct'])}, long context {_ci(lc['answer_correct'])}; "
        f"difference {p['diff']:+.2f} [{p['ci_low']:+.2f}, {p['ci_high']:+.2f}]: {who(p)}."),
        (f"The evidence was in the context for {lc['evidence_in_context']['value']:.0%} of answerable questions with "
        f"long context vs {rag['evidence_in_context']['value']:.0%} with retrieval; the top page had to be cut for "
        f"{lc['truncated']['value']:.0%} of questions."),
        (f"Without an evidence gate long context refuses {lc['unanswerable_refused']['value']:.0%} of unanswerable "
        f"questions (retrieval {rag['unanswerable_refused']['value']:.0%}); behind retrieval's gate it would score "
        f"{_ci(gated['answer_correct'])}; against retrieval: {who(pg)}."),
    ]
    whole = [row for row in result["rows"] if not row["longcontext"]["truncated"] and row["type"] != "unanswerable"]
    if whole:
        lc_w = np.mean([row["longcontext"]["correct"] for row in whole])
        rag_w = np.mean([row["retrieval"]["correct"] for row in whole])
        parts.append(f"On the {len(whole)} answerable questions whose top page fit whole, long context scored "
                     f"{lc_w:.2f} vs retrieval {rag_w:.2f} (too few to conclude).")
    only_lc = sum(row["longcontext"]["correct"] > row["retrieval"]["correct"] for row in result["rows"])
    only_rag = sum(row["retrieval"]["correct"] > row["longcontext"]["correct"] for row in result["rows"])
    parts.append(f"Long context alone was right on {only_lc} question(s), retrieval alone on {only_rag}.")
    if cs["fits_window"]:
        parts.append(f"The whole corpus ({cs['tokens']:,} tokens) fits the {cs['median_budget_tokens']:.0f}-token budget: "
                     "long context needs no retrieval step here, and is the simpler system if its accuracy holds.")
    else:
        parts.append(f"The corpus is {cs['tokens']:,} tokens, {cs['times_budget']:.0f}x the "
                     f"{cs['median_budget_tokens']:.0f}-token budget: long context here is document-level BM25 plus "
                     "whole pages, and it can only win when the relevant pages fit the window; retrieval sends "
                     "fewer tokens and keeps the evidence gate.")
    return " ".join(parts)


def format_longcontext(result: dict) -> str:
    """The comparison as an aligned text table, then the verdict."""
    rag, lc = result["arms"]["retrieval"], result["arms"]["longcontext"]
    lines = [(f"retrieval vs long context: {result['n_questions']} golden questions ({result['corpus']}, "
             f"{result['profile']} profile), generator {result['generator']}, window {result['n_ctx']} tokens"),
             f"{'score':<26}{'retrieval':>28}{'long context':>28}"]
    for key, digits in (("answer_correct", 3), ("answerable_correct", 3), ("unanswerable_refused", 3),
                        ("evidence_in_context", 3), ("prompt_tokens", 0), ("sent_tokens", 0),
                        ("latency_p50_ms", 0), ("latency_p95_ms", 0)):
        lines.append(f"{key:<26}{_ci(rag[key], digits):>28}{_ci(lc[key], digits):>28}")
    gated = result["arms"]["longcontext_gated"]["answer_correct"]
    lines.append(f"{'long context + RAG gate':<26}{'':>28}{_ci(gated, 3):>28}")
    p = result["paired_correct"]
    lines.append(f"paired answer_correct (long context - retrieval): {p['diff']:+.3f} [{p['ci_low']:+.3f}, "
                 f"{p['ci_high']:+.3f}]")
    lines.append(f"long-context packing (document BM25 + token counting) p50 {_ci(lc['pack_p50_ms'], 0)} ms of its "
                 f"latency; generate p50 retrieval {_ci(rag['generate_p50_ms'], 0)} ms, long context "
                 f"{_ci(lc['generate_p50_ms'], 0)} ms")
    lines.append(f"pages per question {lc['docs_per_question']['value']:.2f}, top page cut for "
                 f"{lc['truncated']['value']:.0%}, budget {lc['budget_tokens']['min']}-{lc['budget_tokens']['max']} tokens, "
                 f"every prompt fits the window: {lc['all_fit_window']}")
    t = result["timing"]
    lines.append(f"time: setup {t['setup_s']} s, warm-up {t['warmup_s']} s, retrieval arm {t['retrieval_arm_s']} s, "
                 f"long-context arm {t['longcontext_arm_s']} s, wall {t['wall_s']} s (load {t['load_avg_1m']})")
    lines += recorded_note(result)
    lines.append(result["verdict"])
    return "\n".join(lines)
