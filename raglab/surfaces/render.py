"""HTML for answers: citation markers that open the cited chunk, readable in a static rendering too."""
from __future__ import annotations

import html
import re

from raglab.base.cited import render_cited
from raglab.book.assistant import Answer


def answer_html(answer: Answer, chunk_text: dict[str, str]) -> str:
    """The answer with each ``[n]`` linked to a collapsible copy of the cited chunk (``<details>``).

    ``chunk_text`` maps chunk ids to their text (only the cited chunks are shown). The answer and
    its citations are written by the one citation renderer (``raglab.base.cited.render_cited``, its
    ``"html"`` format); this adds the frame, the refusal and the generator.
    """
    key = re.sub(r"\W+", "-", answer.question.lower())[:40]
    if answer.refused:
        return (f'<div style="border-left:4px solid #c44e52;padding:4px 10px"><b>{html.escape(answer.answer)}</b>'
                f'<br><small>refused: {html.escape(str(answer.reason))}; evidence strength {answer.evidence:.3f}</small></div>')
    cited = render_cited(answer.answer, answer.citations, "html", anchor=key, texts=chunk_text)
    return (f'<div style="border-left:4px solid #4c72b0;padding:4px 10px">{cited}'
            f'<small>generator: {html.escape(answer.generator)}</small></div>')
