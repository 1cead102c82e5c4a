"""The packaged all-MiniLM-L6-v2 in plain torch: the same forward pass as sentence-transformers' BertModel,
mean pooling and normalization, without importing sentence-transformers or transformers (together about
four seconds here before the first vector, which a cold ``raglab ask`` would pay for one query).

``MiniLM.forward(texts, length)`` tokenizes with the model's own ``tokenizer.json`` (``tokenizers``), pads or
truncates every text to ``length`` tokens, and runs six BERT layers with the weights read from
``model.safetensors``: word, position and token-type embeddings, LayerNorm; per layer self-attention
(``scaled_dot_product_attention`` with the padding masked, as transformers' ``sdpa`` attention), a dense
layer, residual and LayerNorm, the GELU feed-forward, residual and LayerNorm; then the mean over the unmasked
tokens. The vectors are those sentence-transformers makes from the same batch, in float32, in float64 and under
bfloat16 autocast alike (``tests/stages/test_minilm.py`` compares them exactly), so the embedding cache does not
depend on which one made a vector.
"""
from __future__ import annotations

import json

from raglab.infra.packaged_models import minilm_path


class MiniLM:
    """The packaged model's forward pass (``forward``); weights loaded once, on the CPU, in ``dtype``
    (float32 by default; float64 for vectors that are the same bytes on every CPU: ``raglab.infra.precision``)."""

    def __init__(self, path=None, dtype=None):
        import torch  # lazy: torch takes a second to import
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        folder = minilm_path() if path is None else path
        config = json.loads((folder / "config.json").read_text())
        self.heads, self.layers = config["num_attention_heads"], config["num_hidden_layers"]
        self.eps, self.pad_id = config["layer_norm_eps"], config.get("pad_token_id", 0)
        self.w = {k: v.to(dtype or torch.float32) for k, v in load_file(str(folder / "model.safetensors")).items()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.torch = torch

    def tokenize(self, texts: list[str], length: int):
        """``(input_ids, attention_mask)``: each text truncated or padded to ``length`` tokens."""
        tok = self.tokenizer
        tok.enable_truncation(max_length=length)
        tok.enable_padding(length=length, pad_id=self.pad_id, pad_token="[PAD]")
        encoded = tok.encode_batch(list(texts))
        ids = self.torch.tensor([e.ids for e in encoded], dtype=self.torch.long)
        mask = self.torch.tensor([e.attention_mask for e in encoded], dtype=self.torch.long)
        return ids, mask

    def forward(self, texts: list[str], length: int):
        """The mean-pooled token vectors scaled to unit length, one row per text, as a torch tensor."""
        torch, F, w = self.torch, self.torch.nn.functional, self.w
        ids, mask = self.tokenize(texts, length)
        n, t = ids.shape
        x = (F.embedding(ids, w["embeddings.word_embeddings.weight"])
             + F.embedding(torch.zeros_like(ids), w["embeddings.token_type_embeddings.weight"]))
        x = x + F.embedding(torch.arange(t).unsqueeze(0), w["embeddings.position_embeddings.weight"])
        x = F.layer_norm(x, (x.shape[-1],), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        keep = mask.bool()[:, None, None, :].expand(n, 1, t, t)      # a query may attend to every real token
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            lin = lambda h, name: F.linear(h, w[p + name + ".weight"], w[p + name + ".bias"])  # noqa: E731
            split = lambda h: h.view(n, t, self.heads, -1).transpose(1, 2)                  # noqa: E731
            q, k, v = (split(lin(x, f"attention.self.{name}")) for name in ("query", "key", "value"))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=0.0,
                                               scale=q.shape[-1] ** -0.5)
            a = lin(a.transpose(1, 2).reshape(n, t, -1).contiguous(), "attention.output.dense")
            x = F.layer_norm(a + x, (x.shape[-1],), w[p + "attention.output.LayerNorm.weight"],
                             w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = lin(F.gelu(lin(x, "intermediate.dense")), "output.dense")
            x = F.layer_norm(h + x, (x.shape[-1],), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                             self.eps)
        m = mask.unsqueeze(-1).to(x.dtype)
        return F.normalize((x * m).sum(1) / m.sum(1).clamp(min=1e-9), p=2, dim=1)
