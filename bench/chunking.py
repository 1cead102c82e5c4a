"""Chunking speed over the full Python docs: chunks/s per strategy, against the course's
plain ``chunk_text`` word window measured in the same run.

    python bench/chunking.py            # full corpus (497 pages)
    python bench/chunking.py --profile small
"""
from __future__ import annotations

import argparse
import re
import time

from raglab.book.chunking import STRATEGIES, ChunkSettings, chunk_corpus
from raglab.infra.corpus import load_corpus
from raglab.infra.tokenizer import load_tokenizer


def course_chunk_text(doc_id, text, max_words=150, overlap=30):
    """The course's reference: underline rules removed, then a sliding word window."""
    text = re.sub(r"[=\-*~^]{4,}", " ", text)
    words, chunks, start = text.split(), [], 0
    while start < len(words):
        chunks.append({"id": f"{doc_id}#{len(chunks)}", "doc": doc_id, "text": " ".join(words[start:start + max_words])})
        if start + max_words >= len(words):
            break
        start += max_words - overlap
    return chunks


def best_of(fn, repeat: int) -> tuple[float, int]:
    """The fastest of ``repeat`` runs (seconds) and the number of chunks produced."""
    best, n = float("inf"), 0
    for _ in range(repeat):
        t = time.perf_counter()
        n = len(fn())
        best = min(best, time.perf_counter() - t)
    return best, n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="full")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    docs = load_corpus("python-docs", args.profile)
    words = sum(d.n_words for d in docs)
    print(f"corpus: {len(docs)} pages, {words:,} words (profile {args.profile}); best of {args.repeat} runs")
    ref_s, ref_n = best_of(lambda: [c for d in docs for c in course_chunk_text(d.id, d.text)], args.repeat)
    print(f"{'chunking':<26}{'chunks':>8}{'seconds':>9}{'chunks/s':>11}{'MB/s':>7}{'time vs course':>16}")
    mb = sum(len(d.text) for d in docs) / 1e6
    print(f"{'course chunk_text 150/30':<26}{ref_n:>8}{ref_s:>9.2f}{ref_n / ref_s:>11,.0f}{mb / ref_s:>7.1f}{1.0:>15.2f}x")
    embed = None
    for strategy in STRATEGIES:
        if strategy == "semantic":   # it embeds every sentence: timed with a warm cache (run once before), model loaded
            from raglab.infra.embedder import Embedder

            embed = Embedder().encode
            chunk_corpus(docs, ChunkSettings(strategy), embed=embed, tokenizer=load_tokenizer())
        for prefix in (False, True) if strategy == "headings" else (False,):
            s = ChunkSettings(strategy, prefix=prefix)
            secs, n = best_of(lambda: chunk_corpus(docs, s, embed=embed, tokenizer=load_tokenizer()), args.repeat)
            print(f"{s.label():<26}{n:>8}{secs:>9.2f}{n / secs:>11,.0f}{mb / secs:>7.1f}{secs / ref_s:>15.2f}x")


if __name__ == "__main__":
    main()
