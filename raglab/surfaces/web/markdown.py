"""Sources written in Markdown, rendered to HTML for the page: a chunk, an answer with its ``[n]``
markers, and a citation's snippet as plain text.

Sources written in Markdown (a ``.md`` document, such as the help center's pages) are sent
rendered, server-side, by markdown-it with raw HTML off (``markdown_html``): ``GET /chunks/{id}`` adds
``html`` and ``POST /ask`` adds ``answer_html`` (see ``markdown_answer``); both are null for plain-text
sources (the Python docs' ``.txt`` pages use reST markup such as ``*ensure_ascii*``, which is not
Markdown). The text fields stay as they were. The rendering itself is in the bottom layer
(``raglab.base.markdown``, and ``raglab.base.cited`` for an answer's citations), shared with the
other surfaces; this module decides when the page gets it.
"""
from __future__ import annotations

from raglab.base.cited import render_cited
from raglab.base.markdown import is_markdown


def markdown_answer(answer: str, citations, refused: bool = False) -> str | None:
    """The answer's text rendered as Markdown when every source it cites is a Markdown page, else None.

    Why this design: the answer is built from the sources' text (the extractive generator quotes
    their sentences; a model writes in their style), so its markup is the sources' markup. When all
    the cited pages are Markdown, the answer is rendered here, on the server, by the one citation
    renderer in its ``"markdown"`` format (``raglab.base.cited.render_cited``: ``markdown_html``, raw
    HTML off); with one plain-text source (reST's ``*ensure_ascii*`` is not emphasis), or none
    (a refusal), it stays text. Rendering on the server keeps the page's script small and its
    content security policy as strict as it was: no Markdown library and no ``'unsafe-inline'`` in the
    browser, which copies the HTML node by node into the page through an allowlist of tags and attributes.

    The citation markers ``[n]`` stay recognisable: ``render_cited`` keeps them out of Markdown's
    sight, so Markdown can never read ``[1]`` as a link (``[1]: url`` in a model's answer stays text),
    and the page turns the ``[n]`` in the HTML's text into the same cite links as in a plain answer.
    The citation snippets of Markdown pages are shown as plain text without their markup
    (``markdown_text``): they are cut mid-sentence, where Markdown would often be unbalanced.

    >>> markdown_answer("Call **+1 (888) 555-0199**. [1]", [type("C", (), {"doc": "plus/priority-support.md"})])
    '<p>Call <strong>+1 (888) 555-0199</strong>. [1]</p>\\n'
    """
    if refused or not citations or not all(is_markdown(c.doc) for c in citations):
        return None
    return render_cited(answer, citations, "markdown")
