"""The HTML the notebook widgets show (``raglab.surfaces.widgets``): two pure functions, tested on their own.

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
import re
from typing import Callable, Mapping

from raglab.book.assistant import Answer
from raglab.book.chunking import Chunk
from raglab.infra.tokenizer import load_tokenizer, token_lengths
from raglab.book.documents import Document
from raglab.infra.packaged_models import MINILM_MAX_TOKENS
from raglab.surfaces.render import answer_html

__all__ = ["answer_widget_html", "chunk_html"]

DEFAULT_LIMIT_CHARS = 6000
# Alternating chunk backgrounds, text covered by two chunks, by three or more.
CHUNK_COLOURS = ("#cde0f5", "#fcd8b4")
OVERLAP_COLOURS = ("#b79be6", "#9372cc")
RED = "#c44e52"
FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.45"

_REASONS = {
    "weak-evidence": "the best retrieved passage scored below the refusal threshold, so no model was asked",
    "model-refused": "the model said the sources do not answer the question",
    "no-sentence-selected": "no model ran, and no sentence of the sources matched the question closely enough to quote",
    "invalid-citation": "the answer cited a source that was not retrieved for this question",
    "no-citation": "the answer cited no source",
    "unsupported-claim": "the answer stated a number, code, e-mail or URL that appears in no source",
}


def escape(text) -> str:
    return html.escape(str(text), quote=True)


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
    summary = (f"<b>{escape(doc.id)}</b> · {escape(label)}: <b>{len(chunks)}</b> chunks · mean {mean:.0f} tokens · "
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
                         f'title="{escape(c.id)} | {escape(" > ".join(c.heading))}" style="font:10px/1.2 sans-serif;'
                         f'color:#fff;background:{colour};border-radius:3px;padding:0 3px;margin:0 2px;'
                         f'user-select:none;white-space:nowrap">{escape(_local_id(c))} · {tokens[i]} tok</span>')
        cover = sorted(active)
        if not cover:
            style, title = "color:#999", "in no chunk"
        elif len(cover) == 1:
            style, title = f"background:{CHUNK_COLOURS[cover[0] % 2]}", _local_id(chunks[cover[0]])
        else:
            style = f"background:{OVERLAP_COLOURS[min(len(cover), 3) - 2]}"
            title = "overlap: " + ", ".join(_local_id(chunks[i]) for i in cover)
        parts.append(f'<span class="rl-seg" data-chunks="{" ".join(map(str, cover))}" title="{escape(title)}" '
                     f'style="{style}">{escape(doc.text[a:b])}</span>')

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
        f'<tr class="rl-row{" rl-over" if over[i] else ""}" data-chunk-id="{escape(chunks[i].id)}" '
        f'data-tokens="{tokens[i]}"{red if over[i] else ""}><td>{i}</td><td><code>{escape(chunks[i].id)}</code></td>'
        f'<td>{escape(" > ".join(chunks[i].heading))}</td>'
        f'<td style="text-align:right">{chunks[i].start:,}–{chunks[i].end:,}</td>'
        f'<td style="text-align:right">{tokens[i]}{" ⚠" if over[i] else ""}</td></tr>' for i in visible)
    table = (f'<details open style="margin-top:6px"><summary>{len(visible)} chunk(s) shown: id, heading, '
             'characters, tokens</summary>'
             '<table class="rl-table" style="font-size:12px;border-collapse:separate;border-spacing:8px 1px">'
             f"<tr><th>#</th><th>chunk id</th><th>heading</th><th>characters</th><th>tokens</th></tr>{rows}"
             f"</table></details>")
    return (f'<div class="rl-chunks" style="{FONT}"><div class="rl-summary">{summary}</div>{legend}{note}'
            f'<pre class="rl-doc" style="white-space:pre-wrap;word-break:break-word;font-size:12px;'
            f'max-height:40em;overflow:auto;border:1px solid #ddd;padding:6px;margin:4px 0">{"".join(parts)}</pre>'
            f"{table}</div>")


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
    core = re.sub(r'(\sid="|\shref="#)', lambda m: f"{m.group(1)}{escape(anchor)}-", answer_html(answer, texts))

    cited = {c.id: c.n for c in answer.citations}
    state = (f'<span class="rl-refused" style="color:#fff;background:{RED};border-radius:3px;padding:0 5px">'
             f"refused: {escape(answer.reason)}</span>" if answer.refused else
             '<span class="rl-answered" style="color:#fff;background:#55a868;border-radius:3px;padding:0 5px">'
             f"answered, {len(answer.citations)} citation(s)</span>")
    why = ""
    if answer.refused and str(answer.reason) in _REASONS:
        bad = "".join(f" [{c}]" for c in answer.invalid_citations)
        why = f'<div class="rl-reason" style="color:#666">Why: {escape(_REASONS[str(answer.reason)] + bad)}.</div>'
    refused_by = f" · generator {escape(answer.generator)}" if answer.refused else ""  # answer_html names it otherwise
    versus = ""
    if threshold is not None:
        versus = f" ({'≥' if answer.evidence >= threshold else '<'} refusal threshold {threshold:.3f})"
    items = "".join(
        f'<li><code>{escape(r["id"])}</code> <span style="color:#888">score {float(r["score"]):.3f}</span>'
        + (f" <b>cited [{cited[r['id']]}]</b>" if r["id"] in cited else "") + "</li>" for r in answer.retrieved)
    retrieved = (f'<div class="rl-retrieved" style="color:#444">retrieved for this user ({len(answer.retrieved)}):'
                 f'<ol style="margin:2px 0 0;padding-left:2em">{items}</ol></div>' if answer.retrieved else
                 '<div class="rl-retrieved" style="color:#444">nothing retrieved for this user</div>')
    return (f'<div class="rl-answer" data-refused="{str(answer.refused).lower()}" style="{FONT};margin:4px 0">'
            f'<div style="margin-bottom:3px"><b>Q:</b> {escape(answer.question)} {state}</div>{core}{why}'
            f'<div class="rl-evidence" style="color:#444;margin-top:4px">evidence strength '
            f"<b>{answer.evidence:.3f}</b>{versus}{refused_by}</div>{retrieved}</div>")

