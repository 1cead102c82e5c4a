"""HTML for answers: citation markers that open the cited chunk, readable in a static rendering too."""
from __future__ import annotations

import html
import re

from raglab.book.assistant import Answer


def answer_html(answer: Answer, chunk_text: dict[str, str]) -> str:
    """The answer with each ``[n]`` linked to a collapsible copy of the cited chunk (``<details>``).

    ``chunk_text`` maps chunk ids to their text (only the cited chunks are shown).
    """
    key = re.sub(r"\W+", "-", answer.question.lower())[:40]
    if answer.refused:
        return (f'<div style="border-left:4px solid #c44e52;padding:4px 10px"><b>{html.escape(answer.answer)}</b>'
                f'<br><small>refused: {html.escape(str(answer.reason))}; evidence strength {answer.evidence:.3f}</small></div>')
    cited = {c.n: c for c in answer.citations}

    def marker(m: re.Match) -> str:
        n = int(m.group(1))
        return f'<sup><a href="#{key}-{n}">[{n}]</a></sup>' if n in cited else m.group(0)

    body = re.sub(r"\[(\d+)\]", marker, html.escape(answer.answer))
    items = "".join(
        f'<details id="{key}-{c.n}"><summary>[{c.n}] <code>{html.escape(c.id)}</code> '
        f'<small>{html.escape(c.heading)}</small></summary>'
        f'<pre style="white-space:pre-wrap;font-size:85%">{html.escape(chunk_text.get(c.id, c.snippet))}</pre></details>'
        for c in answer.citations)
    return (f'<div style="border-left:4px solid #4c72b0;padding:4px 10px">{body}'
            f'<div style="margin-top:6px">{items}</div><small>generator: {html.escape(answer.generator)}</small></div>')
