"""The model endpoint a run uses, from the settings: ``LLM_BASE_URL``, ``LLM_MODEL`` and ``LLM_API_KEY``."""
from __future__ import annotations

from raglab.base import config
from raglab.book.llm import DEFAULT_BASE_URL


def llm_settings(base_url: str | None = None, model: str | None = None, api_key: str | None = None) -> dict:
    """``base_url``, ``model`` and ``api_key`` from the arguments, else the settings (default: Ollama's URL);
    the keyword arguments of ``raglab.book.llm.OpenAIGenerator``. A key is never written in code."""
    return {"base_url": base_url or config.get("LLM_BASE_URL") or DEFAULT_BASE_URL,
            "model": model or config.get("LLM_MODEL"), "api_key": api_key or config.get("LLM_API_KEY")}
