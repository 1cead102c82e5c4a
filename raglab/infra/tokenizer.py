"""The packaged MiniLM's word-piece tokenizer: loaded once, token counts as the model makes them, and the
token windows of the model's whole window as a chunker of the learner's shape."""
from __future__ import annotations

import functools

from raglab.book.chunking import DEFAULTS
from raglab.book.model_chunkers import token_spans
from raglab.infra.packaged_models import minilm_path


@functools.lru_cache(maxsize=1)
def load_tokenizer():
    """The packaged MiniLM's own word-piece tokenizer (``tokenizers``, no truncation), loaded once."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def token_lengths(texts: list[str], tokenizer=None) -> list[int]:
    """Word-piece tokens per text, counting [CLS] and [SEP] as the model does."""
    tok = tokenizer or load_tokenizer()
    return [len(e.ids) for e in tok.encode_batch(list(texts))]


def model_windows(text: str) -> list[tuple[int, int]]:
    """A chunker of the learner's shape (a page's text in, ``(start, end)`` spans out): token windows of
    the model's whole 256 tokens, overlapping by 32 (``raglab.book.model_chunkers.token_spans``)."""
    return token_spans(text, *DEFAULTS["tokens"], load_tokenizer())
