"""One answer, every surface: the command line, the notebook's answers, the ask box and the web page show the
same citation numbers, linked to the same citations, because they all go through one renderer
(``raglab.base.cited.render_cited``); and a ``<script>`` in the answer or in a source's title stays text."""
import contextlib
import io
import re
from html.parser import HTMLParser
from types import SimpleNamespace
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from raglab.base.cited import FORMATS, render_cited
from raglab.book.assistant import Answer, Citation
from raglab.surfaces.cli import search
from raglab.surfaces.render import answer_html
from raglab.surfaces.web.app import ask_reply
from raglab.surfaces.widget_html import answer_widget_html

EVIL = "<script>alert(1)</script>"
WORDS = ["Refunds", "take", "3", "business", "days.", "**", "*", "_", "`", "#", "- ", "1.", ">", "|", "&", '"',
         "'", "\n", "\n\n", EVIL, "[", "]", "(x)"]
TEXTS = st.lists(st.sampled_from(WORDS) | st.integers(0, 6).map(lambda n: f"[{n}]") | st.just("[01]"),
                 max_size=30).map(" ".join)
TITLES = st.sampled_from(["Refunds", "Phone <24/7>", EVIL, 'x"><b>', "a & b"])


def answer_of(text: str, numbers: list[int], markdown: bool, titles: list[str]) -> Answer:
    doc = "returns/refunds.md" if markdown else "library/json.txt"
    citations = [Citation(n, f"{doc}#{t}{n}", doc, t, f"snippet {t} **{n}**") for n, t in zip(numbers, titles)]
    return Answer(question=f"Why {EVIL}?", answer=text, citations=citations, invalid_citations=[], refused=False,
                  reason=None, retrieved=[{"id": c.id, "doc": doc, "score": 0.5} for c in citations],
                  generator=EVIL, evidence=0.9, index_version="v")


def cited_markers(text: str, citations) -> list[str]:
    """The numbers every surface must show as citations: the ``[n]`` of the text that name one, in order."""
    numbers = {str(c.n) for c in citations}
    return [n for n in re.findall(r"\[(\d+)\]", text) if n in numbers]


class Html(HTMLParser):
    """Elements, links (their href and text) and the text outside any link of an HTML fragment."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.ids, self.links, self.loose, self._in_a = [], {}, [], [], None
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "id" in attrs:
            self.ids[attrs["id"]] = tag
        if tag == "a":
            self._in_a = [attrs.get("href"), ""]

    def handle_endtag(self, tag):
        if tag == "a" and self._in_a is not None:
            self.links.append(tuple(self._in_a))
            self._in_a = None

    def handle_data(self, data):
        if self._in_a is not None:
            self._in_a[1] += data
        else:
            self.loose.append(data)


def page_links(reply: dict) -> list[str]:
    """The cite links the page's script (``static/app.js``, ``render``) makes from ``POST /ask``'s reply: in the
    answer's HTML (or, without one, its text) every ``[n]`` outside a link whose n is a citation's number."""
    numbers = {str(c["n"]) for c in reply["citations"]}
    texts = Html(reply["answer_html"]).loose if reply["answer_html"] is not None else [reply["answer"]]
    return [n for text in texts for n in re.findall(r"\[(\d+)\]", text) if n in numbers]


def notebook_links(markup: str) -> list[str]:
    """The links of a notebook rendering, each checked to open the ``<details>`` of its own citation."""
    parsed = Html(markup)
    numbers = []
    for href, text in parsed.links:
        n = re.fullmatch(r"\[(\d+)\]", text).group(1)
        assert href.startswith("#") and href.endswith(f"-{n}") and parsed.ids[href[1:]] == "details"
        numbers.append(n)
    return numbers


def cli_lines(answer: Answer) -> list[str]:
    """What ``raglab ask`` prints for this answer (the assistant replaced by one that gives it)."""
    assistant = SimpleNamespace(ask=lambda q, user: answer, generator=None, threshold=0.5)
    args = SimpleNamespace(query=answer.question, user=None, json=False)
    out = io.StringIO()
    with mock.patch.object(search, "assistant_for", lambda args, build: assistant), \
            contextlib.redirect_stdout(out):
        assert search.cmd_ask(args) == 0
    return out.getvalue().rstrip("\n").split("\n")


@settings(max_examples=150, deadline=None)
@given(text=TEXTS, numbers=st.lists(st.integers(1, 5), unique=True, max_size=4), markdown=st.booleans(),
       titles=st.lists(TITLES, min_size=4, max_size=4))
def test_every_surface_shows_the_same_citations(text, numbers, markdown, titles):
    answer = answer_of(text, numbers, markdown, titles)
    want = cited_markers(text, answer.citations)
    ns = [str(n) for n in numbers]

    reply = ask_reply(answer)                                               # the web page
    assert page_links(reply) == want and [str(c["n"]) for c in reply["citations"]] == ns
    assert (reply["answer_html"] is not None) == (markdown and bool(numbers))

    notebook = answer_html(answer, {})                                      # notebook 04's answers
    widget = answer_widget_html(answer, {}, anchor="box")                   # the ask box
    for markup in (notebook, widget):
        assert notebook_links(markup) == want
        assert [k.rsplit("-", 1)[1] for k, tag in Html(markup).ids.items() if tag == "details"] == ns

    lines = cli_lines(answer)                                               # raglab ask
    shown = lines[:len(text.split("\n"))]
    assert "\n".join(shown) == text and cited_markers("\n".join(shown), answer.citations) == want
    sources = lines[len(shown) + 1:len(shown) + 1 + len(numbers)]
    assert [re.match(r"\[(\d+)\] ", line).group(1) for line in sources] == ns

    for markup in (notebook, widget, reply["answer_html"] or ""):            # every HTML surface escapes
        assert "<script" not in markup and "script" not in Html(markup).tags


def test_script_in_the_answer_and_in_a_source_title_stays_text():
    answer = answer_of(f"Refunds {EVIL} take **3 days** [1].", [1], True, [EVIL])
    answer.citations[0] = Citation(1, f'{EVIL}"><b>', f"{EVIL}.md", EVIL, EVIL)
    reply = ask_reply(answer)
    assert reply["answer_html"] == ("<p>Refunds &lt;script&gt;alert(1)&lt;/script&gt; take <strong>3 days</strong> "
                                    "[1].</p>\n")
    for markup in (answer_html(answer, {}), answer_widget_html(answer, {}), render_cited(answer.answer,
                                                                                          answer.citations, "html")):
        parsed = Html(markup)
        assert "<script" not in markup and "script" not in parsed.tags and "&lt;script&gt;" in markup
        assert "&quot;&gt;&lt;b&gt;" in markup                                  # the id's quote and tag: escaped
        assert f"{EVIL}\"><b>" in "".join(parsed.loose)                         # shown as text, whole
    assert f"[1] {EVIL}\"><b>  ({EVIL})" in cli_lines(answer)                  # a terminal shows it as it is


def test_formats_are_named():
    assert FORMATS == ("text", "html", "markdown")
    with pytest.raises(ValueError, match="unknown format 'rst'"):
        render_cited("x [1]", [], "rst")
