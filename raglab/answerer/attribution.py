"""Post-hoc attribution: a source number for each uncited sentence of a model's answer.

For a model that does not cite: each sentence of its answer gets the source whose best sentence is closest to
it by cosine, when that reaches a threshold. The citation check then runs on the cited text as on any answer.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from raglab.base.text import clean, sentences
from raglab.book.citations import parse_citations
from raglab.book.prompt import Source
from raglab.guards.injection import visible_text

def attribute(text: str, sources: list[Source], embedder, threshold: float = 0.5) -> tuple[str, list[bool]]:
    """For models that do not cite: append to each sentence the source whose best sentence matches it
    best, when the cosine reaches ``threshold``; returns the cited text and which sentences were supported."""
    answer_sents = sentences(text, limit=50)
    if not answer_sents or not sources:
        return text, []
    src_sents = [(s.n, sent) for s in sources for sent in sentences(visible_text(s.chunk.text, before=s.before, after=s.after, script=s.script))] or [
        (s.n, clean(visible_text(s.chunk.text, before=s.before, after=s.after, script=s.script))) for s in sources]
    a = embedder.encode(answer_sents, progress=False)
    b = embedder.encode([sent for _, sent in src_sents], progress=False)
    sims = a @ b.T
    out, supported = [], []
    for i, sent in enumerate(answer_sents):
        j = int(np.argmax(sims[i]))
        ok = bool(sims[i, j] >= threshold)
        supported.append(ok)
        out.append(f"{sent} [{src_sents[j][0]}]" if ok and not parse_citations(sent) else sent)
    return " ".join(out), supported


def attributor(embedder, threshold: float = 0.5) -> Callable[[str, list[Source]], str]:
    """``attribute`` with its embedder, as an assistant takes it: (answer, sources) -> the cited answer."""
    def cite(text: str, sources: list[Source]) -> str:
        return attribute(text, sources, embedder, threshold)[0]
    return cite
