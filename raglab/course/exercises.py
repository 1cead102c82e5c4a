"""The workbook's exercises: self-checks that print pass or fail with the reason, and the student's own code.

Every exercise in a notebook is two cells: the student's answer (between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` in the instructor's notebook; ``raglab release`` blanks it for students) and a
self-check::

    check("1. Fit the model", lambda: (over <= 0.10, f"{over:.1%} of the chunks are over 256 tokens"))

``check`` prints ``PASS`` or ``FAIL`` with the reason and raises ``AssertionError`` on a fail, so the
autograder (nbgrader) scores the cell by whether it raised. An answer not written yet (the blank's
``NotImplementedError``, or a name it never set) is a fail that says so.

Where a milestone's own code is the exercise (the chunker, BM25, RRF, the citation check, recall and
MRR...), ``stage`` is the seam where it becomes a stage of the student's pipeline: the milestone's
artifacts are made with it, or with raglab's version (recorded as such, and worth nothing in the
rubric) until the student's works; ``choice`` does the same for a value the student picks. ``own_work``
is the autograder's hidden test that a "solution" is not merely raglab's function called.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import inspect
import sys
import types
from typing import Callable
from unittest import mock

from raglab.book import (bm25, chunkers, chunking, citations, documents, embed, fusion, memory_index, model_chunkers,
                         prompt, refusal, rerank, sections)
from raglab.base.text import sentence_spans
from raglab.infra import corpora, index, tokenizer
from raglab.infra.corpus import load_corpus
from raglab.course import artifacts
from raglab.evaluation import bakeoff, metrics, scoreboard, statistics
from raglab.infra.stores.pgvector_store import PgVectorStore
from raglab.experiments import packing, pricing

NOT_DONE = (NotImplementedError, NameError)
# The pages self-checks and hidden tests run on, whatever corpus the notebooks run on: a check then means the
# same on every student's folder (the Python docs' small profile: reStructuredText headings, 24 pages).
CHECK_CORPUS, CHECK_PROFILE = "python-docs", "small"
# What the student release puts in an answer cell (``raglab.course.grading``): a cell that still holds it
# is an exercise not done; the release's prose cells say ``PROSE_STUB`` (nbgrader's own stub).
STUB_CALL = 'raise NotImplementedError("your answer goes here'
STUB = ("# YOUR CODE HERE\n" + STUB_CALL + ' (see the exercise above); until then the self-check fails and '
        'later cells use raglab\'s own version")')
PROSE_STUB = "YOUR ANSWER HERE"


def _outcome(test: Callable[[], tuple[bool, str]]) -> tuple[bool, str]:
    try:
        ok, why = test()
    except NotImplementedError as exc:
        return False, f"not done yet ({exc or 'the answer cell above still raises NotImplementedError'})"
    except NameError as exc:
        return False, f"not done yet: {exc} (run the answer cell above first)"
    except Exception as exc:                      # the student's code failed: say how, in one line
        return False, f"{type(exc).__name__}: {exc}"
    return bool(ok), str(why)


def check(title: str, test: Callable[[], tuple[bool, str]]) -> None:
    """Run one self-check: print ``PASS title: why`` or ``FAIL title: why``; a fail raises AssertionError.

    In a notebook, hidden checks that pass (a title with ``hidden:``, from the autograder's tests) are counted
    instead, and each exercise's count is printed as one line when the cell ends, so a graded notebook reads one
    line per group of checks; a hidden check that fails prints its reason in full.

    >>> check("demo", lambda: (1 + 1 == 2, "arithmetic holds"))
    PASS  demo: arithmetic holds
    >>> check("demo", lambda: undefined_name > 0)
    Traceback (most recent call last):
    AssertionError: FAIL  demo: not done yet: name 'undefined_name' is not defined (run the answer cell above first)
    """
    ok, why = _outcome(test)
    line = f"{'PASS' if ok else 'FAIL'}  {title}: {why}"
    if not ok:
        _print_hidden()
        raise AssertionError(line)
    if "hidden:" in title and _hold_until_cell_ends():
        group = title.split("hidden:")[0] + "hidden tests"
        _hidden_passed[group] = _hidden_passed.get(group, 0) + 1
    else:
        print(line)


_hidden_passed: dict[str, int] = {}        # hidden checks passed in the running cell, by exercise


def _print_hidden(*_) -> None:
    """One line for each exercise's hidden checks that passed in the cell (then forget them)."""
    for group, n in _hidden_passed.items():
        print(f"PASS  {group}: {n} passed")
    _hidden_passed.clear()


def _hold_until_cell_ends() -> bool:
    """Inside IPython, make sure the held hidden checks are printed when the cell ends; False outside it."""
    try:
        from IPython import get_ipython  # lazy: only notebooks run inside IPython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if _print_hidden not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _print_hidden)
    return True


# The stages a student's function replaces, one per milestone: the milestone, what it is, and the raglab
# functions it stands in for (a "solution" that reaches one of them is a copy, not the student's work).
STAGES = {
    "chunker": ("01", "the word-window chunker", (chunkers.word_spans, chunking.chunk_document, chunking.chunk_corpus)),
    "chunk size": ("01", "the window size", ()),
    "sections": ("01", "the heading-aware section splitter", (sections.split_sections, sections.find_headings)),
    "bm25": ("02", "BM25 scoring", (bm25.BM25, bm25.TextbookBM25, bm25.lucene_idf)),
    "dense search": ("02", "dense search over unit vectors", (embed.exact_search, embed.to_unit_length)),
    "fusion": ("03", "reciprocal rank fusion", (fusion.rrf,)),
    "reranker": ("03", "the best-sentence reranker", (rerank.rerank_by_best_sentence, rerank.SentenceMaxReranker.rerank)),
    "citation check": ("04", "the citation check", (citations.check_citations, citations.parse_citations)),
    "prompt": ("04", "the prompt with numbered sources", (prompt.build_messages, prompt.render_sources)),
    "answer or refuse": ("04", "the two refusals", (citations.check_citations, citations.parse_citations,
                                                    refusal.is_refusal)),
    "access rule": ("05", "the access rule", (memory_index.access_mask, packing.may_read)),
    "filtered query": ("05", "the access filter inside the vector query",
                       (PgVectorStore.search, PgVectorStore.search_sql, PgVectorStore.run_search)),
    "reindex plan": ("05", "the re-index plan", (index.document_changes, documents.Document)),
    "recall": ("06", "recall@k", (metrics.recall, metrics.evidence_recall)),
    "mrr": ("06", "MRR@k", (metrics.reciprocal_rank, metrics.first_relevant_rr)),
    "evaluation loop": ("06", "the evaluation loop", (scoreboard.evaluate, scoreboard.per_question, metrics.evidence_recall,
                                                       metrics.first_relevant_rr)),
    "decision rule": ("06", "the paired bootstrap interval", (statistics.paired_test, statistics.bootstrap_ci)),
    "winner rule": ("07", "the bake-off's winner rule", (bakeoff.choose_winner,)),
    "bake-off loop": ("07", "the bake-off's measuring loop", (bakeoff.run_bakeoff, scoreboard.evaluate)),
    "own chunker": ("07", "your chunker in the chunking race", (tokenizer.model_windows, model_chunkers.token_spans,
                                                                  model_chunkers.recursive_spans)),
    "answer cost": ("08", "the cost of an answer", (pricing.answer_cost,)),
    # the web app sits above the course, which never imports it: its functions are named, and count once loaded
    "ask endpoint": ("08", "the POST /ask endpoint", ("raglab.surfaces.web.app:create_app", "raglab.surfaces.web.app:ask_reply")),
}
YOURS, FALLBACK, COPY = "yours", "raglab", "copy"


def replaced(name: str) -> tuple:
    """The raglab functions stage ``name`` stands in for. A ``"module:function"`` name counts once its module is
    loaded (a solution that reaches it has loaded it); the course never imports a layer above it."""
    found = []
    for f in STAGES[name][2]:
        if isinstance(f, str):
            module, attr = f.split(":")
            f = getattr(sys.modules.get(module), attr, None)
        if f is not None:
            found.append(f)
    return tuple(found)


def fingerprint(fn: Callable) -> str:
    """The first 12 hex digits of the sha256 of a function's source (its bytecode when no source is kept)."""
    try:
        text = inspect.getsource(fn).encode()
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        text = code.co_code if code is not None else repr(fn).encode()
    return hashlib.sha256(text).hexdigest()[:12]


def stage(name: str, yours: Callable, library: Callable, *probe, **probe_kw) -> Callable:
    """The seam where the student's function becomes a stage of their pipeline.

    Returns ``yours`` if it runs on the probe arguments, else raglab's ``library`` so the milestone still
    renders; says which in the notebook, and records it in the results file (section ``stages``: who
    made the stage, the function's name and a hash of its source, and why), where the rubric and the
    feedback page read it. A function that reaches the raglab functions it replaces is recorded as a
    copy: it runs (the cells below need a working stage) but earns nothing.
    """
    milestone, what, _ = STAGES[name]
    fn_name = getattr(yours, "__name__", str(yours))
    used, why, source = yours, "", fingerprint(yours)
    try:
        yours(*probe, **probe_kw)
    except NOT_DONE:
        used, why = library, f"your `{fn_name}` is not written yet"
    except Exception as exc:
        used, why = library, f"your `{fn_name}` failed ({type(exc).__name__}: {exc})"
    if used is yours:
        ok, found = own_work(yours, *replaced(name), probe=lambda: yours(*probe, **probe_kw))
        who = YOURS if ok else COPY
        why = found if not ok else f"your `{fn_name}`"
    else:
        who = FALLBACK
    record_stage(name, {"milestone": milestone, "stage": what, "by": who, "function": fn_name,
                        "sha256": source if who != FALLBACK else None, "why": why})
    if who == FALLBACK:
        print(f"{what}: raglab's `{library.__name__}` runs in its place ({why}); what this milestone saves is not "
              "yours yet and earns no points.")
    elif who == COPY:
        print(f"{what}: {why}; it runs, but what this milestone saves counts as raglab's.")
    else:
        print(f"{what}: your `{fn_name}` (source {source}) makes this milestone's artifacts.")
    return used


def choice(name: str, answer: Callable[[], object], default):
    """A value the student chooses (a window size, a threshold): ``answer()`` if their cell set it, else
    ``default`` so the milestone still renders; recorded in the results file like a stage."""
    milestone, what, _ = STAGES[name]
    try:
        value, who, why = answer(), YOURS, "your choice"
    except NOT_DONE as exc:
        value, who, why = default, FALLBACK, f"not chosen yet ({exc})"
    record_stage(name, {"milestone": milestone, "stage": what, "by": who, "value": value, "why": why})
    print(f"{what}: {value}" + ("" if who == YOURS else f" (raglab's default: {why})"))
    return value


def record_stage(name: str, provenance: dict) -> None:
    """Put one stage's provenance into the results file's ``stages`` section (the others are kept)."""
    results = artifacts.load_results() if (artifacts.folder() / artifacts.RESULTS).exists() else {}
    artifacts.record("stages", {**results.get("stages", {}), name: provenance})


def own_work(fn: Callable, *library: Callable, probe: Callable[[], object] | None = None) -> tuple[bool, str]:
    """Whether ``fn`` does the work itself rather than calling the raglab function(s) it replaces.

    Two checks: what the function's code refers to (a raglab function among ``library``, or the
    attribute of that name on a raglab module), and, with ``probe``, a run with those functions
    replaced by ones that raise (a wrapper that hides the call behind another name is caught here).
    """
    if getattr(fn, "__module__", None) != "__main__":
        return False, f"`{getattr(fn, '__name__', fn)}` is {fn!r}, not a function written in the notebook"
    found = _refers_to_library(fn, library, {getattr(f, "__name__", "") for f in library}, depth=3)
    if found:
        return False, found
    if probe is not None:
        with _library_disabled(library):
            try:
                probe()
            except _LibraryCalled as exc:
                return False, f"`{fn.__name__}` reaches raglab's `{exc}` when it runs, instead of doing the work"
    return True, f"`{fn.__name__}` does the work itself"


def _refers_to_library(fn, library: tuple, names: set[str], depth: int) -> str | None:
    """Why ``fn`` (or a notebook function it calls, ``depth`` levels down) reaches the library, or None."""
    try:
        refs = inspect.getclosurevars(fn)
    except TypeError:
        return f"`{fn!r}` is not a plain function"
    for name, value in {**refs.globals, **refs.nonlocals}.items():
        if any(value is f for f in library):
            return f"`{fn.__name__}` calls raglab's `{value.__name__}` (as `{name}`) instead of doing the work"
        if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == "raglab" \
                and names & set(refs.unbound):
            return f"`{fn.__name__}` calls raglab's `{sorted(names & set(refs.unbound))[0]}` (through `{name}`) " \
                   "instead of doing the work"
        if depth and isinstance(value, types.FunctionType) and value is not fn \
                and getattr(value, "__module__", None) == fn.__module__:
            deeper = _refers_to_library(value, library, names, depth - 1)
            if deeper:
                return f"`{fn.__name__}` calls `{value.__name__}`, and " + deeper
    return None


class _LibraryCalled(RuntimeError):
    pass


@contextlib.contextmanager
def _library_disabled(library: tuple):
    """Replace each library function, wherever a raglab module holds it, by one that raises."""
    patches = []
    for f in library:
        def raiser(*a, _name=f.__name__, **k):
            raise _LibraryCalled(_name)
        for mod in list(sys.modules.values()):
            name = getattr(mod, "__name__", "") if isinstance(mod, types.ModuleType) else ""
            if name.split(".")[0] == "raglab" or name == "__main__":     # raglab, and aliases in the notebook
                for attr, value in list(vars(mod).items()):
                    if value is f:
                        patches.append(mock.patch.object(mod, attr, raiser))
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield


def example_page(corpus: str, docs: list):
    """The page the notebooks show a corpus by: the registry's ``example`` when the corpus holds it, else the
    page with the most headings (the longest of those tied), so that chunkings have sections to differ on."""
    by_id = {d.id: d for d in docs}
    if corpora.entry(corpus).example in by_id:
        return by_id[corpora.entry(corpus).example]
    return max(docs, key=lambda d: (len(sections.find_headings(d.text)), len(d.text), d.id))


def check_pages() -> list[documents.Document]:
    """The pages self-checks run on (``CHECK_CORPUS``), not the corpus in use."""
    return load_corpus(CHECK_CORPUS, CHECK_PROFILE)


def page_questions(docs: list[documents.Document], asked: set[str] = frozenset()):
    """Golden-set lines, one for each sentence of 8 to 30 words: on pages no question in ``asked`` (page ids)
    cites first, and those holding a number first: the model answers of "a question of your own" on a corpus
    the written model answer is not about.

    >>> page = documents.Document("a.md", "Backups", "Backups run at night. Each nightly backup keeps the last 30 days of your files.", "")
    >>> next(page_questions([page]))["evidence"]
    [{'doc': 'a.md', 'quote': 'Each nightly backup keeps the last 30 days of your files.'}]
    """
    said = [(page, " ".join(page.text[a:b].split())) for page in sorted(docs, key=lambda d: d.id)
            for a, b in sentence_spans(page.text)]
    said = [(p, s) for p, s in said if 8 <= len(s.split()) <= 30 and not s.startswith(("#", "-", "|", "`", "*"))]
    for page, quote in sorted(said, key=lambda ps: (ps[0].id in asked, not any(ch.isdigit() for ch in ps[1]))):
        fact = next((w.strip(".,;:()") for w in quote.split() if any(ch.isdigit() for ch in w)), quote.split()[0])
        yield {"id": "my-001", "type": "fact", "question": f"What does the page {page.title!r} say about "
               f"{' '.join(quote.split()[:4]).rstrip('.,;:')}?", "answer": quote, "facts": [fact],
               "evidence": [{"doc": page.id, "quote": quote}]}


def only_bm25_finds(retriever, docs: list[documents.Document], k: int = 5, tries: int = 200) -> tuple[str, dict]:
    """A question and its evidence that BM25 ranks in the top ``k`` and dense retrieval does not: a sentence
    naming a word only one chunk holds, asked as "What does the documentation say about WORD?" (the first of
    ``tries`` such sentences that works, else the last tried). The model answer of notebook 02's exercise 2
    on a corpus the written one is not about."""
    chunks_holding = collections.Counter(w for c in retriever.index.chunks for w in set(bm25.tokenize(c.text)))
    tried = None
    for line in page_questions(docs):
        evidence = line["evidence"][0]
        rare = [w for w in bm25.tokenize(evidence["quote"]) if chunks_holding[w] == 1 and len(w) > 4]
        if not rare:
            continue
        tried = (f"What does the documentation say about {rare[0]}?", evidence)
        found = {m: any(metrics.supports(retriever.index.chunk(h.id), evidence) for h in retriever.search(tried[0], m, k))
                 for m in ("bm25", "dense")}
        tries -= 1
        if (found["bm25"] and not found["dense"]) or not tries:
            break
    if tried is None:
        raise ValueError("no sentence of 8 to 30 words names a word only one chunk holds")
    return tried


def summary(*points: str):
    """The milestone's summary as a Markdown list (each point a sentence with the run's numbers)."""
    from IPython.display import Markdown

    return Markdown("\n".join(f"- {p}" for p in points))
