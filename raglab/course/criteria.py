"""The rubric's criteria on the milestone artifacts: each milestone's "done when" from the course, as a
check over what the notebooks saved (``Artifacts``: the folder, each file read once per check) that returns
pass or fail and why, with the numbers; and ``CRITERIA``, the table that names each check, its milestone,
its notebook and the stages of the student's pipeline whose artifacts it reads (``raglab.course.rubric``
runs them).
"""
from __future__ import annotations

import bisect
from pathlib import Path

from raglab.book.chunkers import word_positions
from raglab.infra.tokenizer import token_lengths
from raglab.course import artifacts
from raglab.course.milestones import rubric_names
from raglab.infra.corpus import load_corpus
from raglab.book.citations import parse_citations
from raglab.book.refusal import REFUSAL
from raglab.infra.packaged_models import MINILM_MAX_TOKENS
from raglab.base.text import clean
from raglab.evaluation.statistics import choose

# The bake-off must separate its configurations by more than noise: 0.10 in recall@5 is three
# questions of thirty.
MATERIAL_SPREAD = 0.10


class Artifacts:
    """The artifacts folder, each file read once per check (several criteria read the same file)."""

    def __init__(self, where: Path):
        self.where, self._read = where, {}

    def _once(self, key, load):
        if key not in self._read:
            self._read[key] = load()       # a missing or broken file raises, and fails each criterion that needs it
        return self._read[key]

    def jsonl(self, name: str) -> list[dict]:
        return self._once(name, lambda: artifacts.load_jsonl(name, self.where))

    def json(self, name: str):
        return self._once(name, lambda: artifacts.load_json(name, self.where))

    def section(self, name: str) -> dict:
        results = self.json(artifacts.RESULTS)
        if name not in results:
            raise ValueError(f"{self.where / artifacts.RESULTS}: no section {name!r} (run the notebook that records it)")
        return results[name]


# ---------------------------------------------------------------- milestone 1

YOURS_PREFIX = "yours "        # the chunkings the student's chunker made (``yours 150/30``)
FIT_LIMIT = 0.10               # at most this share of chunks over the model's 256 tokens
FRAGMENT_FLOOR = 128           # chunks that average fewer tokens than half the model's window fragment the pages


def your_chunks(a: Artifacts) -> dict[str, list[tuple[int, dict]]]:
    """The student's chunkings in ``m1_chunks.jsonl``, each a list of (line number, row)."""
    out: dict[str, list] = {}
    for n, r in enumerate(a.jsonl("m1_chunks.jsonl"), 1):
        if str(r.get("chunking", "")).startswith(YOURS_PREFIX):
            out.setdefault(r["chunking"], []).append((n, r))
    if not out:
        raise ValueError(f"{a.where / 'm1_chunks.jsonl'}: no chunks made by your chunker (chunkings named 'yours ...')")
    return out


def uncovered(texts: dict[str, str], rows: list[dict]) -> tuple[int, int, str | None]:
    """Words of the pages no chunk holds: (missed, total, the first page that loses one)."""
    by_doc: dict[str, list] = {}
    for r in rows:
        by_doc.setdefault(r["doc"], []).append((r["start"], r["end"]))
    missed = total = 0
    first = None
    for doc, text in texts.items():
        spans = sorted(by_doc.get(doc, []))
        reach = []                                   # merged intervals of the page's chunks
        for a, b in spans:
            if reach and a <= reach[-1][1]:
                reach[-1][1] = max(reach[-1][1], b)
            else:
                reach.append([a, b])
        starts = [r[0] for r in reach]
        for a, b in word_positions(text):
            total += 1
            i = bisect.bisect_right(starts, a) - 1
            if i < 0 or reach[i][1] < b:
                missed += 1
                first = first or doc
    return missed, total, first


def chunks_have_ids(a: Artifacts):
    chunkings = your_chunks(a)
    for label, rows in chunkings.items():
        ids = set()
        for n, r in rows:
            for field in ("id", "doc"):
                if not str(r.get(field) or "").strip():
                    return False, f"m1_chunks.jsonl:{n}: chunk without {'a source' if field == 'doc' else 'an id'}"
            if r["id"] in ids:
                return False, f"m1_chunks.jsonl:{n}: id {r['id']!r} appears twice in {label}"
            ids.add(r["id"])
    corpus = a.section("corpus")
    texts = {d.id: d.text for d in load_corpus(corpus["name"], corpus.get("profile"))}
    for label, rows in chunkings.items():
        missed, total, first = uncovered(texts, [r for _, r in rows])
        if missed:
            return False, f"{label}: {missed} of {total} words of the pages are in no chunk (first on {first})"
    return True, f"{sum(map(len, chunkings.values()))} chunks of {len(chunkings)} chunkings by your chunker, " \
                 "each with a unique id and a source, covering every word of every page"


def size_fits(a: Artifacts):
    choice = a.section("stages").get("chunk size", {})
    size = choice.get("value")
    chunkings = your_chunks(a)
    label = next((label for label in chunkings if label.startswith(f"{YOURS_PREFIX}{size}/")), None)
    if label is None:
        return False, f"no chunks of your chosen size {size} in m1_chunks.jsonl"
    rows = [r for _, r in chunkings[label]]
    lengths = token_lengths([clean(r["text"]) for r in rows])      # what gets embedded: the chunk's cleaned text
    over = sum(n > MINILM_MAX_TOKENS for n in lengths) / len(lengths)
    mean = sum(lengths) / len(lengths)
    why = f"{label}: {over:.1%} of {len(rows)} chunks over {MINILM_MAX_TOKENS} tokens, {mean:.0f} tokens on average"
    if over > FIT_LIMIT:
        return False, why + f" (at most {FIT_LIMIT:.0%} may be cut by the model)"
    if mean < FRAGMENT_FLOOR:
        return False, why + f" (under {FRAGMENT_FLOOR}: the pages are cut into fragments too small to answer from)"
    return True, why


# ---------------------------------------------------------------- milestones 2 and 3

def fused_top20(a: Artifacts):
    m2 = a.section("m2")
    rows, depth = m2["questions"], m2["depth"]
    found = [r for r in rows if r.get("hybrid rank") is not None and r["hybrid rank"] <= 20]
    if depth < 20:
        return False, f"fused lists were cut at {depth}, not 20"
    ok = len(found) >= 10
    return ok, (f"{len(found)} of {len(rows)} hand-written questions have the evidence chunk in the fused top 20"
                + ("" if ok else " (the course asks for 10)"))


def keyword_and_vector_wins(a: Artifacts):
    m2 = a.section("m2")
    k = m2["k"]
    rows = m2["questions"]
    only_bm25 = [r["id"] for r in rows if r[f"bm25 recall@{k}"] > 0 and r[f"dense recall@{k}"] == 0]
    only_dense = [r["id"] for r in rows if r[f"dense recall@{k}"] > 0 and r[f"bm25 recall@{k}"] == 0]
    why = f"only BM25 finds the evidence in its top {k}: {only_bm25 or 'none'}; only dense: {only_dense or 'none'}"
    return bool(only_bm25 and only_dense), why


def ranked_first(a: Artifacts):
    """Reranking measured on the student's fused rankings, and its misses looked at. The course text asks that the
    right chunk come first for most questions; the packaged embedding model does not reach that on every set (the
    course's dev questions: 7 of 16), so the share is reported, and what fails is a fusion that loses the
    evidence (not in its top 10 for most questions) or misses that were not looked at."""
    m3 = a.section("m3")
    parts, lost = [], []
    for label, rows in m3["configs"].items():
        first = sum(r.get("rerank rank") == 1 for r in rows)
        fused = sum(r.get("hybrid rank") is not None for r in rows)
        parts.append(f"{label}: first {first}/{len(rows)}, in the fused top 10 {fused}/{len(rows)}")
        if fused <= len(rows) / 2:
            lost.append(label)
    missed = m3.get("misses_shown", [])
    why = "after reranking, right chunk " + "; ".join(parts)
    if lost:
        return False, why + f"; the fusion loses the evidence for most questions with {', '.join(lost)}"
    if not missed:
        return False, why + "; the cases where it is not first were not looked at (no misses shown)"
    return True, why + f"; {len(missed)} misses shown"


# ---------------------------------------------------------------- milestone 4

def valid_citations(a: Artifacts):
    rows = [r for r in a.jsonl("m4_answers.jsonl") if r["kind"] == "answer"]
    answered = [r for r in rows if not r["refused"]]
    if not answered:
        return False, "no answered question in m4_answers.jsonl"
    for r in answered:
        retrieved = {x["id"] for x in r["retrieved"]}
        if not r["citations"]:
            return False, f"answer to {r['question']!r} carries no citation"
        bad = [c["id"] for c in r["citations"] if c["id"] not in retrieved]
        bad += [n for n in parse_citations(r["answer"]) if n.isdigit() and not 1 <= int(n) <= len(retrieved)]
        if bad or r["invalid_citations"]:
            return False, f"answer to {r['question']!r} cites {bad or r['invalid_citations']}, not retrieved"
    return True, f"{len(answered)} answers, every citation points at a retrieved chunk"


def invented_id_caught(a: Artifacts):
    rows = [r for r in a.jsonl("m4_answers.jsonl") if r["kind"] == "invented-id"]
    if not rows:
        return False, "no invented-id test in m4_answers.jsonl"
    for r in rows:
        if not (r["refused"] and r["reason"] == "invalid-citation" and r["invalid_citations"]):
            return False, f"an answer citing {r['raw']!r} was let through (reason {r['reason']})"
    return True, f"{len(rows)} answer(s) citing a non-existent source refused as invalid-citation " \
                 f"(caught: {rows[0]['invalid_citations']})"


def out_of_corpus_refused(a: Artifacts):
    rows = [r for r in a.jsonl("m4_answers.jsonl") if r["kind"] == "out-of-corpus"]
    if not rows:
        return False, "no out-of-corpus question in m4_answers.jsonl"
    leaked = [r["question"] for r in rows if not (r["refused"] and r["answer"] == REFUSAL)]
    if leaked:
        return False, f"not refused: {leaked[0]!r}"
    return True, f"{len(rows)} out-of-corpus question(s) got the exact refusal ({rows[0]['reason']})"


# ---------------------------------------------------------------- milestones 6 and 8: the student's numbers

AGREE = 1e-9      # a value of the student's function and the course's definition on the same input agree within this


def held_to_reference(rows: list[dict], pairs: list[tuple[str, str]], key: str, summary: str, differ: str,
                      agree: str) -> tuple[bool, str]:
    """Each student's value (``pairs``: their column, the reference's column) against the reference computed
    on the same input, row by row: the verdict, with how many rows differ and the first, shown by ``key``."""
    bad = [(r, mine, ref) for r in rows for mine, ref in pairs
           if r.get(mine) is None or abs(float(r[mine]) - float(r[ref])) > AGREE * max(1.0, abs(float(r[ref])))]
    if not bad:
        return True, f"{summary}, {agree}"
    r, mine, ref = bad[0]
    return False, f"{summary}; {len(bad)} {differ} (first {r[key]}: yours {r.get(mine)}, the reference's {r[ref]})"


def your_metrics(a: Artifacts):
    rows = a.section("m6")["questions"]
    if not rows:
        return False, "no question scored by your metrics"
    mean = {m: sum(float(r[m]) for r in rows) / len(rows) for m in ("recall@5", "mrr@10")}
    return held_to_reference(rows, [("recall@5", "course recall@5"), ("mrr@10", "course mrr@10")], "id",
                             f"your recall@5 {mean['recall@5']:.3f} and MRR@10 {mean['mrr@10']:.3f} over {len(rows)} questions",
                             "question scores disagree with the course's definitions", "the course's definitions on every question")


def your_prices(a: Artifacts):
    m8 = a.section("m8")
    rows = [{"answer": f"answer {i} ({r['prompt_tokens']} + {r['completion_tokens']} tokens)", **r}
            for i, r in enumerate(m8["answers"], 1)]
    if not rows:
        return False, "no answer priced by your cost function"
    per_1000 = 1000 * sum(float(r["yours"]) for r in rows) / len(rows)
    return held_to_reference(rows, [("yours", "raglab")], "answer",
                             f"{len(rows)} answers priced at {m8['model']}'s list price: ${per_1000:.3f} per 1,000 answers",
                             "priced differently from the list price", "each at the list price")


# ---------------------------------------------------------------- access and bake-off

def no_leaks(a: Artifacts):
    access = a.section("access")
    leaks, questions = access["leaks"], access["questions"]
    if not (leaks and all(leaks.values()) and questions):
        return False, f"the leak check checked nothing ({questions} questions, backends and modes {leaks})"
    counts = [modes[m] for modes in leaks.values() for m in modes]
    if not all(isinstance(n, int) and n >= 0 for n in counts):
        raise ValueError(f"{a.where / artifacts.RESULTS}: leak counts must be whole numbers, got {counts}")
    backends = ", ".join(leaks)
    if sum(counts):
        return False, f"{sum(counts)} restricted chunks reached a public user ({backends})"
    empty = [mode for mode, n in access["returned"].items() if not n]
    if empty or not access["returned"]:
        return False, f"a public user got no chunk at all in {', '.join(empty) or 'any mode'}: the rule lets nobody read"
    return True, f"{questions} questions in {len(counts)} backend and mode pairs ({backends}): " \
                 "no restricted chunk reached a public user"


def bakeoff_decided(a: Artifacts):
    bake = a.section("bakeoff")
    metric = bake["metric"]
    values = [r[metric] for r in bake["table"]]
    spread = max(values) - min(values)
    cells = {(r["chunking"], r["retriever"]) for r in bake["table"]}
    winner = tuple(bake.get("winner") or ())
    if winner not in cells:
        return False, f"no winner chosen among the {len(cells)} configurations (got {winner or 'none'})"
    if spread < MATERIAL_SPREAD:
        return False, f"{metric} spans only {spread:.3f} over {len(cells)} configurations (< {MATERIAL_SPREAD})"
    return True, f"{metric} spans {spread:.3f} over {len(cells)} configurations; winner {' + '.join(winner)}"


def own_chunker_raced(a: Artifacts):
    """The chunking lab (milestone 7, part 2): the chunker that raced, held on the check pages to the rules every
    strategy meets (every word in a chunk, no chunk over the model's window), and run in the lab's race."""
    lab = a.section("chunking_lab")
    why = (f"your chunker cut the check pages into {lab['chunks']} chunks: {lab['uncovered']} of {lab['words']} words "
           f"in no chunk, {lab['over_limit']} chunks over {MINILM_MAX_TOKENS} tokens")
    if "mine" not in lab["raced"]:
        return False, why + "; it did not run in the race"
    ok = lab["chunks"] > 0 and lab["uncovered"] == 0 and lab["over_limit"] == 0
    return ok, why + f"; it raced {len(lab['raced']) - 1} other chunkings"


# Where the milestones before 6 record the questions they read (``GoldenInUse.read``): each chose on dev.
CHOOSING_SECTIONS = ("m2", "m3", "m4")


def read_test_once(a: Artifacts):
    """Milestone 6 reports the test split of the golden set every milestone chose on, and no milestone before it
    read a test question: each choosing milestone recorded the dev split of the same set (its content hash)."""
    report = a.section("evaluation").get("read")
    if not report or report["split"] != "test":
        return False, f"milestone 6 reported on {report['split'] if report else 'no recorded'} split, not test"
    test_ids, problems = set(report["ids"]), []
    for name in CHOOSING_SECTIONS:
        read = a.section(name).get("read")
        if not read:
            problems.append(f"{name} recorded no questions read")
        elif read["sha256"] != report["sha256"]:
            problems.append(f"{name} read {read['golden']} ({read['whose']}), another set than milestone 6's")
        elif read.get("corpus_sha256") != report.get("corpus_sha256"):
            problems.append(f"{name} ran on {read['corpus']}, another corpus than milestone 6's ({report['corpus']})")
        elif read["split"] != "dev":
            problems.append(f"{name} read the {read['split']} split, not dev")
        elif test_ids & set(read["ids"]):
            problems.append(f"{name} read {len(test_ids & set(read['ids']))} test question(s)")
    why = (f"milestone 6 reports {len(test_ids)} test questions of {report['golden']} ({report['whose']}) on "
           f"{report['corpus']}; "
           f"milestones 2, 3 and 4 chose on its dev split")
    return not problems, "; ".join(problems) if problems else why


# ---------------------------------------------------------------- the student's own work

def failures_traced_by_you(a: Artifacts):
    rows = a.section("traced_failures")
    board = a.json("m6_scoreboard.json")
    stage_of = {qid: stage for stage, ids in board["failures"].items() for qid in ids}
    ids = [r["id"] for r in rows]
    asked = min(5, len(stage_of))          # five, or every failure when fewer failed
    if len(set(ids)) < asked:
        return False, f"{len(set(ids))} distinct questions traced ({asked} asked)"
    for n, r in enumerate(rows, 1):
        if r["id"] not in stage_of:
            return False, f"traced failure {n}: {r['id']!r} did not fail on this run's scoreboard"
        if r["stage"] != stage_of[r["id"]]:
            return False, f"traced failure {n}: {r['id']} failed at {stage_of[r['id']]!r} by the run's records, not {r['stage']!r}"
    return True, f"{len(set(ids))} failures traced, each to the stage the run's records give " \
        f"({', '.join(sorted({r['stage'] for r in rows}))}); the explanations are graded by hand"


def chunking_choice(a: Artifacts):
    """The student's chosen row, against the table's best row by the course's one rule (a paired interval on
    the same dev questions): it is ruled out only when the best row is better than it."""
    choice, bake = a.section("choice"), a.section("bakeoff")
    rows = {(r["chunking"], r["retriever"]): r for r in bake["table"]}
    key = (choice["chunking"], choice["retriever"])
    if key not in rows:
        return False, f"the choice {choice['chunking']} + {choice['retriever']} is not a configuration of the bake-off"
    metric, per_question = bake["metric"], bake["per_question"]
    best = max(rows, key=lambda k: (rows[k][metric], rows[k]["mrr"]))
    c = choose(per_question[" + ".join(key)], per_question[" + ".join(best)], " + ".join(key), " + ".join(best),
               metric=metric)
    why = f"chose {' + '.join(key)}: {metric} {rows[key][metric]:.3f}; the table's best, {c.candidate}, minus it: " \
          f"{c.diff:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}]"
    if c.verdict == "better":
        return False, why + ": the best is better on the same questions; the data rules this choice out"
    return True, why + ": no detectable difference; the reasons are graded by hand"


# (milestone, criterion, check, notebook, the stages of the student's pipeline whose artifacts it reads); the
# notebook is its number, or for a milestone's later notebook its grade prefix (``rubric.notebook_key``)
M = rubric_names()      # {"01": "1 chunking", ...}: the names live in raglab.course.milestones
CRITERIA = [
    (M["01"], "your chunker's chunks have ids and sources and cover every word", chunks_have_ids, "01", ("chunker",)),
    (M["01"], "your window size fits the model without fragmenting the pages", size_fits, "01", ("chunker", "chunk size")),
    (M["02"], "the right chunk is in the fused top 20 for 10 hand-written questions", fused_top20, "02", ("bm25",)),
    (M["02"], "a question only BM25 gets right and one only dense gets right", keyword_and_vector_wins, "02", ("bm25",)),
    (M["03"], "reranking measured on your fused rankings, and the misses looked at", ranked_first, "03",
     ("fusion",)),
    (M["04"], "answers carry valid citations", valid_citations, "04", ("citation check",)),
    (M["04"], "an invented citation id is caught", invented_id_caught, "04", ("citation check",)),
    (M["04"], "an out-of-corpus question gets the refusal", out_of_corpus_refused, "04", ("citation check",)),
    (M["05"], "a public user never retrieves a restricted chunk", no_leaks, "05", ("access rule",)),
    (M["06"], "your recall@5 and MRR@10 score this run's rankings as the course defines them", your_metrics, "06",
     ("recall", "mrr")),
    (M["06"], "five failures traced to the stage the run's records give", failures_traced_by_you, "06", ("recall", "mrr")),
    (M["06"], "the test split read once, in milestone 6, of the set every choice was made on", read_test_once, "06", ("recall", "mrr")),
    (M["07"], "the bake-off numbers differ materially and a winner was chosen", bakeoff_decided, "07", ("winner rule",)),
    (M["07"], "a chunking chosen that the bake-off's paired rule does not rule out", chunking_choice, "07", ("winner rule",)),
    (M["07"], "your own chunker covers every word, fits the model and ran in the lab's race", own_chunker_raced,
     "07-chunking", ("own chunker",)),
    (M["08"], "your cost function priced this run's answers at the list price", your_prices, "08", ("answer cost",)),
]
