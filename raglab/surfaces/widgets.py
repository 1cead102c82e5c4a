"""Notebook widgets for the workbook: a chunk explorer and an ask box.

Learners use them live in Jupyter; instructors read the executed notebooks as static HTML, where
widgets do not run. So each widget function also displays (``static=True``, the default) a plain
HTML snapshot of its initial state, and the widget itself falls back to a one-line text note.
Everything visible comes from two pure functions that are tested on their own, in
``raglab.surfaces.widget_html``: ``chunk_html(doc, chunks)`` (the document's text with each chunk's
span shaded) and ``answer_widget_html(answer, chunk_lookup)`` (a cited answer with its evidence).
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Iterable, Mapping

import ipywidgets as widgets
from IPython.display import HTML, display

from raglab.book.assistant import Answer
from raglab.book.chunking import UNITS, ChunkSettings, chunk_document
from raglab.infra.tokenizer import load_tokenizer
from raglab.book.documents import Document
from raglab.surfaces.widget_html import (
    DEFAULT_LIMIT_CHARS,
    FONT,
    RED,
    answer_widget_html,
    chunk_html,
    escape,
)

__all__ = ["AskBox", "ChunkExplorer", "ask_box", "chunk_explorer", "default_strategies"]

_SLIDERS = {"words": (20, 600, 10), "characters": (100, 8000, 50), "tokens": (32, 256, 8)}   # min, max, step by unit
_box_ids = itertools.count(1)


def default_strategies() -> dict[str, ChunkSettings]:
    """The chunkings the explorer offers by default, keyed by their label (``words 150/30``...)."""
    settings = [ChunkSettings("words"), ChunkSettings("chars"), ChunkSettings("large"),
                ChunkSettings("headings"), ChunkSettings("headings", prefix=True)]
    return {s.label(): s for s in settings}


class ChunkExplorer(widgets.VBox):
    """The chunk explorer's container; its controls are attributes: ``doc_select``,
    ``strategy_select``, ``size_slider`` (None when not offered) and ``view`` (the HTML)."""

    def __init__(self, docs: list[Document], strategies: Mapping[str, ChunkSettings], doc: str,
                 limit_chars: int | None, size_slider: bool):
        self.docs = {d.id: d for d in docs}
        self.strategies = dict(strategies)
        self.limit_chars = limit_chars
        self._cache: dict = {}
        self._quiet = False
        self.doc_select = widgets.Dropdown(options=[(f"{d.title} — {d.id}", d.id) for d in docs], value=doc,
                                           description="document", layout=widgets.Layout(width="430px"))
        self.strategy_select = widgets.Dropdown(options=list(self.strategies), description="chunking",
                                                layout=widgets.Layout(width="290px"))
        self.size_slider = widgets.IntSlider(continuous_update=False, layout=widgets.Layout(width="330px")) \
            if size_slider else None
        self.view = widgets.HTML()
        controls = [self.doc_select, self.strategy_select] + ([self.size_slider] if self.size_slider else [])
        super().__init__([widgets.HBox(controls, layout=widgets.Layout(flex_flow="row wrap")), self.view])
        self._reset_slider()
        self.doc_select.observe(self._changed, "value")
        self.strategy_select.observe(self._strategy_changed, "value")
        if self.size_slider:
            self.size_slider.observe(self._changed, "value")
        self.render()

    def __repr__(self) -> str:  # the text shown where widgets cannot run (static HTML)
        return "ChunkExplorer (interactive widget: needs a running Jupyter kernel)"

    def settings(self) -> ChunkSettings:
        """The chunking selected now (the slider's size, the overlap scaled in proportion)."""
        base = self.strategies[self.strategy_select.value].resolved()
        if not self.size_slider or self.size_slider.value == base.size:
            return base
        size = self.size_slider.value
        return replace(base, size=size, overlap=min(size - 1, round(size * base.overlap / base.size)))

    def html(self) -> str:
        """The rendering of the current selection (``chunk_html``), chunks cached per setting."""
        doc, s = self.docs[self.doc_select.value], self.settings()
        key = (doc.id, s)
        if key not in self._cache:
            if len(self._cache) > 32:
                self._cache.clear()
            tok = load_tokenizer()
            self._cache[key] = chunk_html(doc, chunk_document(doc, s, tokenizer=tok), self.limit_chars, tok, label=s.label())
        return self._cache[key]

    def render(self) -> None:
        """Recompute the view; an error is shown in it rather than lost in the kernel log."""
        try:
            self.view.value = self.html()
        except Exception as exc:  # noqa: BLE001 - show any failure to the learner
            self.view.value = f'<div style="color:{RED}">cannot chunk: {escape(type(exc).__name__)}: {escape(exc)}</div>'

    def _reset_slider(self) -> None:
        if not self.size_slider:
            return
        s = self.strategies[self.strategy_select.value].resolved()
        unit = UNITS[s.strategy]
        lo, hi, step = _SLIDERS[unit]
        self._quiet = True
        try:
            self.size_slider.min, self.size_slider.max = min(lo, s.size), max(hi, s.size)
            self.size_slider.step, self.size_slider.value = step, s.size
            self.size_slider.description = unit
        finally:
            self._quiet = False

    def _strategy_changed(self, _change) -> None:
        self._reset_slider()
        self.render()

    def _changed(self, _change) -> None:
        if not self._quiet:
            self.render()


def _strategy_map(strategies) -> dict[str, ChunkSettings]:
    if strategies is None:
        return default_strategies()
    if isinstance(strategies, Mapping):
        return dict(strategies)
    return {s.label(): s for s in strategies}


def chunk_explorer(docs: Iterable[Document], strategies: Mapping[str, ChunkSettings] | Iterable[ChunkSettings] | None = None,
                   doc: str | Document | None = None, *, limit_chars: int | None = DEFAULT_LIMIT_CHARS,
                   size_slider: bool = True, static: bool = True) -> ChunkExplorer:
    """Pick a document and a chunking, see where the chunks fall (``chunk_html``), live.

    ``strategies`` maps labels to ``ChunkSettings`` (or is a list of them; default:
    ``default_strategies()``); ``doc`` is the first document shown (an id or a ``Document``;
    default: the first). The slider changes the size in the strategy's unit, the overlap keeping
    its proportion. Only the first ``limit_chars`` characters are drawn. With ``static=True`` the
    initial view is also displayed as plain HTML, for readers of the rendered notebook.
    """
    docs = list(docs)
    if not docs:
        raise ValueError("chunk_explorer needs at least one document")
    doc_id = doc.id if isinstance(doc, Document) else (doc or docs[0].id)
    if doc_id not in {d.id for d in docs}:
        raise ValueError(f"document {doc_id!r} is not among the documents given")
    strategies = _strategy_map(strategies)
    if not strategies:
        raise ValueError("chunk_explorer needs at least one chunking")
    for s in strategies.values():
        s.resolved()  # fail here, not inside a callback
    box = ChunkExplorer(docs, strategies, doc_id, limit_chars, size_slider)
    if static:
        display(HTML(_snapshot("chunk explorer", box.view.value)))
    return box


def _snapshot(what: str, body: str) -> str:
    return (f'<div class="rl-static"><div style="{FONT};color:#888;font-size:11px">Static snapshot of the '
            f"{what}'s initial state (the interactive widget below it needs a running kernel).</div>{body}</div>")


class AskBox(widgets.VBox):
    """The ask box's container; its parts are attributes: ``question`` (Text), ``button``,
    ``output`` (HTML) and ``answer`` (the last ``Answer``, or None)."""

    def __init__(self, assistant, user: tuple[str, ...] | None, question: str | None):
        self.assistant, self.user = assistant, tuple(user) if user else None
        self.answer: Answer | None = None
        self._id, self._asked = next(_box_ids), 0
        self.question = widgets.Text(value=question or "", placeholder="Ask the documentation a question",
                                     layout=widgets.Layout(width="520px"))
        self.button = widgets.Button(description="Ask", button_style="primary", icon="search")
        self.output = widgets.HTML()
        groups = ", ".join(sorted(set(self.user or ()) | {"public"}))
        who = widgets.HTML(f'<span style="color:#888;font-size:11px">asking as: {escape(groups)}</span>')
        super().__init__([widgets.HBox([self.question, self.button, who]), self.output])
        self.button.on_click(self._clicked)

    def __repr__(self) -> str:  # the text shown where widgets cannot run (static HTML)
        return "AskBox (interactive widget: needs a running Jupyter kernel)"

    def lookup(self, chunk_id: str) -> str | None:
        """The text of a chunk of the assistant's index, or None."""
        index = self.assistant.retriever.index
        try:
            return index.chunk(chunk_id).text
        except KeyError:
            return None

    def ask(self, question: str) -> str:
        """Ask the assistant for this box's user; keep the answer and return its HTML."""
        self.answer = self.assistant.ask(question, self.user)
        self._asked += 1
        return self.render(self.answer, f"rlask{self._id}-{self._asked}")

    def render(self, answer: Answer, anchor: str) -> str:
        """``answer_widget_html`` with this box's chunk lookup and the assistant's threshold."""
        return answer_widget_html(answer, self.lookup, threshold=getattr(self.assistant, "threshold", None),
                                  anchor=anchor)

    def _clicked(self, _button=None) -> None:
        question = self.question.value.strip()
        if not question:
            self.output.value = '<div style="color:#888">Type a question first.</div>'
            return
        self.button.disabled = True
        self.output.value = f'<div style="color:#888">Searching for: {escape(question)} …</div>'
        try:
            self.output.value = self.ask(question)
        except Exception as exc:  # noqa: BLE001 - a callback's error would otherwise vanish into the log
            self.output.value = f'<div style="color:{RED}">error: {escape(type(exc).__name__)}: {escape(exc)}</div>'
        finally:
            self.button.disabled = False


def ask_box(assistant, user: tuple[str, ...] | None = None, question: str | None = None, *,
            static: bool = True) -> AskBox:
    """A question box over ``assistant``: type, click Ask, read the cited answer (``answer_widget_html``).

    ``user`` is the caller's access groups (public is always included). With ``question`` the box
    starts with that question answered; with ``static=True`` that initial state (the answer, or
    an empty box) is displayed as plain HTML, for readers of the rendered notebook, followed by the
    live box itself (so a notebook assigns the result instead of ending the cell with it).
    """
    box = AskBox(assistant, user, question)
    if question:
        box.output.value = box.ask(question)
    if static:
        body = box.render(box.answer, f"rlask{box._id}-static") if question else (
            f'<div style="{FONT};border:1px dashed #bbb;padding:4px 8px;color:#666">Ask box: a question field and '
            "an Ask button; answers appear here with their citations.</div>")
        display(HTML(_snapshot("ask box", body)))
        display(box)   # the live box, displayed here: assign the result (``box = ask_box(...)``), no empty Out[]
    return box
