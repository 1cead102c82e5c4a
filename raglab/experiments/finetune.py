"""Fine-tuning on mined pairs (``raglab.experiments.mining``): the packaged MiniLM as a bi-encoder, and a
cross-encoder from the same backbone. Everything runs on the CPU, seeded, and is cached by content hash.

Models are folders under ``<work dir>/models/``, named by the hash of (pairs, base model,
settings): ``bi-<hash>`` (a sentence-transformers model; its id for an ``Embedder`` and an index
manifest is ``trained/bi-<hash>``) and ``cross-<hash>`` (a sentence-transformers ``CrossEncoder``).
Each holds ``training.json``: what made it, the loss curve and the seconds it took. A model is
trained into a temporary folder and renamed when complete. The store those folders make up is ``raglab.infra.model_store``.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from raglab.infra.precision import resolve_precision
from raglab.base.files import atomic_dir
from raglab.experiments.mining import KINDS, Pair, kind_counts
from raglab.infra.model_store import Trained, cached_model
from raglab.infra.packaged_models import MINILM, minilm_path, models_dir, quiet_loading
from raglab.base.progress import progress_bar


@dataclass(frozen=True)
class TrainSettings:
    """What a training run does; every field is part of the model's content hash.

    ``pairs`` is how many triples are mined (drawn evenly over ``kinds``), ``max_length`` the
    tokens a text is cut to while training (the bi-encoder reads each text alone, the
    cross-encoder a query and a passage together).
    """

    pairs: int = 6000
    kinds: tuple[str, ...] = KINDS
    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 2e-5
    head_learning_rate: float = 1e-3     # the cross-encoder's new one-logit head
    warmup: float = 0.1
    max_length: int = 128
    cross_max_length: int = 256
    negatives: str = "page"      # where hard negatives come from (mine_pairs)
    scale: float = 20.0          # the contrastive loss's similarity scale (MultipleNegativesRankingLoss)
    seed: int = 25
    precision: str | None = None  # the forward pass's (None: the embedder's setting); only bfloat16 changes it (autocast)

    def check(self) -> "TrainSettings":
        """The settings with the precision resolved (part of the hash), or a ``ValueError``."""
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown pair kind {unknown[0]!r}: choose from {', '.join(KINDS)}")
        if self.pairs <= 0 or self.epochs <= 0 or self.batch_size < 2:
            raise ValueError("pairs and epochs must be positive and batch_size at least 2 (in-batch negatives)")
        return replace(self, precision=resolve_precision(self.precision))


# ---------------------------------------------------------------- naming a model by what made it

def pairs_hash(pairs: Sequence[Pair]) -> str:
    """sha256 of the pairs, in order (what the model was trained on)."""
    h = hashlib.sha256()
    for p in pairs:
        h.update(json.dumps(asdict(p), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def base_hash() -> str:
    """sha256 of the packaged MiniLM's weights file (the base both models start from; read once a process)."""
    h = hashlib.sha256()
    with open(minilm_path() / "model.safetensors", "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_name(kind: str, pairs: Sequence[Pair], settings: TrainSettings) -> str:
    """``bi-<hash>`` or ``cross-<hash>``: the hash of the pairs, the base model and the settings."""
    key = json.dumps({"kind": kind, "pairs": pairs_hash(pairs), "base": f"{MINILM}:{base_hash()}",
                      "settings": asdict(settings)}, sort_keys=True)
    return f"{kind}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


# ---------------------------------------------------------------- training loops

def _schedule(optimizer, steps: int, warmup: float):
    """Linear warm-up over the first ``warmup`` share of steps, then linear decay to 0."""
    import torch  # lazy: torch takes seconds to import

    ramp = max(1, int(steps * warmup))

    def factor(step: int) -> float:
        return (step + 1) / ramp if step < ramp else max(0.0, (steps - step) / max(1, steps - ramp))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _batches(pairs: Sequence[Pair], settings: TrainSettings) -> list[list[Pair]]:
    """The training batches of every epoch, shuffled by the seed; a batch never holds two pairs of
    the same chunk (they would be each other's false in-batch negatives)."""
    rng = random.Random(settings.seed)
    out = []
    for _ in range(settings.epochs):
        order = list(pairs)
        rng.shuffle(order)
        batch, seen = [], set()
        for p in order:
            if p.chunk in seen:
                continue      # dropped for this epoch rather than reordered (keeps the draw simple)
            batch.append(p)
            seen.add(p.chunk)
            if len(batch) == settings.batch_size:
                out.append(batch)
                batch, seen = [], set()
        if len(batch) >= 2:
            out.append(batch)
    return out


def _seed_everything(seed: int) -> None:
    import torch  # lazy: torch takes seconds to import

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _train(kind: str, pairs: Sequence[Pair], settings: TrainSettings, build, progress: bool) -> Trained:
    """The loop both models share: the cache look-up, seeding, batches, AdamW with warm-up, a
    progress bar with a time estimate, the loss curve, and an atomic save with ``training.json``.
    ``build()`` loads the model and returns ``(module to train, step(batch) -> loss, save(folder),
    parameter groups or None)``."""
    settings = settings.check()
    name = model_name(kind, pairs, settings)
    cached = cached_model(name)
    if cached is not None:
        return cached
    quiet_loading()
    _seed_everything(settings.seed)
    import torch  # lazy: torch takes seconds to import

    model, step_fn, save, groups = build(settings)
    dest = models_dir() / name
    batches = _batches(pairs, settings)
    optimizer = torch.optim.AdamW(groups or model.parameters(), lr=settings.learning_rate)
    scheduler = _schedule(optimizer, len(batches), settings.warmup)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if settings.precision == "bfloat16"
                else contextlib.nullcontext())
    model.train()
    losses, start = [], time.perf_counter()
    bar = progress_bar(len(batches), f"training the {'cross-encoder' if kind == 'cross' else 'bi-encoder'}",
                       "batch") if progress else None
    try:
        for batch in batches:
            with autocast:
                loss = step_fn(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(round(float(loss.detach()), 4))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    model.eval()
    record = {"name": name, "kind": kind, "base": MINILM, "base_sha256": base_hash(), "pairs": len(pairs),
              "pairs_by_kind": kind_counts(pairs), "pairs_sha256": pairs_hash(pairs), "settings": asdict(settings),
              "batches": len(batches), "seconds": round(time.perf_counter() - start, 1), "loss": losses,
              "torch_threads": torch.get_num_threads(),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    models_dir().mkdir(parents=True, exist_ok=True)
    with atomic_dir(dest) as tmp:
        save(tmp)
        (tmp / "training.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return Trained(name, dest, record)


def train_bi_encoder(pairs: Sequence[Pair], settings: TrainSettings = TrainSettings(), progress: bool = True) -> Trained:
    """Fine-tune the packaged MiniLM on the triples with a contrastive loss
    (``MultipleNegativesRankingLoss``: each query against its positive, its hard negative and every
    other passage of the batch). Cached: the same pairs and settings return the saved model."""

    def build(settings: TrainSettings):
        from sentence_transformers import SentenceTransformer  # lazy: imports torch
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss  # lazy: imports torch

        model = SentenceTransformer(str(minilm_path()), device="cpu")
        model.max_seq_length = settings.max_length
        loss = MultipleNegativesRankingLoss(model, scale=settings.scale)

        def step(batch: list[Pair]):
            columns = ([p.query for p in batch], [p.positive for p in batch], [p.negative for p in batch])
            return loss([model.preprocess(col) for col in columns], None)

        def save(folder: Path) -> None:
            model.max_seq_length = 256     # the packaged model's limit: the index embeds whole chunks
            model.save(str(folder))

        return model, step, save, None

    return _train("bi", pairs, settings, build, progress)


def train_cross_encoder(pairs: Sequence[Pair], settings: TrainSettings = TrainSettings(), progress: bool = True) -> Trained:
    """Train a cross-encoder from the packaged MiniLM's weights (a new one-logit head): each triple
    gives (query, positive) labelled 1 and (query, negative) labelled 0, binary cross-entropy.
    Cached like the bi-encoder."""

    def build(settings: TrainSettings):
        import torch  # lazy: torch takes seconds to import
        from sentence_transformers import CrossEncoder  # lazy: imports torch

        encoder = CrossEncoder(str(minilm_path()), num_labels=1, max_length=settings.cross_max_length, device="cpu")
        network, tokenizer = encoder.model, encoder.tokenizer
        loss_fn = torch.nn.BCEWithLogitsLoss()

        def step(batch: list[Pair]):
            queries = [p.query for p in batch] * 2
            passages = [p.positive for p in batch] + [p.negative for p in batch]
            labels = torch.tensor([1.0] * len(batch) + [0.0] * len(batch))
            features = tokenizer(queries, passages, truncation=True, max_length=settings.cross_max_length,
                                 padding=True, return_tensors="pt")
            return loss_fn(network(**features).logits.view(-1), labels)

        # the one-logit head (and the pooler before it) start from random weights: they learn at a larger rate
        head = [p for n, p in network.named_parameters() if n.startswith(("classifier", "bert.pooler"))]
        body = [p for n, p in network.named_parameters() if not n.startswith(("classifier", "bert.pooler"))]
        groups = [{"params": body}, {"params": head, "lr": settings.head_learning_rate}]
        return network, step, lambda folder: encoder.save(str(folder)), groups

    return _train("cross", pairs, settings, build, progress)
