"""Three recursive text splitters on the Python docs: how far they agree, and how fast they are.

The libraries are langchain-text-splitters (``RecursiveCharacterTextSplitter``), semchunk and
semantic-text-splitter. Every one is sized by the same tokenizer, the packaged MiniLM's word-piece
tokenizer, to the same capacity: 254 content tokens (the model's 256 minus [CLS] and [SEP]), with no
overlap, so that their cuts can be compared. Each cuts ``blank_rules(doc.text)`` (reST underline rules
turned into spaces of the same length), so every chunk has character offsets into ``doc.text``.

Per library it measures:

* speed: seconds to cut the whole corpus into located spans (best of ``--repeat`` runs; loading the
  tokenizer is not timed), pages/s, chunks/s and the time against the fastest library of the run;
  also the seconds and chunk count with an overlap of 32 tokens;
* size: mean and 95th percentile of word-piece tokens per chunk, counted as the model sees them
  (with [CLS] and [SEP], so a full chunk is 256), and the share of chunks over 256 tokens;
* coverage: the share of a page's non-whitespace characters that lie in some chunk (mean over pages,
  and the lowest page);
* langchain gives no reliable offsets (its ``add_start_index`` is wrong for many chunks once there is
  overlap), so each of its chunks is looked up in the text, in order (``locate_chunks``); ``not found``
  counts the chunks that are not a substring of the text. With overlap a repeated short chunk can
  still be placed on an earlier copy of its words, which shows as coverage a little under 100%.

For each pair of libraries it measures the agreement of their cuts:

* boundaries: a boundary is where a chunk ends (after trimming whitespace from the chunk, since the
  libraries keep or drop trailing whitespace differently), leaving out the end of the page. Boundaries
  of the second library are matched one-to-one with those of the first: exactly, and within
  ``--tolerance`` characters. Precision is the share of the second library's boundaries that match,
  recall the share of the first library's; both are summed over all pages.
* identical spans: the share of all chunks of the two libraries that have an identical twin (same start
  and end once whitespace is trimmed at both ends) in the other library.

Run from the project folder:

    python bench/chunk_libraries.py --profile small
    python bench/chunk_libraries.py                      # full corpus (497 pages), a few minutes
    python bench/chunk_libraries.py --repeat 3 --json /tmp/chunk_libraries.json
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import re
import time
from typing import Callable, NamedTuple

import numpy as np

from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.infra.corpus import load_corpus
from raglab.infra.packaged_models import MINILM_MAX_TOKENS, minilm_path, quiet_loading
from raglab.base.text import blank_rules

CAPACITY = MINILM_MAX_TOKENS - 2          # content tokens: the model's 256 minus [CLS] and [SEP]
SEPARATORS = ["\n\n", "\n", ". ", " ", ""]
SPEED_OVERLAP = 32                        # tokens of overlap for the second speed measurement


class Span(NamedTuple):
    """A chunk: its text as the library returned it and where it is in the text that was cut."""

    start: int
    end: int
    text: str
    found: bool = True      # False when the chunk was not found in the text (langchain only)


Splitter = Callable[[str], list[Span]]


# ---------------------------------------------------------------- the three libraries


@functools.lru_cache(maxsize=1)
def word_piece_tokenizer():
    """The packaged MiniLM's tokenizer (``tokenizers.Tokenizer``, no truncation, no padding)."""
    return load_tokenizer()


@functools.lru_cache(maxsize=1)
def transformers_tokenizer():
    """The same tokenizer wrapped by ``transformers``, which langchain needs."""
    quiet_loading()
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_path()))


def locate_chunks(text: str, chunks: list[str], overlapping: bool = True) -> list[Span]:
    """Find each chunk in ``text``, in order.

    Chunks that may overlap are looked for from just after the previous chunk's start; chunks that
    do not overlap from the previous chunk's end. (A short chunk whose words also occur earlier, such
    as a repeated sentence or table border, would otherwise be placed on the earlier copy.) A chunk
    that is not a substring of the text is placed at the previous chunk's start and marked
    ``found=False``.
    """
    spans, previous = [], Span(-1, 0, "")
    for chunk in chunks:
        start = text.find(chunk, previous.start + 1 if overlapping else previous.end)
        found = start >= 0
        if not found:
            start = max(previous.start, 0)
        previous = Span(start, start + len(chunk), chunk, found)
        spans.append(previous)
    return spans


def langchain_splitter(capacity: int, overlap: int) -> Splitter:
    """langchain-text-splitters' RecursiveCharacterTextSplitter, measured in word-piece tokens."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        transformers_tokenizer(), chunk_size=capacity, chunk_overlap=overlap, separators=SEPARATORS)
    return lambda text: locate_chunks(text, splitter.split_text(text), overlapping=overlap > 0)


def semchunk_splitter(capacity: int, overlap: int) -> Splitter:
    """semchunk; it returns exact character offsets. A new chunker has an empty token-count cache."""
    import semchunk

    chunker = semchunk.chunkerify(word_piece_tokenizer(), capacity)

    def split(text: str) -> list[Span]:
        chunks, offsets = chunker(text, offsets=True, overlap=overlap)
        return [Span(start, end, chunk) for chunk, (start, end) in zip(chunks, offsets)]

    return split


def semantic_text_splitter(capacity: int, overlap: int) -> Splitter:
    """semantic-text-splitter (Rust); ``chunk_indices`` gives each chunk's character offset."""
    from semantic_text_splitter import TextSplitter

    splitter = TextSplitter.from_huggingface_tokenizer(word_piece_tokenizer(), capacity=capacity, overlap=overlap)
    return lambda text: [Span(start, start + len(chunk), chunk) for start, chunk in splitter.chunk_indices(text)]


LIBRARIES: dict[str, Callable[[int, int], Splitter]] = {
    "langchain": langchain_splitter,
    "semchunk": semchunk_splitter,
    "semantic-text-splitter": semantic_text_splitter,
}


# ---------------------------------------------------------------- cutting and timing


def cut_corpus(make_splitter: Callable[[int, int], Splitter], texts: list[str], capacity: int, overlap: int,
               repeat: int = 1) -> tuple[list[list[Span]], float]:
    """Every page's spans and the best time over ``repeat`` runs (a fresh splitter each run)."""
    best, pages = float("inf"), []
    for _ in range(repeat):
        split = make_splitter(capacity, overlap)
        t = time.perf_counter()
        pages = [split(text) for text in texts]
        best = min(best, time.perf_counter() - t)
    return pages, best


# ---------------------------------------------------------------- size and coverage


def trimmed(text: str, span: Span) -> tuple[int, int]:
    """The span without whitespace at either end, as ``(start, end)`` in ``text``."""
    piece = text[span.start:span.end]
    return span.start + len(piece) - len(piece.lstrip()), span.end - len(piece) + len(piece.rstrip())


def coverage(text: str, spans: list[Span]) -> float:
    """The share of the text's non-whitespace characters that lie inside some span."""
    covered = np.zeros(len(text) + 1, dtype=bool)
    for span in spans:
        covered[max(span.start, 0):max(span.end, 0)] = True
    solid = np.ones(len(text) + 1, dtype=bool)
    solid[len(text)] = False
    for m in re.finditer(r"\s+", text):
        solid[m.start():m.end()] = False
    n_solid = int(solid.sum())
    return float((covered & solid).sum()) / n_solid if n_solid else 1.0


def size_stats(pages: list[list[Span]], texts: list[str], seconds: float) -> dict:
    """Chunk counts, speed, token sizes and coverage of one library's cut of the corpus."""
    chunks = [span.text for spans in pages for span in spans]
    tokens = np.array(token_lengths(chunks, word_piece_tokenizer())) if chunks else np.zeros(1, int)
    covers = [coverage(text, spans) for text, spans in zip(texts, pages)]
    return {
        "pages": len(pages),
        "chunks": len(chunks),
        "seconds": round(seconds, 3),
        "pages_per_s": round(len(pages) / seconds, 1),
        "chunks_per_s": round(len(chunks) / seconds, 1),
        "tokens_mean": round(float(tokens.mean()), 1),
        "tokens_p95": int(np.percentile(tokens, 95)),
        "tokens_max": int(tokens.max()),
        "over_256_share": round(float((tokens > MINILM_MAX_TOKENS).mean()), 4),
        "coverage_mean": round(float(np.mean(covers)), 4),
        "coverage_min": round(float(np.min(covers)), 4),
        "not_found": sum(not span.found for spans in pages for span in spans),
    }


# ---------------------------------------------------------------- agreement


def boundaries(text: str, spans: list[Span]) -> list[int]:
    """Where the chunks end (whitespace trimmed), sorted and without the end of the page."""
    page_end = len(text.rstrip())
    return sorted({end for _, end in (trimmed(text, s) for s in spans) if end < page_end})


def matched_boundaries(reference: list[int], predicted: list[int], tolerance: int = 0) -> int:
    """How many boundaries pair up one-to-one, each pair at most ``tolerance`` characters apart.

    Both lists sorted. Walking them together and pairing the first two that are close enough gives
    the largest possible number of pairs.
    """
    i = j = matched = 0
    while i < len(reference) and j < len(predicted):
        if abs(reference[i] - predicted[j]) <= tolerance:
            matched, i, j = matched + 1, i + 1, j + 1
        elif reference[i] < predicted[j]:
            i += 1
        else:
            j += 1
    return matched


def precision_recall_f1(matched: int, n_reference: int, n_predicted: int) -> tuple[float, float, float]:
    """Precision over the predicted boundaries, recall over the reference ones, and their F1."""
    precision = matched / n_predicted if n_predicted else 1.0
    recall = matched / n_reference if n_reference else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def boundary_scores(reference: list[int], predicted: list[int], tolerance: int = 0) -> tuple[float, float, float]:
    """Precision, recall and F1 of one page's predicted boundaries against the reference.

    >>> boundary_scores([10, 20, 30], [10, 25, 30])
    (0.6666666666666666, 0.6666666666666666, 0.6666666666666666)
    """
    return precision_recall_f1(matched_boundaries(reference, predicted, tolerance), len(reference), len(predicted))


def identical_spans(text: str, a: list[Span], b: list[Span]) -> tuple[int, int]:
    """How many chunks of ``a`` and of ``b`` have an identical twin in the other (whitespace trimmed)."""
    spans_a = {trimmed(text, s) for s in a}
    spans_b = {trimmed(text, s) for s in b}
    common = spans_a & spans_b
    return sum(trimmed(text, s) in common for s in a), sum(trimmed(text, s) in common for s in b)


def agreement(texts: list[str], pages_a: list[list[Span]], pages_b: list[list[Span]], tolerance: int) -> dict:
    """Boundary precision/recall/F1 of ``b`` against ``a`` (exact and within ``tolerance``), and the
    share of identical spans, summed over all pages."""
    n_a = n_b = exact = near = same_a = same_b = 0
    for text, a, b in zip(texts, pages_a, pages_b):
        ends_a, ends_b = boundaries(text, a), boundaries(text, b)
        n_a, n_b = n_a + len(ends_a), n_b + len(ends_b)
        exact += matched_boundaries(ends_a, ends_b, 0)
        near += matched_boundaries(ends_a, ends_b, tolerance)
        twins_a, twins_b = identical_spans(text, a, b)
        same_a, same_b = same_a + twins_a, same_b + twins_b
    chunks = sum(map(len, pages_a)) + sum(map(len, pages_b))
    p0, r0, f0 = precision_recall_f1(exact, n_a, n_b)
    pt, rt, ft = precision_recall_f1(near, n_a, n_b)
    return {
        "boundaries_a": n_a, "boundaries_b": n_b, "tolerance": tolerance,
        "precision_exact": round(p0, 4), "recall_exact": round(r0, 4), "f1_exact": round(f0, 4),
        "precision_tol": round(pt, 4), "recall_tol": round(rt, 4), "f1_tol": round(ft, 4),
        "identical_spans_share": round((same_a + same_b) / chunks, 4) if chunks else 1.0,
    }


# ---------------------------------------------------------------- the run and its tables


def time_vs_fastest(stats: dict[str, dict]) -> None:
    """Add each library's time as a multiple of the fastest library's time in the same table."""
    fastest = min(r["seconds"] for r in stats.values())
    for r in stats.values():
        r["time_vs_fastest"] = round(r["seconds"] / fastest, 2)


def run(profile: str, repeat: int = 1, tolerance: int = 20, overlap_speed: bool = True) -> dict:
    """Cut the corpus with every library and measure everything; returns the JSON-ready numbers."""
    docs = load_corpus("python-docs", profile)
    texts = [blank_rules(d.text) for d in docs]
    word_piece_tokenizer(), transformers_tokenizer()       # loaded before any timing
    results, overlapped, cuts = {}, {}, {}
    for name, make in LIBRARIES.items():
        cuts[name], seconds = cut_corpus(make, texts, CAPACITY, 0, repeat)
        results[name] = size_stats(cuts[name], texts, seconds)
        if overlap_speed:
            pages, seconds = cut_corpus(make, texts, CAPACITY, SPEED_OVERLAP, repeat)
            overlapped[name] = size_stats(pages, texts, seconds)
    for stats in (results, overlapped):
        if stats:
            time_vs_fastest(stats)
    pairs = [{"a": a, "b": b, **agreement(texts, cuts[a], cuts[b], tolerance)}
             for a, b in itertools.combinations(LIBRARIES, 2)]
    return {"profile": profile, "pages": len(docs), "characters": sum(map(len, texts)), "repeat": repeat,
            "capacity_tokens": CAPACITY, "overlap_tokens": 0, "libraries": results, "agreement": pairs,
            f"overlap_{SPEED_OVERLAP}": overlapped}


def library_table(stats: dict[str, dict]) -> str:
    """One row per library: speed, chunk sizes, coverage."""
    head = (f"{'library':<24}{'pages':>6}{'chunks':>8}{'seconds':>9}{'pages/s':>9}{'chunks/s':>10}{'x fastest':>10}"
            f"{'tok mean':>9}{'tok p95':>8}{'tok max':>8}{'>256':>7}{'cover':>9}{'min cover':>10}{'not found':>10}")
    rows = [head]
    for name, r in stats.items():
        rows.append(
            f"{name:<24}{r['pages']:>6}{r['chunks']:>8}{r['seconds']:>9.2f}{r['pages_per_s']:>9.1f}"
            f"{r['chunks_per_s']:>10.0f}{r['time_vs_fastest']:>9.2f}x{r['tokens_mean']:>9.1f}{r['tokens_p95']:>8}"
            f"{r['tokens_max']:>8}{r['over_256_share']:>7.1%}{r['coverage_mean']:>9.2%}{r['coverage_min']:>10.2%}"
            f"{r['not_found']:>10}")
    return "\n".join(rows)


def agreement_table(report: dict) -> str:
    """One row per pair: boundary precision/recall/F1 of B against A, exact and within the tolerance."""
    tol = report["agreement"][0]["tolerance"] if report["agreement"] else 0
    exact, near = "exact P / R / F1", f"within {tol} chars P / R / F1"
    head = f"{'A (reference)':<24}{'B':<24}{'ends A':>7}{'ends B':>7}   {exact:<25}{near:<30}{'identical spans':>15}"
    rows = [head]
    for p in report["agreement"]:
        exact = f"{p['precision_exact']:.3f} / {p['recall_exact']:.3f} / {p['f1_exact']:.3f}"
        near = f"{p['precision_tol']:.3f} / {p['recall_tol']:.3f} / {p['f1_tol']:.3f}"
        rows.append(f"{p['a']:<24}{p['b']:<24}{p['boundaries_a']:>7}{p['boundaries_b']:>7}   "
                    f"{exact:<25}{near:<30}{p['identical_spans_share']:>15.1%}")
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="full", help="corpus profile: small (24 pages) or full (497 pages)")
    p.add_argument("--repeat", type=int, default=1, help="runs per library; the best time is kept")
    p.add_argument("--tolerance", type=int, default=20, help="characters two boundaries may differ and still agree")
    p.add_argument("--no-overlap-speed", action="store_true", help="skip the second timing with 32 tokens of overlap")
    p.add_argument("--json", metavar="PATH", help="also write the numbers to this JSON file")
    args = p.parse_args()
    report = run(args.profile, args.repeat, args.tolerance, not args.no_overlap_speed)
    print(f"corpus: python-docs, profile {report['profile']}: {report['pages']} pages, "
          f"{report['characters']:,} characters; capacity {CAPACITY} content tokens (MiniLM word pieces), "
          f"overlap 0; best of {report['repeat']} run(s)")
    print()
    print(library_table(report["libraries"]))
    if report[f"overlap_{SPEED_OVERLAP}"]:
        print(f"\nthe same with an overlap of {SPEED_OVERLAP} tokens (speed and size only)")
        print(library_table(report[f"overlap_{SPEED_OVERLAP}"]))
    print()
    print("agreement of chunk ends (whitespace trimmed, page ends left out); P over B's ends, R over A's")
    print(agreement_table(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
