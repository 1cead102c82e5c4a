"""``raglab report``: the course's write-up, filled in from the run's results file.

The report follows the course's template (use case, corpus, system, evaluation set, results,
failure analysis, risks and next steps) plus the stretch experiments. Every number in it is read
from ``results.json`` in the artifacts folder, which the notebooks wrote; the prose around the
numbers is fixed. What no program can write (who the users are, what the failures mean, what to do next) is
the student's, in notebook 08's write-up cell, graded by hand; the report points there. It is written twice: Markdown (charts as PNG files beside it) and one
self-contained HTML file (charts embedded as data URIs).
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from raglab.course import artifacts
from raglab.evaluation.statistics import interval_text, paired_text
from raglab.experiments.registry import EXPERIMENTS
from raglab.base.files import atomic_open

# Charts the notebooks save, in the order the report shows them, with their captions.
CHARTS = {
    "m1_token_lengths": "Token lengths of the chunks of each strategy, against the embedding model's limit.",
    "m4_evidence": "Evidence strength of answerable and unanswerable questions, and the refusal threshold.",
    "m6_scores": "Every score with its bootstrap interval.",
    "bakeoff_bars": "The chunking x retriever bake-off: recall with intervals.",
    "bakeoff_size": "Recall against chunk size in the bake-off.",
    "exp_chunksize": "Chunk size against the model's limit: share over the limit, and recall against size.",
}
_ci = interval_text   # ``value [low, high]`` from a bootstrap dict, ``n/a`` without one


def _table(header: list[str], rows: list[list]) -> list[str]:
    cell = lambda v: str(v).replace("|", "/").replace("\n", " ")   # noqa: E731
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]


WRITE_UP = "the *Your write-up* cell of the stretch experiments notebook, graded by hand"   # no digits: every number printed comes from the results


def _use_case(r: dict) -> list[str]:
    return ["## Use case and users", "",
            f"Who asks the **{r['corpus']['name']}** assistant what, and what a wrong answer or a refusal costs them: "
            f"the student's own words ({WRITE_UP}).", ""]


def _corpus(r: dict) -> list[str]:
    c = r["corpus"]
    rows = [[x["chunking"], x["chunks"], x["words_mean"], x["tokens_p50"], x["tokens_p95"], x["tokens_total"],
             f"{x['over_256_share']:.3f}"] for x in c["chunkings"]]
    attribution = " ".join(re.findall(r"Copyright ©.*?reserved\.", " ".join(c["attribution"].split())))
    return ["## Corpus", "",
            f"Source: the plain-text Python documentation shipped in `data/` (profile **{c['profile']}**). "
            f"Licence and attribution: {attribution} The documentation is distributed under the PSF License "
            "Agreement (code examples under a permissive licence); `data/README.md` keeps the terms.", "",
            f"Size: {c['documents']} documents, {c['words']} words, {c['characters']} characters. Cleaning: "
            "reStructuredText underline rules are blanked (offsets kept), whitespace is folded in the indexed "
            "text, binary, empty and non-UTF-8 files are reported and skipped, and each chunk keeps its exact "
            "character offsets into its page. Chunks and tokens (MiniLM word pieces) per chunking:", "",
            *_table(["chunking", "chunks", "mean words", "tokens p50", "tokens p95", "tokens in all chunks",
                     "share over 256 tokens"], rows), ""]


def _system(r: dict) -> list[str]:
    s = r["evaluation"]["system"]
    ch = s["chunking"]
    prompt = "\n".join("    " + line for line in s["prompt"].splitlines())
    return ["## System", "",
            f"Ingestion loads every page of the corpus and cuts it with the **{ch['strategy']}** chunker "
            f"(size {ch['size']}, overlap {ch['overlap']}, heading prefix {'on' if ch['prefix'] else 'off'}) into "
            f"{s['chunks']} chunks. Each chunk is embedded with **{s['embedding_model']}** ({s['dim']} dimensions, "
            f"inputs cut at {s['max_tokens']} tokens; vectors cached by content hash) into a {s['index']} index. "
            f"Keyword search is BM25 with k1 = {s['bm25']['k1']}, b = {s['bm25']['b']} and the {s['bm25']['idf']} idf. "
            f"The two ranked lists (top {s['fusion']['depth']} each) are merged by {s['fusion']['method']} with "
            f"k = {s['fusion']['k']}, reranked by the {s['reranker']}, and the top {s['top_k']} become the sources. "
            f"A question is refused before generation when the best reranker score is below {s['threshold']}. "
            f"The generator is **{s['generator']}**, running {s['runs']}; its answer is checked in code (every "
            "citation must be a retrieved source, an answer without one is refused, and numbers, e-mails or URLs "
            "found in no source are refused). The prompt:", "", prompt, ""]


def _evalset(r: dict) -> list[str]:
    e = r["evaluation"]["evalset"]
    types = ", ".join(f"{n} {t}" for t, n in e["types"].items())
    return ["## Evaluation set", "",
            f"`{e['file']}`{f' ({whose})' if (whose := e.get('whose')) else ''}: {e['questions']} questions ({types}). Each answerable question was written by hand "
            "from a page of the corpus, with the page, an exact quote that answers it and the facts a correct answer "
            "must contain; the unanswerable ones are about things the documentation of this profile does not cover "
            "and must be refused. The loader verifies every reference: the page must exist and contain its quote "
            "(a mismatch is an error naming the file and line).", "", *_provenance(r)]


def _provenance(r: dict) -> list[str]:
    """Which corpus, set, split and questions each milestone read (``GoldenInUse.read``), as a table."""
    rows = [[name, f"`{read['corpus']}`", f"`{read.get('corpus_sha256', '')}`", f"`{read['golden']}` ({read['whose']})",
             f"`{read['sha256']}`", read["split"]]
            for name in ("m2", "m3", "m4", "bakeoff", "evaluation") if (read := r.get(name, {}).get("read"))]
    if not rows:
        return []
    return ["What each milestone read (only the evaluation read the test split; each artifact lists the question ids):",
            "", *_table(["milestone", "corpus", "corpus hash", "golden set", "set hash", "split"], rows), ""]


def _results(r: dict) -> list[str]:
    ev = r["evaluation"]
    sc, k = ev["scores"], ev["scores"]["k"]
    level = sc["interval"]["level"]
    rows = [[mode, _ci(m[f"recall@{k}"]), _ci(m["mrr"]), _ci(m["ndcg@10"]), f"{m['retrieval_latency_p50_ms']['value']:.2f}"]
            for mode, m in ev["retrieval"].items()]
    answer_rows = [[name, _ci(sc[name])] for name in ("answer_correct", "citation_validity", "citation_support",
                                                      "abstention_accuracy", "unanswerable_refused",
                                                      "answerable_answered") if name in sc]
    var = ev["variation"]
    moved = max(var["scores"].values())
    lat = var["latency_ms"]
    bake = r.get("bakeoff")
    out = ["## Results", "",
           f"{sc['n_questions']} questions, k = {k}; every score with a {level:.0%} interval "
           f"({sc['interval']['method']}, {sc['interval']['reps']} resamples). Retrieval, answerable questions only:", "",
           *_table(["retriever", f"recall@{k}", "MRR", "nDCG@10", "latency p50 (ms)"], rows), "",
           "Answers (the full assistant: reranked retrieval, the generator, the checks):", "",
           *_table(["score", "value [interval]"], answer_rows), "",
           f"Latency per question: p50 {_ci(sc['latency_p50_ms'], 2)} ms, p95 {_ci(sc['latency_p95_ms'], 2)} ms. "
           f"Run-to-run variation: the evaluation ran twice; the largest change of any score was {moved} "
           f"(retrieval and extractive answers are deterministic), while latency moved from "
           f"{lat['latency_p50_ms'][0]:.2f} to {lat['latency_p50_ms'][1]:.2f} ms at p50 and from "
           f"{lat['latency_p95_ms'][0]:.2f} to {lat['latency_p95_ms'][1]:.2f} ms at p95.", ""]
    if bake:
        out += [f"Bake-off of every chunking with every retriever ({bake['metric']}):", "", "```text",
                bake["rationale"], "```", ""]
    return out


def _full_docs(r: dict) -> list[str]:
    """The headline on the whole docs (notebook 08 records it from the committed full-profile run)."""
    f = r.get("full_docs")
    if not f:
        return []
    rows = []
    for metric, score in f["default"].items():
        d = f["vs_baseline"].get(metric)
        rows.append([metric.replace("_", " "), f["targets"].get(metric, ""), _ci(score), _ci(f["baseline"].get(metric)),
                     paired_text(d) if d else ""])
    q = f["questions"]
    out = ["### On the whole docs: the test split", "",
           f"The defaults were chosen on the dev split ({q['dev']} questions) of `{f['golden']}` over the full "
           f"docs ({f['chunks']} chunks) and read once on its test split ({q['test']} questions); run {f['date']} "
           f"on {f['machine']}. The baseline is the course's own design, never tuned. Values [95% CI]:", "",
           *_table(["metric", "target", "default", "course baseline", "default − baseline"], rows), ""]
    if f.get("ceiling"):
        c = f["ceiling"]
        out += [f"Ceiling: {c['missing']:.1%} of the {c['answerable']} answerable test questions have no evidence among the "
                f"default's top {c['depth']} candidates, out of any reranker's reach.", ""]
    t = f.get("trained")
    if t:
        trows = [[metric.replace("_", " "), f["targets"].get(metric, ""), _ci(t["scores"].get(metric)),
                  paired_text(t["vs_default"][metric]) if metric in t["vs_default"] else "",
                  paired_text(t["vs_baseline"][metric]) if metric in t["vs_baseline"] else ""] for metric in f["default"]]
        out += [f"A bi-encoder trained on the docs' own text (`{t['model']}`, chosen on dev) in the default's place, "
                "read once on the test split:", "",
                *_table(["metric", "target", "trained", "trained − default", "trained − baseline"], trows), ""]
    return out


def _failures(r: dict) -> list[str]:
    cases = r["evaluation"]["failure_cases"]
    counts = ", ".join(f"{stage} {len(ids)}" for stage, ids in r["evaluation"]["scores"]["failures"].items() if ids)
    rows = [[c["id"], c["type"], c["stage"], c["question"], ", ".join(c["needs"]) or "(refuse)",
             ", ".join(c["retrieved"]), c["reason"] or "answered", c["explained"]] for c in cases]
    return ["## Failure analysis", "",
            f"Failures by stage: {counts}. Each case below is traced through the assistant's JSONL trace (what was "
            "retrieved, the evidence strength, the answer or the refusal's reason) to the stage that failed:", "",
            *_table(["id", "type", "stage", "question", "needs", "retrieved (top 3)", "outcome", "why"], rows), "",
            f"What these cases have in common and what would fix them: the student's analysis ({WRITE_UP}).", ""]


def _risks(r: dict) -> list[str]:
    acc = r["access"]
    leaks = sum(n for modes in acc["leaks"].values() for n in modes.values())
    fresh = {s["step"]: s for s in acc["freshness"]}
    edit = fresh.get("edit one, delete one", {})
    inj = r.get("m4", {}).get("injection", [])
    shown_public = sum(1 for x in inj if x["user"] == "public" and x["answer shows the number"])
    return ["## Risks and next steps", "",
            f"**Data exposure.** Access groups are applied inside the index query (FAISS ID selector, BM25 mask, "
            f"SQL WHERE clause), never after. Leak check: {acc['questions']} questions asked as a public user in every "
            f"mode on {', '.join(acc['leaks'])}: {leaks} restricted chunks retrieved.", "",
            f"**Stale documents.** Each document's sha256 is stored with the index; re-indexing after editing one "
            f"page and deleting another updated {edit.get('updated')}, deleted {edit.get('deleted')}, kept "
            f"{edit.get('unchanged')} unchanged and embedded {edit.get('cache_misses')} chunks anew. A stale index "
            "is refused with the command that rebuilds it.", "",
            f"**Prompt injection.** Two help-center pages carry instructions aimed at the model. Document text is "
            f"escaped inside `<doc>` tags and declared data; a generator that obeys the injection is refused by the "
            f"checks (its phone number is in no source the user may see). Public-user answers showing the premium "
            f"number: {shown_public}.", "",
            f"**Next steps.** Which risk matters most for these users and what to build next: the student's "
            f"({WRITE_UP}).", ""]


def _experiments(r: dict) -> list[str]:
    done = r.get("experiments", {})
    out = ["## Stretch experiments", ""]
    for key, experiment in EXPERIMENTS.items():
        out += [f"### {experiment.title}", ""]
        if key not in done:
            out += [f"Not run (`{experiment.command}`).", ""]
            continue
        text = experiment.format(done[key])
        out += [f"Command: `{experiment.command}`.", "", "```text", text.rstrip(), "```", ""]
    return out


def build_markdown(results: dict, charts: list[str]) -> str:
    """The write-up as Markdown; ``charts`` are the chart names found beside the results file."""
    lines = [f"# Write-up: a cited assistant over the {results['corpus']['name']} corpus", "",
             f"Generated by `raglab report` from the results file of one run (profile {results['corpus']['profile']}, "
             f"index {results['evaluation']['scores']['index_version']}).", ""]
    for part in (_use_case, _corpus, _system, _evalset, _results, _full_docs, _failures, _risks, _experiments):
        lines += part(results)
    if charts:
        lines += ["## Charts", ""]
        for name in charts:
            lines += [f"![{CHARTS.get(name, name)}](figures/{name}.png)", "", f"*{CHARTS.get(name, name)}*", ""]
    return "\n".join(lines)


def _html(markdown: str, images: dict[str, Path], title: str) -> str:
    import mistune

    body = mistune.html(markdown)
    for name, path in images.items():
        uri = "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
        body = body.replace(f'src="figures/{name}.png"', f'src="{uri}"')
    style = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
             "table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}td,th{border:1px solid #ccc;padding:.25rem .5rem}"
             "th{background:#f3f3f3}pre{background:#f6f6f6;padding:.75rem;overflow-x:auto;font-size:.85rem}"
             "img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n{body}</body></html>\n")


def write_report(where: str | Path | None = None, out: str | Path | None = None) -> tuple[Path, Path]:
    """Write ``report.md`` (with ``figures/``) and a self-contained ``report.html``; returns both paths."""
    where = Path(where or artifacts.folder())
    out = Path(out or where.parent / "report")
    results = artifacts.load_results(where)
    missing = [s for s in ("corpus", "evaluation", "access") if s not in results]
    if missing:
        raise ValueError(f"{where / artifacts.RESULTS}: sections {', '.join(missing)} missing "
                         "(run the notebooks: raglab workbook)")
    found = {name: where / f"{name}.png" for name in CHARTS if (where / f"{name}.png").exists()}
    markdown = build_markdown(results, list(found))
    for name, path in found.items():
        with atomic_open(out / "figures" / f"{name}.png", "wb") as fh:
            fh.write(path.read_bytes())
    with atomic_open(out / "report.md") as fh:
        fh.write(markdown)
    title = re.sub(r"^# ", "", markdown.splitlines()[0])
    with atomic_open(out / "report.html") as fh:
        fh.write(_html(markdown, found, title))
    return out / "report.md", out / "report.html"
