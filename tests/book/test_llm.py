"""The model call (raglab/book/llm.py) with a fake OpenAI client, no server: the messages ``OpenAIGenerator`` sends
are the book's prompt (``raglab.book.prompt.build_messages``) with its extra instruction, at temperature 0 with
its token limit; a connection error is retried with the backoff written out here (0.5 s, then doubled) and then
is a ``GeneratorUnavailable`` naming the server; ``ScriptedGenerator`` and ``Generation`` hold what they are given.
The narrowing of the sources a model reads is tested with the extractive selection in
tests/stages/test_extractive.py."""
from types import SimpleNamespace

import httpx
import openai
import pytest

import raglab.book.llm as llm
from raglab.book.chunking import Chunk
from raglab.book.llm import Generation, GeneratorUnavailable, OpenAIGenerator, ScriptedGenerator
from raglab.book.prompt import Source, build_messages
from raglab.book.refusal import REFUSAL

URL = "http://127.0.0.1:9/v1"
QUESTION = "How long do I have to return a parcel?"


def _source(n, text, doc="returns.md"):
    return Source(n, Chunk(f"{doc}#{n}", doc, ("Returns",), 0, len(text), text, text, ("public",), "headings"))


SOURCES = [_source(1, "You can return a parcel within 30 days."),
           _source(2, "Refunds <b>arrive</b> within a week.", doc="refunds.md")]


def connection_error():
    return openai.APIConnectionError(request=httpx.Request("POST", f"{URL}/chat/completions"))


def timeout_error():
    return openai.APITimeoutError(request=httpx.Request("POST", f"{URL}/chat/completions"))


class FakeClient:
    """Stands in for ``openai.OpenAI``: ``chat.completions.create`` records its keyword arguments and plays
    ``replies`` in turn (the last one again when they run out): an exception is raised, a text is answered."""

    def __init__(self, *replies, usage=None):
        self.replies, self.usage, self.calls = list(replies), usage, []
        self.chat = self.completions = self

    def create(self, **kwargs):
        self.calls.append(kwargs)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=reply))], usage=self.usage)


def generator(*replies, usage=None, **settings) -> OpenAIGenerator:
    gen = OpenAIGenerator(base_url=URL, model=settings.pop("model", "m"), **settings)
    gen.client = FakeClient(*replies, usage=usage)
    return gen


@pytest.fixture
def sleeps(monkeypatch):
    """The waits between tries, recorded instead of slept."""
    waited = []
    monkeypatch.setattr(llm.time, "sleep", waited.append)
    return waited


# ---------------------------------------------------------------- what is sent

def test_the_messages_sent_are_the_books_prompt_with_the_extra_instruction():
    gen = generator("Within 30 days [1].", extra_instruction="Answer in one sentence.")
    out = gen.generate(QUESTION, SOURCES, refusal="I cannot tell.")
    want = build_messages(QUESTION, SOURCES, "I cannot tell.", "Answer in one sentence.")
    assert gen.client.calls[0]["messages"] == want and out.messages == want
    assert want[0]["content"].endswith("\nAnswer in one sentence.") and "I cannot tell." in want[0]["content"]
    gen.generate(QUESTION, SOURCES)                                  # the book's refusal by default
    assert gen.client.calls[1]["messages"] == build_messages(QUESTION, SOURCES, REFUSAL, "Answer in one sentence.")


def test_the_model_sees_only_the_visible_text_of_each_source():
    def visible(source):
        return source.chunk.text.split(" within")[0]

    gen = generator("ok", visible=visible)
    gen.generate(QUESTION, SOURCES)
    assert gen.client.calls[0]["messages"] == build_messages(QUESTION, SOURCES, REFUSAL, None, visible)
    assert "30 days" not in gen.client.calls[0]["messages"][1]["content"]


def test_temperature_zero_the_token_limit_the_model_and_the_extra_body_are_passed():
    gen = generator("ok", model="small-model", max_tokens=120, extra_body={"top_k": 1})
    gen.generate(QUESTION, SOURCES)
    call = gen.client.calls[0]
    assert (call["model"], call["temperature"], call["max_tokens"], call["extra_body"]) == ("small-model", 0, 120, {"top_k": 1})
    default = generator("ok")
    default.generate(QUESTION, SOURCES)
    assert default.client.calls[0]["max_tokens"] == 300 and default.client.calls[0]["extra_body"] is None


def test_the_client_points_at_the_base_url_and_leaves_the_retries_to_the_generator():
    gen = OpenAIGenerator(base_url=URL, model="m", timeout=7.5)
    assert str(gen.client.base_url).rstrip("/") == URL and gen.client.timeout == 7.5 and gen.client.max_retries == 0
    assert gen.client.api_key == "unused-by-local-servers"
    assert OpenAIGenerator(base_url=URL, model="m", api_key="k-123").client.api_key == "k-123"
    assert gen.name == "openai:m" and gen.base_url == URL


# ---------------------------------------------------------------- what comes back

def test_the_generation_holds_the_text_the_usage_and_the_generators_name():
    usage = SimpleNamespace(model_dump=lambda: {"prompt_tokens": 212, "completion_tokens": 9, "total_tokens": 221})
    out = generator("Within 30 days [1].", usage=usage).generate(QUESTION, SOURCES)
    assert (out.text, out.generator, out.usage, out.refusal) == (
        "Within 30 days [1].", "openai:m", {"prompt_tokens": 212, "completion_tokens": 9, "total_tokens": 221}, None)


def test_no_usage_is_an_empty_dict_and_no_content_an_empty_text():
    out = generator(None).generate(QUESTION, SOURCES)
    assert out.text == "" and out.usage == {}


# ---------------------------------------------------------------- an unreachable server

def test_a_connection_error_is_retried_with_backoff_then_is_generator_unavailable(sleeps):
    gen = generator(connection_error(), retries=3)
    with pytest.raises(GeneratorUnavailable, match=r"cannot reach the model server at http://127\.0\.0\.1:9/v1 "
                                                   r"\(APIConnectionError\) after 4 tries") as caught:
        gen.generate(QUESTION, SOURCES)
    assert len(gen.client.calls) == 4 and sleeps == [0.5, 1.0, 2.0]
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)
    assert "raglab llm serve" in str(caught.value) and "LLM_BASE_URL" in str(caught.value)


def test_a_timeout_and_a_lost_connection_then_an_answer_return_the_answer(sleeps):
    gen = generator(timeout_error(), connection_error(), "Within 30 days [1].", retries=3)
    assert gen.generate(QUESTION, SOURCES).text == "Within 30 days [1]."
    assert len(gen.client.calls) == 3 and sleeps == [0.5, 1.0]


def test_with_no_retries_one_try_and_no_wait(sleeps):
    gen = generator(timeout_error(), retries=0)
    with pytest.raises(GeneratorUnavailable, match=r"at http://127\.0\.0\.1:9/v1 \(APITimeoutError\) after 1 try:"):
        gen.generate(QUESTION, SOURCES)
    assert len(gen.client.calls) == 1 and sleeps == []


def test_other_errors_are_not_retried(sleeps):
    gen = generator(RuntimeError("bad request"), "never reached", retries=3)
    with pytest.raises(RuntimeError, match="bad request"):
        gen.generate(QUESTION, SOURCES)
    assert len(gen.client.calls) == 1 and sleeps == []


def test_a_missing_model_name_is_a_value_error():
    for model in (None, ""):
        with pytest.raises(ValueError, match="OpenAIGenerator needs a model name"):
            OpenAIGenerator(base_url=URL, model=model)


# ---------------------------------------------------------------- the scripted generator, the record

def test_the_scripted_generator_returns_its_text_whatever_the_sources():
    scripted = ScriptedGenerator("Returns are accepted within 30 days [99].")
    for sources in (SOURCES, [], SOURCES[:1]):
        assert scripted.generate("Anything?", sources, refusal="No.") == \
            Generation("Returns are accepted within 30 days [99].", "scripted")


def test_a_generation_defaults_to_no_usage_no_refusal_and_no_messages():
    first, second = Generation("text", "g"), Generation("text", "g")
    assert (first.usage, first.refusal, first.messages) == ({}, None, None)
    first.usage["total_tokens"] = 3
    assert second.usage == {}                                        # each its own dict
