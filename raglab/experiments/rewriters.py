"""The rewriters: a question into sub-queries behind one interface (``rewrite(question) -> list[str]``).

- ``RuleRewriter``: ``raglab.experiments.rewrite_rules.rule_rewrite``, deterministic and offline.
- ``LLMRewriter``: the configured OpenAI-compatible model (``LLM_BASE_URL``, ``LLM_MODEL``,
  ``LLM_API_KEY``; temperature 0) asked for at most three queries, one a line; when the server
  cannot be reached it falls back to the rules and says so.
- ``make_rewriter``: one of them by name.
"""
from __future__ import annotations

import re

from raglab.base import config
from raglab.book.llm import openai_client
from raglab.experiments.rewrite_rules import rule_rewrite
from raglab.infra.endpoint import llm_settings


class RuleRewriter:
    """``rule_rewrite`` behind the rewriter interface (``rewrite(question) -> list[str]``)."""

    name = "rules"
    note = None

    def __init__(self, max_queries: int = 5):
        self.max_queries = max_queries
        self.last_ran = self.name

    def rewrite(self, question: str) -> list[str]:
        return rule_rewrite(question, self.max_queries)

    __call__ = rewrite


REWRITE_INSTRUCTIONS = """You rewrite questions into search queries for a documentation search engine. Do not answer the question.
If the question asks several things, write one standalone search query for each part; if it asks one thing, write it once.
Each query must make sense on its own: replace words such as "it", "that" or "instead" by what they refer to.
Write at most {n} queries, one per line, with no numbering, no quotes and no other text."""

_NUMBERING = re.compile(r"^\s*(?:[-*\u2022>]+|\(?\d{1,2}\s*[.):\]]|\(?[a-z][.)]|(?:sub-?)?query\s*\d*\s*[:.)\-]|q\d+\s*[:.)\-])\s*",
                        re.I)


def parse_queries(text: str, question: str, max_queries: int = 3) -> list[str]:
    """A model's reply as clean queries: numbering, bullets and quotes dropped, empty lines, code fences,
    preambles ("Here are the queries:") and repeats left out, at most ``max_queries``; ``[question]`` if
    none is left.

    >>> parse_queries("Here are the queries:\\n1. What is a deque?\\n2) What is a deque?\\n- \\"deque speed\\"", "Q?")
    ['What is a deque?', 'deque speed']
    >>> parse_queries("  \\n", "Q?")
    ['Q?']
    """
    out: list[str] = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith(("```", "~~~")):   # a code fence and its language tag are not queries
            continue
        for _ in range(2):   # "1. - query" and the like
            line = _NUMBERING.sub("", line).strip()
        line = line.strip("\"'`*_ \t").strip()
        if not line or line.endswith(":") or not re.search(r"\w", line):
            continue
        key = " ".join(line.lower().rstrip("?.!").split())
        if key not in (" ".join(o.lower().rstrip("?.!").split()) for o in out):
            out.append(" ".join(line.split()))
        if len(out) == max_queries:
            break
    return out or [question]


class LLMRewriter:
    """Sub-queries from the configured OpenAI-compatible model, with the settings of
    ``raglab.book.llm.OpenAIGenerator`` (``LLM_BASE_URL``, ``LLM_MODEL``, ``LLM_API_KEY``), temperature 0.

    When the server cannot be reached (or does not answer within ``timeout``) the rules answer instead:
    ``last_ran`` becomes ``"rules (fallback from llm:MODEL)"``, ``note`` says why, and this rewriter does
    not ask the server again.
    """

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, retries: int = 1, max_queries: int = 3, max_tokens: int = 100):
        endpoint = llm_settings(base_url, model, api_key)
        self.base_url, self.model = endpoint["base_url"], endpoint["model"]
        self.client = openai_client(self.base_url, endpoint["api_key"], timeout, retries)
        self.max_queries, self.max_tokens, self.timeout = max_queries, max_tokens, timeout
        self.name = f"llm:{self.model}"
        self.note: str | None = None
        self.last_ran = self.name
        self.last_raw = ""

    def messages(self, question: str) -> list[dict]:
        return [{"role": "system", "content": REWRITE_INSTRUCTIONS.format(n=self.max_queries)},
                {"role": "user", "content": question}]

    def rewrite(self, question: str) -> list[str]:
        import openai  # lazy: only with a model server

        if self.note is None:
            try:
                resp = self.client.chat.completions.create(model=self.model, messages=self.messages(question),
                                                           temperature=0, max_tokens=self.max_tokens)
            except openai.APITimeoutError:
                self.note = (f"fallback: the model server at {self.base_url} did not answer within {self.timeout:g} s; "
                             "the rule-based rewriter ran instead (and runs for every later question)")
            except openai.APIConnectionError as exc:
                self.note = (f"fallback: the model server at {self.base_url} could not be reached "
                             f"({type(exc).__name__}); the rule-based rewriter ran instead")
            else:
                self.last_raw = resp.choices[0].message.content or ""
                self.last_ran = self.name
                return parse_queries(self.last_raw, question, self.max_queries)
        self.last_ran = f"rules (fallback from {self.name})"
        return rule_rewrite(question, self.max_queries)

    __call__ = rewrite


def make_rewriter(kind: str = "auto"):
    """``rules``, ``llm``, or ``auto``: the model when ``LLM_BASE_URL`` is set, else the rules."""
    if kind == "auto":
        kind = "llm" if config.get("LLM_BASE_URL") else "rules"
    if kind == "rules":
        return RuleRewriter()
    if kind == "llm":
        return LLMRewriter()
    raise ValueError(f"unknown rewriter {kind!r}: choose auto, rules or llm")
