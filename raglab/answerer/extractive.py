"""The offline answerer: quote the retrieved sentences that answer the question, each with its citation.

No model runs: each candidate sentence of the top sources is scored by its MiniLM cosine to the question, plus
its share of the question's terms (``raglab.answerer.terms``), plus a little in the top-ranked source, minus a
little for code; the best are quoted in the sources' order, each cited. It is deterministic and labelled as
extractive. Its selection can also choose what a model reads (``ExtractiveGenerator.narrow``).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from raglab.answerer.quotes import Quotable, asks_for_api, question_parts, quotables
from raglab.answerer.selection import budget_words, sentence_signals
from raglab.answerer.terms import overlap, terms
from raglab.base.text import MAX_SENTENCES
from raglab.book.chunking import Chunk
from raglab.book.citations import defuse
from raglab.book.llm import Generation
from raglab.book.prompt import Source
from raglab.book.refusal import REFUSAL
from raglab.guards.contacts import CONTACT_NOTE, omit_contacts
from raglab.guards.grounding import ungrounded
from raglab.guards.detector import InjectionDetector, default_detector
from raglab.guards.injection import instruction_like, judged


def in_context(score: np.ndarray, candidates: list[Quotable], beta: float) -> np.ndarray:
    """Scores (questions x candidates) with each candidate that continues the candidate before it in its
    paragraph raised ``beta`` of the way towards that one's score, when that is higher. A sentence such as
    "Return NULL if the key is not present." says little alone and everything after its neighbour.

    >>> cs = [Quotable(1, "a b c d.", "a b c d.", None), Quotable(1, "e f g h.", "e f g h.", None, follows=True),
    ...       Quotable(2, "i j k l.", "i j k l.", None, follows=True)]
    >>> in_context(np.array([[1.0, 0.2, 0.1]]), cs, 0.5).round(2).tolist()   # the third is another source's
    [[1.0, 0.6, 0.1]]
    """
    if not beta:
        return score
    out = score.copy()
    for i in range(1, len(candidates)):
        if candidates[i].follows and candidates[i].n == candidates[i - 1].n:
            out[:, i] = np.maximum(score[:, i], score[:, i] + beta * (score[:, i - 1] - score[:, i]))
    return out


class ExtractiveGenerator:
    """The offline default: quotes the sentences of the top sources that answer the question, each cited,
    each under the API it belongs to when the question asks for one. Deterministic; every answer is
    labelled as extractive.

    A sentence's score is its MiniLM cosine to the question, plus ``lexical`` times its share of the
    question's terms (``overlap``, counting the API it sits under), plus ``top_bonus`` in the top-ranked
    source, minus ``code_penalty`` for code; a sentence that continues the one before it in its paragraph
    is then raised ``context`` of the way towards that one's score (``in_context``). No sentence with a
    cosine of ``floor`` or more: the refusal text. Otherwise up to ``max_sentences`` scoring ``floor`` or more
    are quoted in the sources' order (``pick``: a question in parts gets the best sentence for each part); a
    quoted sentence whose own cosine is under ``floor`` (picked for its words) has its contact points omitted,
    and the answer says so. The defaults were chosen on the dev split of the full docs' golden set; the studies
    of each lever are in ``evals/results/answer-step-dev.md``."""

    name = "extractive"
    label = "Extractive answer (sentences quoted from the documentation):"

    def __init__(self, embedder, max_sentences: int = 3, top_sources: int = 3, floor: float = 0.5,
                 sentence_cap: int | None = MAX_SENTENCES, lexical: float = 2.0, top_bonus: float = 0.05,
                 code_penalty: float = 0.1, detector: InjectionDetector | None = None, scorer=None,
                 context: float = 0.0):
        """``sentence_cap``: sentences read from each source (None: all, e.g. for whole pages);
        ``detector``: judges each candidate sentence (default: ``default_detector(embedder)``);
        ``scorer``: a ``raglab.answerer.selection.SentenceScorer`` that chooses the sentences and refuses in place of
        the floor and ``pick`` (the floor then only decides which quotes keep their contact points);
        ``context``: how far a sentence that continues its paragraph is scored up towards the sentence before
        it (``in_context``)."""
        self.detector = detector or default_detector(embedder)
        self.scorer = scorer
        self.embedder, self.max_sentences, self.top_sources, self.floor = embedder, max_sentences, top_sources, floor
        self.sentence_cap, self.lexical, self.top_bonus, self.code_penalty = sentence_cap, lexical, top_bonus, code_penalty
        self.context = context

    def candidates(self, sources: list[Source]) -> list[Quotable]:
        """The quotable sentences of the top sources: four words or more, each once, none that the rule or
        the detector flags, nor one that continues a flagged sentence in its paragraph."""
        seen: set[str] = set()  # overlapping chunks repeat sentences; injected instructions are never quoted
        api_ok: dict[str, bool] = {}   # nor named as an API
        out = []
        for s in sources[: self.top_sources]:
            qs = quotables(s, self.sentence_cap)
            flags = judged([q.plain for q in qs], [q.follows for q in qs], self.detector, s.before, s.after, s.script)
            for q, flag in zip(qs, flags):
                if (not flag and len(q.plain.split()) >= 4 and q.plain not in seen
                        and (q.text == q.plain or not instruction_like(q.text))):
                    seen.add(q.plain)
                    if q.api is not None and api_ok.setdefault(q.api, not instruction_like(q.api)) is False:
                        q = replace(q, api=None)
                    out.append(q)
        return out

    def scores(self, questions: list[str], candidates: list[Quotable], sources: list[Source]) -> tuple[np.ndarray, np.ndarray]:
        """``(cosine, score)`` of each candidate (columns) for each question (rows)."""
        cos, _, score = self.scored(questions, candidates, sources)
        return cos, score

    def scored(self, questions: list[str], candidates: list[Quotable], sources: list[Source]):
        """``(cosine, term overlap, score)`` of each candidate (columns) for each question (rows)."""
        vectors = self.embedder.encode([c.plain for c in candidates], progress=False)
        cos = np.stack([vectors @ self.embedder.encode_query(q) for q in questions])
        held = [set(terms(f"{c.plain} {c.api or ''}")) for c in candidates]
        lex = np.stack([overlap(terms(q), held) for q in questions])
        top = np.array([c.n == sources[0].n for c in candidates], dtype=float)
        code = np.array([c.code for c in candidates], dtype=float)
        score = cos + self.lexical * lex + self.top_bonus * top - self.code_penalty * code
        return cos, lex, in_context(score, candidates, self.context)

    def selection(self, question: str, sources: list[Source]) -> dict:
        """How this question's sentences are chosen: ``candidates``, ``cos`` and ``score`` (per question part),
        with a scorer its ``signals`` and ``probability``, the ``chosen`` candidates (best first), and
        ``refusal`` (the stage, its number and threshold) when none is."""
        candidates = self.candidates(sources)
        out = {"candidates": candidates, "chosen": [], "refusal": None}
        if not candidates:
            out["refusal"] = {"stage": "no-candidate-sentence", "value": 0, "threshold": 1}
            return out
        cos, lex, score = self.scored([question, *question_parts(question)], candidates, sources)
        out.update(cos=cos, lexical=lex, score=score)
        if self.scorer is not None:
            out["signals"] = sentence_signals(cos, score, lex[0], candidates, sources)
            out["probability"] = prob = self.scorer.probability(out["signals"])
            out["chosen"] = self.scorer.choose(prob, [budget_words(c) for c in candidates])
            if not out["chosen"]:
                out["refusal"] = {"stage": "sentence-score", "value": round(float(prob.max()), 4),
                                  "threshold": self.scorer.threshold}
        elif cos[0].max() < self.floor:
            out["refusal"] = {"stage": "sentence-floor", "value": round(float(cos[0].max()), 4), "threshold": self.floor}
        else:
            out["chosen"] = self.pick(score)
            if not out["chosen"]:
                out["refusal"] = {"stage": "sentence-floor", "value": round(float(score.max()), 4), "threshold": self.floor}
        return out

    def selection_table(self, question: str, sources: list[Source], limit: int | None = 10) -> list[dict]:
        """The ``selection`` of one question as rows, best score first (at most ``limit``): the sentence, its
        source, its cosine to the question, its term overlap, its score (the best over the question's parts),
        and its place among the quoted sentences (1 = picked first; None: not quoted)."""
        sel = self.selection(question, sources)
        if "score" not in sel:
            return []
        score = sel["score"].max(axis=0)
        place = {i: k for k, i in enumerate(sel["chosen"], 1)}
        rows = [{"source": c.n, "sentence": c.text, "cosine": round(float(sel["cos"][0, i]), 3),
                 "term overlap": round(float(sel["lexical"][0, i]), 3), "score": round(float(score[i]), 3),
                 "quoted": place.get(i)} for i, c in enumerate(sel["candidates"])]
        rows.sort(key=lambda r: -r["score"])
        return rows[:limit] if limit is not None else rows

    def pick(self, score: np.ndarray) -> list[int]:
        """The candidates to quote: the best for the whole question, then the best for each of its parts
        (rows after the first), then the next best for the whole question; each scoring ``floor`` or more."""
        picked: list[int] = []
        for row in [0, *range(1, len(score)), *[0] * self.max_sentences]:
            best = next((i for i in np.argsort(-score[row], kind="stable") if i not in picked), None)
            if best is not None and score[row][best] >= self.floor and len(picked) < self.max_sentences:
                picked.append(int(best))
        return picked

    def narrow(self, question: str, sources: list[Source]) -> tuple[list[Source], dict | None]:
        """What a model reads instead of whole chunks: the chosen sentences (``selected_sources``), or the
        refusal (the stage, its number and threshold) when none is chosen."""
        chosen = self.selection(question, sources)
        if chosen["refusal"]:
            return [], chosen["refusal"]
        return selected_sources(chosen, sources, asks_for_api(question)), None

    def generate(self, question: str, sources: list[Source], refusal: str = REFUSAL) -> Generation:
        chosen = self.selection(question, sources)
        if chosen["refusal"]:
            return Generation(refusal, self.name, refusal=chosen["refusal"])
        candidates, cos, order = chosen["candidates"], chosen["cos"], chosen["chosen"]
        by_n = {s.n: s for s in sources}
        with_api = asks_for_api(question)
        quotes, last_api, omitted = [], None, []
        for i in sorted(order):  # keep the sources' own order
            c = candidates[i]
            api = c.api if with_api and c.api != last_api else None
            quote = self._quote(c, api, by_n[c.n])
            if cos[:, i].max() < self.floor:   # picked for its words, not its meaning: its contact points stay out
                quote, dropped = omit_contacts(quote, set())
                omitted += dropped
            quotes.append(quote)
            last_api = c.api if with_api else None
        return Generation(f"{self.label} {' '.join(quotes)}" + (f" {CONTACT_NOTE}" if omitted else ""), self.name)

    @staticmethod
    def _quote(c: Quotable, api: str | None, source: Source) -> str:
        """One cited quote, its API first when given; whatever the source does not hold as a whole token
        (``ungrounded``) falls back to the plain sentence, and brackets never read as citations."""
        for text in ([f"{api}: {c.text}"] if api else []) + [c.text]:
            quote = f"{defuse(text)} [{c.n}]"
            if not ungrounded(quote, [source]):
                return quote
        return f"{c.plain.replace('[', '［').replace(']', '］')} [{c.n}]"


def selected_sources(selection: dict, sources: list[Source], with_api: bool = False) -> list[Source]:
    """What a model reads when a selector chose the sentences (``ExtractiveGenerator.selection``): one
    source per source a chosen sentence comes from, in the order of its best chosen sentence, keeping its
    number and id, its text the chosen sentences in the selection's order (each under its API line when
    ``with_api`` and the line changes). Sources no chosen sentence comes from are not sent.

    >>> c = Chunk("d#0", "d", (), 0, 30, "One two three four. Five six seven eight.", "", ("public",), "words")
    >>> cands = [Quotable(1, "One two three four.", "One two three four.", None),
    ...          Quotable(1, "Five six seven eight.", "Five six seven eight.", "f(x)")]
    >>> [(s.n, s.chunk.text) for s in selected_sources({"candidates": cands, "chosen": [1, 0]}, [Source(1, c)], True)]
    [(1, 'f(x): Five six seven eight. One two three four.')]
    """
    by_n = {s.n: s for s in sources}
    texts: dict[int, list[str]] = {}
    last_api: dict[int, str | None] = {}
    for i in selection["chosen"]:
        c = selection["candidates"][i]
        api = c.api if with_api and c.api != last_api.get(c.n) else None
        texts.setdefault(c.n, []).append(f"{api}: {c.text}" if api else c.text)
        last_api[c.n] = c.api if with_api else None
    return [Source(n, replace(by_n[n].chunk, text=" ".join(parts)), script=by_n[n].script) for n, parts in texts.items()]
