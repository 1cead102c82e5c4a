"""Notebook widgets for the workbook: a chunk explorer and an ask box.

Learners use them live in Jupyter; instructors read the executed notebooks as static HTML, where
widgets do not run. So each widget function also displays (``static=True``, the default) a plain
HTML snapshot of its initial state, and the widget itself falls back to a one-line text note.
Everything visible comes from two pure functions that are tested on their own:

- ``chunk_html(doc, chunks)``: the document's text with each chunk's span shaded (alternating
  colours, overlaps in a third colour), a label at each chunk start (local id, tokens; red when
  over MiniLM's 256-token window), a one-line summary and a table of the chunks shown.
- ``answer_widget_html(answer, chunk_lookup)``: ``raglab.surfaces.render.answer_html`` (citation markers
  linking to ``<details>`` that hold the cited chunk's text: no JavaScript needed), with anchors
  made unique on the page, plus the question, the refusal's reason explained, the evidence
  strength and the retrieved list.

All document and answer text is HTML-escaped; styles are inline so the HTML survives
JupyterLab's output sanitizer and nbconvert alike.
"""
from __future__ import annotations

import hashlib
import html
import itertools
import re
from dataclasses import replace
from typing import Callable, Iterable, Mapping

import ipywidgets as widgets
from IPython.display import HTML, display

from raglab.book.assistant import Answer
from raglab.book.chunking import UNITS, Chunk, ChunkSettings, chunk_document
from raglab.book.documents import Document
from raglab.infra.packaged_models import MINILM_MAX_TOKENS
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.surfaces.render import answer_html

__all__ = ["AskBox", "ChunkExplorer", "answer_widget_html", "ask_box", "chunk_explorer", "chunk_html",
           "default_strategies"]

DEFAULT_LIMIT_CHARS = 6000
# Alternating chunk backgrounds, text covered by two chunks, by three or more.
CHUNK_COLOURS = ("#cde0f5", "#fcd8b4")
OVERLAP_COLOURS = ("#b79be6", "#9372cc")
RED = "#c44e52"
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.45"
_SLIDERS = {"words": (20, 600, 10), "characters": (100, 8000, 50), "tokens": (32, 256, 8)}   # min, max, step by unit
_box_ids = itertools.count(1)

_REASONS = {
    "weak-evidence": "the best retrieved passage scored below the refusal threshold, so no model was asked",
    "model-refused": "the generator said the sources do not answer the question",
    "invalid-citation": "the answer cited a source that was not retrieved for this question",
    "no-citation": "the answer cited no source",
    "unsupported-claim": "the answer stated a number, code, e-mail or URL that appears in no source",
}


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def default_strategies() -> dict[str, ChunkSettings]:
    """The chunkings the explorer offers by default, keyed by their label (``words 150/30``...)."""
    settings = [ChunkSettings("words"), ChunkSettings("chars"), ChunkSettings("large"),
                ChunkSettings("headings"), ChunkSettings("headings", prefix=True)]
    return {s.label(): s for s in settings}


# ---------------------------------------------------------------- chunk map

def _local_id(chunk: Chunk) -> str:
    """``library/json.txt#c3`` -> ``#c3``."""
    return "#" + chunk.id.split("#", 1)[1] if "#" in chunk.id else chunk.id


def chunk_html(doc: Document, chunks: list[Chunk], limit_chars: int | None = DEFAULT_LIMIT_CHARS,
               tokenizer=None, *, token_limit: int = MINILM_MAX_TOKENS, label: str | None = None) -> str:
    """The document's text with its chunks marked, as one self-contained HTML fragment.

    Every character of ``doc.text[:limit_chars]`` is inside exactly one ``<span class="rl-seg">``,
    in order, cut at every chunk start and end and nowhere else; ``data-chunks`` lists the
    positions (in ``chunks``) of the chunks covering it: one chunk gets its alternating colour,
    two or more (an overlap) a purple shade, none (text no chunk keeps) no background. A label
    at each chunk start gives its local id and its token count, the MiniLM word pieces of its
    ``indexed_text`` (what the model embeds, [CLS] and [SEP] counted), in red over
    ``token_limit``. The summary line counts every chunk of the document; the table lists the
    chunks that start in the part shown (``limit_chars=None`` shows everything).
    """
    shown = len(doc.text) if limit_chars is None else max(0, min(int(limit_chars), len(doc.text)))
    tokens = token_lengths([c.indexed_text for c in chunks], tokenizer or load_tokenizer()) if chunks else []
    over = [t > token_limit for t in tokens]
    label = label or (chunks[0].strategy if chunks else "no chunks")
    mean = sum(tokens) / len(tokens) if tokens else 0.0
    summary = (f"<b>{_e(doc.id)}</b> · {_e(label)}: <b>{len(chunks)}</b> chunks · mean {mean:.0f} tokens · "
               f'<span style="color:{RED if any(over) else "inherit"}"><b>{sum(over) / max(len(chunks), 1):.0%}</b>'
               f" over {token_limit} tokens ({sum(over)})</span>")

    starts: dict[int, list[int]] = {}
    for i, c in enumerate(chunks):
        starts.setdefault(c.start, []).append(i)
    points = sorted({0, shown} | {p for c in chunks for p in (c.start, c.end) if 0 <= p <= shown})
    by_start = sorted(range(len(chunks)), key=lambda i: chunks[i].start)
    active: set[int] = set()
    nxt = 0
    parts = []
    for a, b in zip(points, points[1:]):
        active = {i for i in active if chunks[i].end > a}
        while nxt < len(by_start) and chunks[by_start[nxt]].start <= a:
            if chunks[by_start[nxt]].end > a:
                active.add(by_start[nxt])
            nxt += 1
        for i in starts.get(a, ()):
            c, colour = chunks[i], RED if over[i] else "#555"
            parts.append(f'<span class="rl-tag{" rl-over" if over[i] else ""}" data-chunk="{i}" '
                         f'title="{_e(c.id)} | {_e(" > ".join(c.heading))}" style="font:10px/1.2 sans-serif;'
                         f'color:#fff;background:{colour};border-radius:3px;padding:0 3px;margin:0 2px;'
                         f'user-select:none;white-space:nowrap">{_e(_local_id(c))} · {tokens[i]} tok</span>')
        cover = sorted(active)
        if not cover:
            style, title = "color:#999", "in no chunk"
        elif len(cover) == 1:
            style, title = f"background:{CHUNK_COLOURS[cover[0] % 2]}", _local_id(chunks[cover[0]])
        else:
            style = f"background:{OVERLAP_COLOURS[min(len(cover), 3) - 2]}"
            title = "overlap: " + ", ".join(_local_id(chunks[i]) for i in cover)
        parts.append(f'<span class="rl-seg" data-chunks="{" ".join(map(str, cover))}" title="{_e(title)}" '
                     f'style="{style}">{_e(doc.text[a:b])}</span>')

    visible = [i for i, c in enumerate(chunks) if c.start < shown]
    note = ""
    if shown < len(doc.text):
        parts.append('<span style="color:#999;user-select:none"> […]</span>')
        note = (f'<div class="rl-note" style="color:#666">Showing the first {shown:,} of {len(doc.text):,} characters '
                f"({len(visible)} of {len(chunks)} chunks start here; the summary counts them all).</div>")
    swatch = 'display:inline-block;width:10px;height:10px;margin:0 3px 0 8px;vertical-align:middle;background:'
    legend = (f'<div style="color:#666;font-size:11px">'
              f'<span style="{swatch}{CHUNK_COLOURS[0]}"></span><span style="{swatch}{CHUNK_COLOURS[1]}"></span>one chunk'
              f'<span style="{swatch}{OVERLAP_COLOURS[0]}"></span>in two chunks (overlap)'
              f'<span style="{swatch}{OVERLAP_COLOURS[1]}"></span>in three or more'
              f'<span style="{swatch}transparent;border:1px solid #ccc"></span>in no chunk'
              f'<span style="{swatch}{RED}"></span>label: over {token_limit} tokens</div>')
    red = f' style="color:{RED}"'
    rows = "".join(
        f'<tr class="rl-row{" rl-over" if over[i] else ""}" data-chunk-id="{_e(chunks[i].id)}" '
        f'data-tokens="{tokens[i]}"{red if over[i] else ""}><td>{i}</td><td><code>{_e(chunks[i].id)}</code></td>'
        f'<td>{_e(" > ".join(chunks[i].heading))}</td>'
        f'<td style="text-align:right">{chunks[i].start:,}–{chunks[i].end:,}</td>'
        f'<td style="text-align:right">{tokens[i]}{" ⚠" if over[i] else ""}</td></tr>' for i in visible)
    table = (f'<details open style="margin-top:6px"><summary>{len(visible)} chunk(s) shown: id, heading, '
             'characters, tokens</summary>'
             '<table class="rl-table" style="font-size:12px;border-collapse:separate;border-spacing:8px 1px">'
             f"<tr><th>#</th><th>chunk id</th><th>heading</th><th>characters</th><th>tokens</th></tr>{rows}"
             f"</table></details>")
    return (f'<div class="rl-chunks" style="{_FONT}"><div class="rl-summary">{summary}</div>{legend}{note}'
            f'<pre class="rl-doc" style="white-space:pre-wrap;word-break:break-word;font-size:12px;'
            f'max-height:40em;overflow:auto;border:1px solid #ddd;padding:6px;margin:4px 0">{"".join(parts)}</pre>'
            f"{table}</div>")


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
            self.view.value = f'<div style="color:{RED}">cannot chunk: {_e(type(exc).__name__)}: {_e(exc)}</div>'

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
    return (f'<div class="rl-static"><div style="{_FONT};color:#888;font-size:11px">Static snapshot of the '
            f"{what}'s initial state (the interactive widget below it needs a running kernel).</div>{body}</div>")


# ---------------------------------------------------------------- answers

def _text_of(value) -> str | None:
    return getattr(value, "text", value)


def answer_widget_html(answer: Answer, chunk_lookup: Mapping[str, str] | Callable[[str], str | None], *,
                       threshold: float | None = None, anchor: str | None = None) -> str:
    """An answer as HTML: ``render.answer_html`` plus the question, the refusal's reason explained,
    the evidence strength and the retrieved list.

    Each ``[n]`` links (``href="#..."``) to a ``<details>`` whose ``<summary>`` names the cited
    chunk and whose body is its text, taken from ``chunk_lookup`` (a mapping or a function from
    chunk id to text or ``Chunk``; the citation's snippet when it has none). This works without
    JavaScript, in JupyterLab and in static HTML. ``anchor`` prefixes every element id so two
    renderings on one page never share one (default: derived from the question and answer).
    """
    get = chunk_lookup.get if isinstance(chunk_lookup, Mapping) else chunk_lookup
    texts = {c.id: t for c in answer.citations if (t := _text_of(get(c.id))) is not None}
    anchor = anchor or "rl-" + hashlib.sha1(f"{answer.question}\0{answer.answer}".encode()).hexdigest()[:10]
    # answer_html escapes every text (quotes included), so these attributes can only be its own markup
    core = re.sub(r'(\sid="|\shref="#)', lambda m: f"{m.group(1)}{_e(anchor)}-", answer_html(answer, texts))

    cited = {c.id: c.n for c in answer.citations}
    state = (f'<span class="rl-refused" style="color:#fff;background:{RED};border-radius:3px;padding:0 5px">'
             f"refused: {_e(answer.reason)}</span>" if answer.refused else
             '<span class="rl-answered" style="color:#fff;background:#55a868;border-radius:3px;padding:0 5px">'
             f"answered, {len(answer.citations)} citation(s)</span>")
    why = ""
    if answer.refused and str(answer.reason) in _REASONS:
        bad = "".join(f" [{c}]" for c in answer.invalid_citations)
        why = f'<div class="rl-reason" style="color:#666">Why: {_e(_REASONS[str(answer.reason)] + bad)}.</div>'
    refused_by = f" · generator {_e(answer.generator)}" if answer.refused else ""  # answer_html names it otherwise
    versus = ""
    if threshold is not None:
        versus = f" ({'≥' if answer.evidence >= threshold else '<'} refusal threshold {threshold:.3f})"
    items = "".join(
        f'<li><code>{_e(r["id"])}</code> <span style="color:#888">score {float(r["score"]):.3f}</span>'
        + (f" <b>cited [{cited[r['id']]}]</b>" if r["id"] in cited else "") + "</li>" for r in answer.retrieved)
    retrieved = (f'<div class="rl-retrieved" style="color:#444">retrieved for this user ({len(answer.retrieved)}):'
                 f'<ol style="margin:2px 0 0;padding-left:2em">{items}</ol></div>' if answer.retrieved else
                 '<div class="rl-retrieved" style="color:#444">nothing retrieved for this user</div>')
    return (f'<div class="rl-answer" data-refused="{str(answer.refused).lower()}" style="{_FONT};margin:4px 0">'
            f'<div style="margin-bottom:3px"><b>Q:</b> {_e(answer.question)} {state}</div>{core}{why}'
            f'<div class="rl-evidence" style="color:#444;margin-top:4px">evidence strength '
            f"<b>{answer.evidence:.3f}</b>{versus}{refused_by}</div>{retrieved}</div>")


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
        who = widgets.HTML(f'<span style="color:#888;font-size:11px">asking as: {_e(groups)}</span>')
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
        self.output.value = f'<div style="color:#888">Searching for: {_e(question)} …</div>'
        try:
            self.output.value = self.ask(question)
        except Exception as exc:  # noqa: BLE001 - a callback's error would otherwise vanish into the log
            self.output.value = f'<div style="color:{RED}">error: {_e(type(exc).__name__)}: {_e(exc)}</div>'
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
            f'<div style="{_FONT};border:1px dashed #bbb;padding:4px 8px;color:#666">Ask box: a question field and '
            "an Ask button; answers appear here with their citations.</div>")
        display(HTML(_snapshot("ask box", body)))
        display(box)   # the live box, displayed here: assign the result (``box = ask_box(...)``), no empty Out[]
    return box
