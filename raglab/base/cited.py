"""The one citation renderer: an answer's text and its citations, as a surface shows them.

An answer cites its sources with numbered markers (``[1]``, ``[2]``), each naming one of its
citations (an object with ``n``, ``id``, ``doc``, ``heading`` and ``snippet``, as
``raglab.book.assistant.Citation``). Every surface that shows a cited answer goes through
``render_cited``: the command line (``raglab ask``), the notebook's answers and the ask box
(``raglab.surfaces.render``, ``raglab.surfaces.widget_html``) and the web page's Markdown answers
(``raglab.surfaces.web.markdown``). It sits in the bottom layer, with no type of the book's, so
that any layer (the course's report too) may call it.
"""
from __future__ import annotations

import html
import re
from typing import Iterable, Mapping

from raglab.base.markdown import markdown_html

__all__ = ["FORMATS", "MARKER", "render_cited"]

FORMATS = ("text", "html", "markdown")
# A citation marker: the number of one of the answer's citations. Narrower than raglab.book.citations.CITATION
# on purpose: a surface links only ``[n]`` (as the web page's script does), the check reads every bracket group.
MARKER = re.compile(r"\[(\d+)\]")
_OPEN, _CLOSE = "\ue000", "\ue001"       # private-use characters that stand in for the brackets of [n]


def _escape(text) -> str:
    return html.escape(str(text), quote=True)


def render_cited(text: str, citations: Iterable, fmt: str = "text", *, anchor: str = "",
                 texts: Mapping[str, str] | None = None) -> str:
    """``text`` (an answer with its ``[n]`` markers) and its ``citations``, written in ``fmt``.

    The formats differ only where their readers do:

    - ``"text"`` (a terminal): the text as it is, a blank line, then a line a citation,
      ``[n] id  (heading)``.
    - ``"html"`` (a notebook, static or live; no JavaScript needed): the text HTML-escaped, each
      ``[n]`` that names a citation a link ``<sup><a href="#{anchor}-{n}">[n]</a></sup>`` (any
      other ``[n]`` stays text, ``[01]`` too), then a ``<details id="{anchor}-{n}">`` a citation
      whose summary names the chunk and whose body is its text from ``texts`` (chunk id to text;
      the citation's snippet when it has none). Every text and attribute is escaped, quotes included.
    - ``"markdown"`` (the web page): the text read as Markdown and rendered by
      ``raglab.base.markdown.markdown_html`` (raw HTML off, so a tag comes out escaped). Each
      ``[n]`` is kept out of Markdown's sight while it renders (``[1]: url`` never makes ``[1]`` a
      link) and comes back as the text ``[n]``: the page's script turns the ``[n]`` that name a
      citation into its links, by the rule of ``"html"``. The citations are not written here: the
      page receives them as data (``POST /ask``) and lists them itself.

    Whichever the format, the numbers shown are the same: those of the markers that name a citation.

    A worked example, one answer in the three formats:

    >>> from types import SimpleNamespace as C
    >>> cites = [C(n=1, id="plus/support.md#c0", doc="plus/support.md", heading="Phone <24/7>",
    ...            snippet="Call **+1 (888) 555-0199**")]
    >>> answer = "Call **+1 (888) 555-0199** [1], not [7] <script>."
    >>> print(render_cited(answer, cites, "text"))
    Call **+1 (888) 555-0199** [1], not [7] <script>.
    <BLANKLINE>
    [1] plus/support.md#c0  (Phone <24/7>)
    >>> print(render_cited(answer, cites, "html", anchor="q"))   # doctest: +NORMALIZE_WHITESPACE
    Call **+1 (888) 555-0199** <sup><a href="#q-1">[1]</a></sup>, not [7] &lt;script&gt;.<div
    style="margin-top:6px"><details id="q-1"><summary>[1] <code>plus/support.md#c0</code> <small>Phone
    &lt;24/7&gt;</small></summary><pre style="white-space:pre-wrap;font-size:85%">Call **+1 (888)
    555-0199**</pre></details></div>
    >>> render_cited(answer, cites, "markdown")
    '<p>Call <strong>+1 (888) 555-0199</strong> [1], not [7] &lt;script&gt;.</p>\\n'
    """
    citations = list(citations)
    if fmt == "text":
        return "\n".join([text, "", *(f"[{c.n}] {c.id}  ({c.heading})" for c in citations)])
    if fmt == "markdown":
        hidden = MARKER.sub(lambda m: f"{_OPEN}{m.group(1)}{_CLOSE}", text.replace(_OPEN, "").replace(_CLOSE, ""))
        return markdown_html(hidden).replace(_OPEN, "[").replace(_CLOSE, "]")
    if fmt != "html":
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    texts = texts or {}
    cited = {str(c.n) for c in citations}     # as the citation check and the page's script read them: [01] is not [1]
    anchor = _escape(anchor)

    def marker(m: re.Match) -> str:
        n = m.group(1)
        return f'<sup><a href="#{anchor}-{n}">[{n}]</a></sup>' if n in cited else m.group(0)

    body = MARKER.sub(marker, _escape(text))
    items = "".join(
        f'<details id="{anchor}-{c.n}"><summary>[{c.n}] <code>{_escape(c.id)}</code> '
        f'<small>{_escape(c.heading)}</small></summary>'
        f'<pre style="white-space:pre-wrap;font-size:85%">{_escape(texts.get(c.id, c.snippet))}</pre></details>'
        for c in citations)
    return f'{body}<div style="margin-top:6px">{items}</div>'
