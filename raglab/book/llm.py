"""The model call: numbered sources and a question to any OpenAI-compatible chat endpoint.

``OpenAIGenerator`` sends the prompt of ``raglab.book.prompt`` to a server that speaks the OpenAI chat API
(llama.cpp's server with the packaged model, Ollama, a hosted provider) at temperature 0, with a timeout and
retries with backoff on connection errors, and returns a ``Generation``: the raw text and the messages it sent.
Every generator (the offline extractive one in ``raglab.answerer.extractive`` too) has the same method,
``generate(question, sources, refusal) -> Generation``. Taught in notebook 04; the endpoint a run uses comes
from the settings ``LLM_BASE_URL``, ``LLM_MODEL`` and ``LLM_API_KEY`` (``raglab.infra.endpoint``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from raglab.book.prompt import Source, build_messages, whole_text
from raglab.book.refusal import REFUSAL

DEFAULT_BASE_URL = "http://localhost:11434/v1"   # Ollama's


@dataclass
class Generation:
    """What a generator returned: the raw text, and when known the messages a model was sent (or, when it refused
    before calling one, would have been), the token usage, and why the generator refused (the stage, its number
    and the threshold). A generator with no model (offline) leaves ``messages`` None."""

    text: str
    generator: str
    usage: dict = field(default_factory=dict)
    refusal: dict | None = None
    messages: list[dict] | None = None


class GeneratorUnavailable(RuntimeError):
    """The model server cannot be reached; the message says how to start or configure one."""


def openai_client(base_url: str, api_key: str | None = None, timeout: float = 60.0, max_retries: int = 0):
    """An OpenAI-compatible client for ``base_url``; local servers accept any key. A key is never written in code."""
    from openai import OpenAI  # lazy: only with a model server

    return OpenAI(base_url=base_url, api_key=api_key or "unused-by-local-servers", timeout=timeout,
                  max_retries=max_retries)


class OpenAIGenerator:
    """Any OpenAI-compatible chat endpoint (llama.cpp's server, Ollama, a hosted provider).

    Temperature 0, a timeout, and retries with backoff on connection errors; an unreachable server is a
    ``GeneratorUnavailable`` with a clear message. ``raglab.infra.endpoint.llm_settings()`` gives the
    ``base_url``, ``model`` and ``api_key`` of the settings.
    """

    name = "openai"

    def __init__(self, base_url: str = DEFAULT_BASE_URL, model: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 3, max_tokens: int = 300, extra_instruction: str | None = None,
                 extra_body: dict | None = None, visible: Callable[[Source], str] = whole_text,
                 narrow: Callable[[str, list[Source]], tuple[list[Source], dict | None]] | None = None):
        """``visible``: the text of a source the model may see (a guard hides sentences: ``raglab.guards``);
        ``narrow``: chooses what the model reads, ``(question, sources) -> (sources, refusal)``, e.g. only the
        sentences the extractive selection chose (``raglab.answerer.extractive.ExtractiveGenerator.narrow``);
        when it refuses, the model is not called."""
        if not model:
            raise ValueError("OpenAIGenerator needs a model name (the settings' one: raglab.infra.endpoint.llm_settings())")
        self.base_url, self.model = base_url, model
        self.client = openai_client(base_url, api_key, timeout)
        self.visible, self.narrow = visible, narrow
        self.retries, self.max_tokens = retries, max_tokens
        self.extra_instruction, self.extra_body = extra_instruction, extra_body
        self.name = f"openai:{self.model}"

    def messages(self, question: str, sources: list[Source], refusal: str = REFUSAL) -> list[dict]:
        """The chat messages this generator sends for these sources (``raglab.book.prompt``)."""
        return build_messages(question, sources, refusal, self.extra_instruction, self.visible)

    def generate(self, question: str, sources: list[Source], refusal: str = REFUSAL) -> Generation:
        import openai  # lazy: only with a model server

        if self.narrow is not None:
            narrowed, refused = self.narrow(question, sources)
            if refused:        # no model call: the messages are those the whole sources would have sent
                return Generation(refusal, self.name, refusal=refused, messages=self.messages(question, sources, refusal))
            sources = narrowed
        messages = self.messages(question, sources, refusal)
        delay = 0.5
        for attempt in range(self.retries + 1):
            try:
                resp = self.client.chat.completions.create(model=self.model, messages=messages, temperature=0,
                                                           max_tokens=self.max_tokens, extra_body=self.extra_body)
                break
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                if attempt == self.retries:
                    raise GeneratorUnavailable(
                        f"cannot reach the model server at {self.base_url} ({type(exc).__name__}) after "
                        f"{self.retries + 1} {'try' if self.retries == 0 else 'tries'}: start one with `raglab llm serve`, or set LLM_BASE_URL "
                        f"and LLM_MODEL; without a server use --generator extractive") from exc
                time.sleep(delay)
                delay *= 2
        usage = resp.usage.model_dump() if getattr(resp, "usage", None) else {}
        return Generation(resp.choices[0].message.content or "", self.name, usage, messages=messages)


class ScriptedGenerator:
    """Returns fixed text whatever the sources: for tests of the checks (e.g. the [99] test)."""

    name = "scripted"

    def __init__(self, text: str):
        self.text = text

    def generate(self, question: str, sources: list[Source], refusal: str = REFUSAL) -> Generation:
        return Generation(self.text, self.name)
