"""Sources written in Markdown, as safe HTML and as plain text: a chunk, an answer, a citation's snippet.

Sources written in Markdown (a ``.md`` document, such as the help center's pages) are rendered by
markdown-it with raw HTML off (``markdown_html``); their snippets are shown as plain text without
their markup (``markdown_text``). The Python docs' ``.txt`` pages use reST markup such as
``*ensure_ascii*``, which is not Markdown (``is_markdown`` tells them apart). It sits in the bottom
layer with the citation renderer that uses it (``raglab.base.cited``); the web app's use of both is
in ``raglab.surfaces.web.markdown``.
"""
from __future__ import annotations

import re

from markdown_it import MarkdownIt

MARKDOWN_SUFFIX = ".md"
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:", re.IGNORECASE)
_LINK_SCHEMES = ("http:", "https:", "mailto:")


def _markdown() -> MarkdownIt:
    """CommonMark plus tables, raw HTML off (a tag in the source is shown as text, escaped), and links
    kept only to http, https, mailto or a relative address (on top of markdown-it's own check, which
    already refuses ``javascript:``, ``vbscript:``, ``file:`` and most ``data:``)."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    builtin = md.validateLink

    def validate(url: str) -> bool:
        url = url.strip()
        return builtin(url) and (not _SCHEME.match(url) or url.lower().startswith(_LINK_SCHEMES))

    md.validateLink = validate
    return md


_MD = _markdown()


def is_markdown(doc: str) -> bool:
    """Whether a document's source is Markdown: its id ends with ``.md``."""
    return doc.lower().endswith(MARKDOWN_SUFFIX)


def markdown_html(text: str) -> str:
    """``text`` (Markdown) as HTML that the page can show as it is.

    markdown-it renders it with raw HTML off, so a tag in the source comes out escaped, and a link
    whose address is not http, https, mailto or relative stays text. On top of that, for the page's
    content security policy (no inline styles, nothing loaded from elsewhere): a table cell's
    alignment is a class (``align-right``) and not a ``style`` attribute, an image is its alt text,
    and a link gets ``rel="noopener noreferrer"``.

    >>> markdown_html("**3 business days** <script>alert(1)</script> [x](javascript:alert(1))")
    '<p><strong>3 business days</strong> &lt;script&gt;alert(1)&lt;/script&gt; [x](javascript:alert(1))</p>\\n'
    """
    env: dict = {}
    tokens = _MD.parse(text, env)
    for token in tokens:
        if token.type in ("th_open", "td_open"):
            style = str(token.attrs.pop("style", ""))
            if style.startswith("text-align:"):
                token.attrSet("class", "align-" + style.partition(":")[2])
        for child in token.children or ():
            if child.type == "image":                   # the alt text, escaped as any text
                child.type, child.tag, child.attrs, child.children = "text", "", {}, None
            elif child.type == "link_open":
                child.attrSet("rel", "noopener noreferrer")
    return _MD.renderer.render(tokens, _MD.options, env)


def markdown_text(text: str) -> str:
    r"""What a reader sees of a Markdown excerpt, as plain text: the words without their markup
    (emphasis stars, heading hashes, table pipes, link targets), for a citation's snippet under the
    answer, which is cut mid-sentence, where rendered Markdown would often be unbalanced.

    >>> markdown_text("## Refund timeline\n| days | what |\n|---|---|\n| **3 business days** | [refund](/r) |")
    'Refund timeline days what 3 business days refund'
    """
    words = []
    for token in _MD.parse(text):
        for child in token.children or ():
            if child.type in ("text", "code_inline"):
                words.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                words.append(" ")
        if token.type == "inline" or token.type.endswith("_close"):
            words.append(" ")
    return " ".join("".join(words).split())
