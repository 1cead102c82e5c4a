"""Refuse a question that names what no page holds: ``NameRule``, the evidence step of an assistant without a
reranker over technical docs.

A question about ``boto3`` asked of the Python docs finds chunks about uploading files, and their dense cosine
can pass the refusal threshold. The question *names* something (an API, a library, a product) that no chunk
contains, and that is a sharper signal than any cosine: the rule finds the question's name-like words
(``name_like``), keeps those the index's BM25 vocabulary lacks (``unknown_names``), and takes 1 from the top
dense cosine when there is one, so that no threshold can pass it. It was chosen on the full docs' dev split
(``evals/results/``); ``raglab.infra.assemble.build_assistant`` hands it to an assistant that answers from
hybrid search.
"""
from __future__ import annotations

import re
from typing import Container

from raglab.book.assistant import Evidence

_NAME_LIKE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"      # dotted: requests.Session
                        r"|\w*_\w*"                                # snake_case: process_cpu_count
                        r"|[A-Za-z_]\w*(?=\()"                      # called: cuda()
                        r"|\w*[a-z][A-Z]\w*|[A-Z]{2,}[a-z]\w*"     # camelCase / PascalCase / HTTPAdapter
                        r"|\b[A-Z]{3,}\b"                          # an acronym or a product in capitals: MATLAB
                        r"|\w*[A-Za-z]\d\w*|\w*\d[A-Za-z]\w*"     # letters and digits: boto3, S3
                        r"|(?<=[a-z,;:] )[A-Z][a-z]+")              # Capitalized inside a sentence: Flask


def name_like(question: str) -> list[str]:
    """Words of a question that name something (an API, a library, a product), lowercased.

    >>> name_like("How do I upload a file to an S3 bucket with boto3 and Flask, not os.path.join()?")
    ['s3', 'boto3', 'flask', 'os.path.join']
    """
    return [m.group().strip("._").lower() for m in _NAME_LIKE.finditer(question) if m.group().strip("._")]


def unknown_names(question: str, vocab: Container[str]) -> list[str]:
    """The names a question uses that no chunk contains (``vocab``: the BM25 vocabulary). A dotted
    name counts as unknown only when its last part is unknown too (``os.process_cpu_count``): the
    parts of ``requests.Session`` are ordinary words of the docs.

    >>> unknown_names("Does requests.Session retry? And os.process_cpu_count()?", {"os", "session", "retry"})
    ['os.process_cpu_count']
    """
    out = []
    for name in name_like(question):
        last = name.rsplit(".", 1)[-1]
        if not any(form in vocab for form in (name, last, *_singular(last))):
            out.append(name)
    return out


def _singular(word: str) -> list[str]:
    """The forms a plural name may have in the singular: ``Saturdays`` -> ``saturday``, ``boxes`` -> ``box``.

    >>> _singular("saturdays"), _singular("boxes"), _singular("os")
    (['saturday'], ['boxe', 'box'], [])
    """
    if len(word) < 4 or not word.endswith("s") or word.endswith("ss"):
        return []
    return [word[:-1]] + ([word[:-2]] if word.endswith("es") else [])


class NameRule:
    """The evidence step ``Assistant(evidence=NameRule(index.bm25.vocab))``: the top dense cosine, minus 1 when
    the question names something the vocabulary lacks, with those names.

    >>> from raglab.base.records import Ranked
    >>> rule = NameRule({"upload", "file"})
    >>> rule("How do I upload a file?", Ranked(top_dense=0.7)), rule("Upload a file with boto3?", Ranked(top_dense=0.7))
    (Evidence(strength=0.7, unknown_names=[]), Evidence(strength=-0.30000000000000004, unknown_names=['boto3']))
    """

    def __init__(self, vocab: Container[str]):
        self.vocab = vocab

    def __call__(self, question: str, hits) -> Evidence:
        unknown = unknown_names(question, self.vocab)
        return Evidence((hits.top_dense or 0.0) - (1.0 if unknown else 0.0), unknown)
