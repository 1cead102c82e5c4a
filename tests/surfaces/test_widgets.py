"""Notebook widgets (raglab/surfaces/widgets.py, their HTML in raglab/surfaces/widget_html.py): the chunk
map's HTML against the chunker and transformers' tokenizer, escaping, the explorer's controls, and the ask
box over the help-center assistant."""
from html.parser import HTMLParser

import pytest

from raglab.book.assistant import Answer, Assistant, Citation
from raglab.book.chunking import ChunkSettings, chunk_document
from raglab.book.documents import make_document
from raglab.answerer.extractive import ExtractiveGenerator
from raglab.book.llm import ScriptedGenerator
from raglab.book.refusal import REFUSAL
from raglab.guards.guard import Guard
from raglab.guards.detector import default_detector
from raglab.infra.traces import Tracer
from raglab.infra.tokenizer import load_tokenizer
from raglab.surfaces import widget_html, widgets
from raglab.surfaces.widget_html import answer_widget_html, chunk_html
from raglab.surfaces.widgets import ask_box, chunk_explorer, default_strategies

VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}
ANSWERED = "How many days do I have to return an item?"  # answered in tests/test_app.py too
PREMIUM_Q = "What is the Parcelo Plus Concierge phone number?"
UNANSWERABLE = "Does Parcelo offer gift wrapping for orders?"


class Node:
    """A parsed element: tag, attributes, children (nodes and strings, entities decoded)."""

    def __init__(self, tag, attrs, parent=None):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    @property
    def classes(self):
        return (self.attrs.get("class") or "").split()

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find(self, pred):
        for c in self.children:
            if isinstance(c, Node):
                if pred(c):
                    yield c
                yield from c.find(pred)


def parse(markup):
    """A small DOM of an HTML fragment (fails on a misnested end tag)."""
    root = Node("root", {})

    class Builder(HTMLParser):
        cur = root

        def handle_starttag(self, tag, attrs):
            node = Node(tag, attrs, self.cur)
            self.cur.children.append(node)
            if tag not in VOID:
                self.cur = node

        def handle_endtag(self, tag):
            assert self.cur.tag == tag, f"</{tag}> closes <{self.cur.tag}>"
            self.cur = self.cur.parent

        def handle_data(self, data):
            self.cur.children.append(data)

    b = Builder()
    b.feed(markup)
    b.close()
    assert b.cur is root, "unclosed element"
    return root


def by_class(root, name):
    return list(root.find(lambda n: name in n.classes))


def segments(root):
    """The ``rl-seg`` spans of the chunk map as (text, chunk positions)."""
    (pre,) = by_class(root, "rl-doc")
    return [(s.text(), [int(i) for i in s.attrs["data-chunks"].split()]) for s in by_class(pre, "rl-seg")]


def doc_named(docs, doc_id):
    return next(d for d in docs if d.id == doc_id)


# ---------------------------------------------------------------- chunk map

@pytest.mark.parametrize("label", list(default_strategies()))
@pytest.mark.parametrize("limit", [None, 2500])
def test_chunk_html_cuts_exactly_at_the_chunk_boundaries(python_docs, label, limit):
    doc = doc_named(python_docs, "library/json.txt")
    chunks = chunk_document(doc, default_strategies()[label], tokenizer=load_tokenizer())
    root = parse(chunk_html(doc, chunks, limit))
    shown = len(doc.text) if limit is None else limit
    segs = segments(root)
    assert "".join(t for t, _ in segs) == doc.text[:shown]           # every character, once, in order
    cuts, pos = [0], 0
    for text, cover in segs:
        a, b = pos, pos + len(text)
        assert cover == [i for i, c in enumerate(chunks) if c.start <= a and b <= c.end]
        assert a < b
        pos = b
        cuts.append(b)
    assert cuts == sorted({0, shown} | {p for c in chunks for p in (c.start, c.end) if p <= shown})
    starting = [i for i, c in enumerate(chunks) if c.start < shown]
    assert [int(t.attrs["data-chunk"]) for t in by_class(root, "rl-tag")] == starting
    assert [r.attrs["data-chunk-id"] for r in by_class(root, "rl-row")] == [chunks[i].id for i in starting]
    assert f"{len(chunks)} chunks" in by_class(root, "rl-summary")[0].text()
    if limit is None:
        assert len(starting) == len(chunks) and not by_class(root, "rl-note")
    else:
        assert f"first 2,500 of {len(doc.text):,} characters" in by_class(root, "rl-note")[0].text()
    if label.startswith("words"):   # 30 words of overlap: shaded apart from single-chunk text
        styles = {len(cover): s.attrs["style"] for s, (_, cover) in zip(by_class(root, "rl-seg"), segs)}
        assert styles[2] not in (styles[1], f"background:{widget_html.CHUNK_COLOURS[1]}")


def test_over_limit_chunks_match_the_transformers_tokenizer(python_docs):
    from transformers import AutoTokenizer

    from raglab.infra.packaged_models import minilm_path

    doc = doc_named(python_docs, "library/json.txt")
    chunks = chunk_document(doc, ChunkSettings("headings", prefix=True))
    ref = AutoTokenizer.from_pretrained(str(minilm_path()))
    expected = {c.id: len(ref(c.indexed_text, truncation=False)["input_ids"]) for c in chunks}
    root = parse(chunk_html(doc, chunks, None))
    rows = by_class(root, "rl-row")
    assert {r.attrs["data-chunk-id"]: int(r.attrs["data-tokens"]) for r in rows} == expected
    over = {cid for cid, n in expected.items() if n > 256}
    assert 0 < len(over) < len(chunks)  # the check has both kinds to tell apart
    assert {r.attrs["data-chunk-id"] for r in rows if "rl-over" in r.classes} == over
    assert {chunks[int(t.attrs["data-chunk"])].id for t in by_class(root, "rl-tag") if "rl-over" in t.classes} == over
    assert f"{len(over) / len(chunks):.0%} over 256 tokens ({len(over)})" in by_class(root, "rl-summary")[0].text()


def test_document_text_is_escaped_and_stays_inert():
    text = ("# Evil <script>alert('x')</script>\n\nText with <b>tags</b> & \"quotes\" <img src=x onerror=alert(1)>.\n\n"
            "## Sub </pre></span>\n\n" + "More words here. " * 40)
    doc = make_document('evil"<i>.md', text)
    for settings in default_strategies().values():
        markup = chunk_html(doc, chunk_document(doc, settings), None)
        assert "<script" not in markup.lower() and "<img" not in markup and "<b>tags" not in markup
        root = parse(markup)  # the injected end tags would have unbalanced the tree
        assert not list(root.find(lambda n: n.tag in ("script", "img", "i")))
        assert "".join(t for t, _ in segments(root)) == text
        assert all(r.attrs["data-chunk-id"].startswith('evil"<i>.md#') for r in by_class(root, "rl-row"))


# ---------------------------------------------------------------- explorer widget

def summary_of(box):
    return by_class(parse(box.view.value), "rl-summary")[0].text()


def test_explorer_controls_update_the_view(python_docs):
    docs = [d for d in python_docs if d.id in ("library/bisect.txt", "library/glob.txt", "library/json.txt")]
    box = chunk_explorer(docs, doc="library/bisect.txt", static=False, limit_chars=1500)
    first = doc_named(docs, "library/bisect.txt")
    assert box.doc_select.value == first.id and box.strategy_select.value == "words 150/30"
    assert f"library/bisect.txt · words 150/30: {len(chunk_document(first))} chunks" in summary_of(box)

    box.strategy_select.value = "chars 500/80"
    assert box.size_slider.value == 500 and box.size_slider.description == "characters"
    n = len(chunk_document(first, ChunkSettings("chars")))
    assert f"chars 500/80: {n} chunks" in summary_of(box)
    assert box.view.value == chunk_html(first, chunk_document(first, ChunkSettings("chars")), 1500,
                                        label="chars 500/80")

    box.doc_select.value = "library/glob.txt"
    glob = doc_named(docs, "library/glob.txt")
    assert f"library/glob.txt · chars 500/80: {len(chunk_document(glob, ChunkSettings('chars')))} chunks" in summary_of(box)
    assert "".join(t for t, _ in segments(parse(box.view.value))) == glob.text[:1500]

    box.size_slider.value = 1000  # the overlap keeps its proportion: 80/500 of 1000
    assert f"chars 1000/160: {len(chunk_document(glob, ChunkSettings('chars', 1000, 160)))} chunks" in summary_of(box)


def test_static_snapshot_and_plain_text_fallback(python_docs, monkeypatch):
    shown = []
    monkeypatch.setattr(widgets, "display", shown.append)
    box = chunk_explorer(python_docs[:3], strategies=[ChunkSettings("chars", 300, 50)], limit_chars=800)
    (snapshot,) = shown
    assert box.view.value in snapshot.data and "Static snapshot" in snapshot.data
    assert box.size_slider.value == 300 and list(box.strategy_select.options) == ["chars 300/50"]
    bundle = box._repr_mimebundle_()
    assert "needs a running Jupyter kernel" in bundle["text/plain"]  # what static HTML shows for the widget

    class Stub:  # an ask box with no initial question asks nothing
        def ask(self, *a):
            raise RuntimeError("the model server <is> down")

    shown.clear()
    ask = ask_box(Stub())
    assert len(shown) == 2 and "Ask box" in shown[0].data and ask.answer is None
    assert shown[1] is ask           # the live box is displayed by ask_box itself: no empty Out[] after it
    assert chunk_explorer(python_docs[:1], static=False) and len(shown) == 2
    ask.button.click()  # an empty question is not sent
    assert "Type a question first" in ask.output.value
    ask.question.value = "anything"
    ask.button.click()  # an error shows in the box (a callback's exception would vanish) and the button recovers
    assert "error: RuntimeError: the model server &lt;is&gt; down" in ask.output.value and not ask.button.disabled


# ---------------------------------------------------------------- answers and the ask box

@pytest.fixture(scope="session")
def hc_assistant_w(retriever, embedder, workdir):
    """The help-center assistant with its calibrated threshold and the offline generator."""
    return Assistant(retriever, ExtractiveGenerator(embedder), threshold=0.669,
                     guard=Guard(default_detector(embedder)), trace=Tracer(workdir / "traces" / "widgets.jsonl"))


def check_citations_open_their_chunks(markup, answer, index):
    root = parse(markup)
    ids = [n.attrs["id"] for n in root.find(lambda n: "id" in n.attrs)]
    assert len(ids) == len(set(ids))
    details = {n.attrs["id"]: n for n in root.find(lambda n: n.tag == "details" and "id" in n.attrs)}
    markers = list(root.find(lambda n: n.tag == "a" and n.attrs.get("href", "").startswith("#")))
    assert sorted({m.text() for m in markers}) == sorted({f"[{c.n}]" for c in answer.citations})
    by_n = {c.n: c for c in answer.citations}
    for m in markers:
        target = details[m.attrs["href"][1:]]
        cited = by_n[int(m.text().strip("[]"))]
        (code,) = target.find(lambda n: n.tag == "code")
        (pre,) = target.find(lambda n: n.tag == "pre")
        assert code.text() == cited.id
        assert pre.text() == index.chunks[index.row_of[cited.id]].text
    return root


def test_ask_box_answers_with_citations_that_open_the_chunks(hc_assistant_w, index):
    box = ask_box(hc_assistant_w, static=False)
    box.question.value = ANSWERED
    box.button.click()
    answer = box.answer
    assert answer.question == ANSWERED and not answer.refused and answer.citations
    assert "days" in answer.answer
    root = check_citations_open_their_chunks(box.output.value, answer, index)
    (div,) = by_class(root, "rl-answer")
    assert div.attrs["data-refused"] == "false" and not by_class(root, "rl-refused")
    assert f"evidence strength {answer.evidence:.3f} (≥ refusal threshold 0.669)" in by_class(root, "rl-evidence")[0].text()
    items = list(by_class(root, "rl-retrieved")[0].find(lambda n: n.tag == "li"))
    assert [li.find(lambda n: n.tag == "code").__next__().text() for li in items] == [r["id"] for r in answer.retrieved]
    assert not box.button.disabled


def test_ask_box_shows_a_refusal_as_a_refusal(hc_assistant_w):
    box = ask_box(hc_assistant_w, static=False)
    box.question.value = UNANSWERABLE
    box.button.click()
    assert box.answer.refused and box.answer.reason == "weak-evidence"
    root = parse(box.output.value)
    assert by_class(root, "rl-answer")[0].attrs["data-refused"] == "true"
    assert by_class(root, "rl-refused")[0].text() == "refused: weak-evidence"
    assert "below the refusal threshold" in by_class(root, "rl-reason")[0].text()
    assert REFUSAL in root.text() and "(< refusal threshold 0.669)" in root.text()
    assert not list(root.find(lambda n: n.tag in ("details", "a")))  # nothing is cited


def test_a_rejected_citation_is_named(retriever, workdir):
    scripted = Assistant(retriever, ScriptedGenerator("Returns are accepted within 30 days [99]."), threshold=0.0,
                         guard=Guard(), trace=Tracer(workdir / "traces" / "widgets.jsonl"))
    box = ask_box(scripted, static=False)
    box.question.value = "How long do I have to return an item?"
    box.button.click()
    root = parse(box.output.value)
    assert by_class(root, "rl-refused")[0].text() == "refused: invalid-citation"
    assert "not retrieved for this question [99]" in by_class(root, "rl-reason")[0].text()


def test_initial_question_is_answered_once_and_shown_statically(hc_assistant_w, index, monkeypatch):
    shown, calls = [], []

    class Counting:
        def __getattr__(self, name):
            return getattr(hc_assistant_w, name)

        def ask(self, question, user=None):
            calls.append((question, user))
            return hc_assistant_w.ask(question, user)

    monkeypatch.setattr(widgets, "display", shown.append)
    box = ask_box(Counting(), user=("premium",), question=PREMIUM_Q)
    assert calls == [(PREMIUM_Q, ("premium",))] and box.question.value == PREMIUM_Q
    assert not box.answer.refused and "555-0199" in box.answer.answer
    snapshot, live = shown
    assert live is box                      # then the live box, displayed by ask_box itself
    check_citations_open_their_chunks(snapshot.data, box.answer, index)
    check_citations_open_their_chunks(box.output.value, box.answer, index)
    # both on one page (live notebook): every anchor still unique and pointing inside its own copy
    check_citations_open_their_chunks(snapshot.data + box.output.value, box.answer, index)


def test_answer_html_escapes_question_answer_and_chunk_text():
    evil = "<script>alert(1)</script>"
    answer = Answer(question=f"Why {evil}?", answer=f"Because {evil} [1] [7].",
                    citations=[Citation(1, 'a.md#x"><b>', "a.md", f"H {evil}", "snippet")],
                    invalid_citations=[], refused=False, reason=None,
                    retrieved=[{"id": 'a.md#x"><b>', "doc": "a.md", "score": 0.9}], generator=evil,
                    evidence=0.9, index_version="v")
    markup = answer_widget_html(answer, {'a.md#x"><b>': f"chunk {evil} text"})
    assert "<script" not in markup and "<b>" not in markup.replace("<b>Q:</b>", "").replace("<b>0.900</b>", "") \
        .replace("<b>cited [1]</b>", "")
    root = parse(markup)
    assert not list(root.find(lambda n: n.tag == "script"))
    (pre,) = root.find(lambda n: n.tag == "pre")
    assert pre.text() == f"chunk {evil} text"
    assert [a.text() for a in root.find(lambda n: n.tag == "a")] == ["[1]"]  # [7] cites nothing: left as text
    assert answer_widget_html(answer, lambda cid: None).count("snippet") == 1  # no text: the citation's snippet
