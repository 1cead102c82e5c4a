"""Term overlap: the share of a question's words (stems and identifiers) that a candidate sentence holds.

Weighted like idf among the candidates, identifiers twice over; one of the signals of the extractive answerer.
"""
from __future__ import annotations

import re

import numpy as np

_WORD = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_LITERAL = re.compile(r"'([^\w\s']{1,4})'")      # a quoted symbol: the struct format '!'
_STOP = frozenset("""a an the is are was were be been being do does did i me my we you your it its this that these those
    of in on at to for from by with as and or if then than so what which who whom whose when where why how can could
    should would will shall may might must there here have has had get gets into about any some""".split())


def _stem(word: str) -> str:
    """A word's crude stem, the same for its common inflections: ``returns``, ``returned`` -> ``return``."""
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"),
                         ("ing", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: len(word) - len(suffix)] + repl
            break
    return word[:-1] if len(word) > 4 and word.endswith("e") else word


def terms(text: str) -> dict[str, bool]:
    """The words of a text that can match, each with whether it is an identifier: stems of plain words
    (stop words left out); identifiers (dotted, snake_case, with a digit or an inner capital, or called)
    lower-cased, whole and by their dotted parts; quoted symbols (``'!'``) as they are.

    >>> terms("Which math function returns math.isqrt()?")
    {'math': True, 'function': False, 'return': False, 'math.isqrt': True, 'isqrt': True}
    >>> terms("What does the '!' prefix select, and is __hash__ called?")
    {'!': True, 'prefix': False, 'select': False, '__hash__': True, 'call': False}
    """
    out: dict[str, bool] = {literal: True for literal in _LITERAL.findall(text)}
    for m in _WORD.finditer(text):
        word, low = m.group(), m.group().lower()
        if len(word) < 2:
            continue
        ident = ("." in word or "_" in word or any(ch.isdigit() for ch in word)
                 or re.search(r"[a-z][A-Z]", word) is not None or text[m.end():m.end() + 1] == "(")
        if not ident:
            if low not in _STOP:
                out.setdefault(_stem(low), False)
            continue
        out[low] = True
        for part in low.split(".") if "." in low else ():
            if part not in _STOP and len(part) > 1:
                out[part] = True
    return out


def overlap(question: dict[str, bool], candidates: list[set[str]]) -> np.ndarray:
    """For each candidate's term set, the weighted share of the question's terms it holds: a term weighs
    its inverse document frequency among the candidates, twice over for an identifier."""
    if not question or not candidates:
        return np.zeros(len(candidates))
    n = len(candidates)
    weight = {t: np.log((n + 1) / (sum(t in c for c in candidates) + 0.5)) * (2.0 if ident else 1.0)
              for t, ident in question.items()}
    total = sum(weight.values()) or 1.0
    return np.array([sum(w for t, w in weight.items() if t in c) / total for c in candidates])
