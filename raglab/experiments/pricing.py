"""What one answer costs: its tokens (the server's usage, or SmolLM2's tokenizer) and the list price
they are charged at.

Token counts. ``count_tokens`` uses SmolLM2's own tokenizer, read from the packaged GGUF file
(``llama_cpp.Llama(vocab_only=True)``: the vocabulary only, no weights, loaded once). Special tokens
written in the text (``<|im_start|>``) count as one token each, and no BOS token is added (the GGUF
says ``add_bos_token = false``). ``count_message_tokens`` renders chat messages with the GGUF's own
chat template, exactly as llama-cpp-python's server does, so it equals the server's reported
``usage.prompt_tokens`` for the same messages (``tests/test_cost.py`` checks this against the real
server). When a server reports usage, its numbers are used; the tokenizer is the fallback, and
every row says which (``token_source``). A hosted model's tokenizer counts the same text somewhat
differently: its token counts here are the local model's, priced at the hosted model's list price.

Prices. ``config/prices.json`` holds list prices (USD per 1M input and per 1M output tokens) of a
few hosted chat models on one date, and the local server at 0; ``load_prices`` validates it.
``answer_cost`` prices one answer, ``per_1000`` scales per-question values to 1,000 questions, and
``RecordingGenerator`` keeps a generator's last call so that ``token_usage`` can count it. The
experiment that uses them is ``raglab.experiments.cost``.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raglab.base import config
from raglab.experiments.tokens import count_message_tokens, count_tokens
from raglab.book.prompt import build_messages
from raglab.guards.guard import Guard

PRICES_PATH = config.PROJECT_ROOT / "config" / "prices.json"


# ---------------------------------------------------------------- prices

class PriceError(ValueError):
    """``prices.json`` cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Price:
    """One model's list price in USD per 1M tokens."""

    key: str
    provider: str
    model: str
    hosted: bool
    input_per_1m: float
    output_per_1m: float
    source: str = ""
    note: str = ""


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise PriceError(f"{where} must be a number >= 0 (USD per 1M tokens), got {value!r}")
    return float(value)


def _text(rec: dict, key: str, where: str, required: bool = True) -> str:
    value = rec.get(key, "" if not required else None)
    if not isinstance(value, str) or (required and not value.strip()):
        raise PriceError(f"{where}.{key} is missing or not a non-empty string")
    return value


def load_prices(path: str | Path | None = None) -> dict:
    """Read and validate a price table: ``{"path", "as_of", "currency", "unit", "note", "models": {key: Price}}``.

    Every error names the file and the field, e.g. ``config/prices.json: models.gpt-4o.input_per_1m must be ...``.
    """
    path = Path(path or PRICES_PATH)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PriceError(f"{path}: price table not found") from None
    except json.JSONDecodeError as exc:
        raise PriceError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(raw, dict):
        raise PriceError(f"{path}: the top level must be an object")
    where = str(path)
    as_of = _text(raw, "as_of", f"{where}: field")
    try:
        time.strptime(as_of, "%Y-%m-%d")
    except ValueError:
        raise PriceError(f"{where}: field as_of must be a date YYYY-MM-DD, got {as_of!r}") from None
    note = _text(raw, "note", f"{where}: field")
    currency = raw.get("currency", "USD")
    if currency != "USD":
        raise PriceError(f"{where}: field currency must be 'USD' (prices are compared in dollars), got {currency!r}")
    models = raw.get("models")
    if not isinstance(models, dict) or not models:
        raise PriceError(f"{where}: field models must be a non-empty object of model entries")
    out = {}
    for key, rec in models.items():
        at = f"{where}: models.{key}"
        if not isinstance(rec, dict):
            raise PriceError(f"{at} must be an object")
        hosted = rec.get("hosted")
        if not isinstance(hosted, bool):
            raise PriceError(f"{at}.hosted must be true or false, got {hosted!r}")
        price = Price(key, _text(rec, "provider", at), _text(rec, "model", at), hosted,
                      _number(rec.get("input_per_1m"), f"{at}.input_per_1m"),
                      _number(rec.get("output_per_1m"), f"{at}.output_per_1m"),
                      _text(rec, "source", at, required=hosted), _text(rec, "note", at, required=False))
        out[key] = price
    return {"path": str(path), "as_of": as_of, "currency": currency, "unit": raw.get("unit", "per 1M tokens"),
            "note": note, "models": out}


def answer_cost(prompt_tokens: int, completion_tokens: int, price: Price) -> float:
    """USD for one answer: tokens times the per-1M price, input and output apart.

    >>> answer_cost(1_500, 100, Price("m", "p", "m", True, 0.15, 0.60))
    0.000285
    """
    return round((prompt_tokens * price.input_per_1m + completion_tokens * price.output_per_1m) / 1_000_000, 12)


def per_1000(values) -> float:
    """1,000 times the mean of per-question values (a cost or a token count per 1,000 questions).

    >>> per_1000([0.0002, 0.0004])
    0.3
    """
    v = [x for x in values if x is not None]
    return round(1000 * float(np.mean(v)), 9) if v else 0.0


# ---------------------------------------------------------------- the tokens of one answer

class RecordingGenerator:
    """Wraps a generator and keeps its last call (question, sources, ``Generation``) for token accounting."""

    def __init__(self, inner):
        self.inner = inner
        self.name = getattr(inner, "name", type(inner).__name__)
        self.extra_instruction = getattr(inner, "extra_instruction", None)
        self.max_tokens = getattr(inner, "max_tokens", None)
        self.last = None

    def generate(self, question, sources, refusal):
        generation = self.inner.generate(question, sources, refusal)
        self.last = (question, list(sources), refusal, generation)
        return generation


def token_usage(generation, question: str, sources, refusal: str, extra_instruction: str | None = None) -> tuple[int, int, str]:
    """``(prompt_tokens, completion_tokens, token_source)``: the server's usage when it reported one,
    else SmolLM2's tokenizer over the exact chat prompt and the returned text."""
    usage = getattr(generation, "usage", None) or {}
    if usage.get("prompt_tokens") is not None and usage.get("completion_tokens") is not None:
        return int(usage["prompt_tokens"]), int(usage["completion_tokens"]), "usage"

    messages = build_messages(question, sources, refusal, extra_instruction, Guard().visible)
    return count_message_tokens(messages), count_tokens(generation.text), "tokenizer"
