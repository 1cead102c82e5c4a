"""The packaged MiniLM's word-piece tokenizer: loaded once, and token counts as the model makes them."""
from __future__ import annotations

import functools

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
