"""Training on the docs themselves, without labels: mine (query, positive, hard negative) triples
from a corpus, fine-tune the packaged MiniLM as a bi-encoder, and train a cross-encoder from the
same backbone. Everything runs on the CPU, seeded, and is cached by content hash.

What a training pair may use: the corpus's own text, nothing else. No question of a golden set
(dev or test) is ever a training query (``mine_pairs`` drops a candidate that is one), because a
model trained on the questions it is judged on scores the questions, not the retriever.

The pairs (``mine_pairs``), each a query, the chunk it came from, and one hard negative:

- ``heading``: a section's heading path (``Title > Section``) against the section's first chunk,
  read without its prefix (with it the match would be a string copy);
- ``signature``: an API entry's signature line (``json.dumps(obj, *, ...)``) against the rest of
  its chunk;
- ``cloze``: one sentence of a chunk against the rest of the chunk (inverse cloze).

The hard negative is another section of the positive's own page (``negatives="page"``, the
default), or BM25's best chunk for the query outside the positive's section (``"bm25"``); see
``mine_pairs`` for why BM25's is a trap.

Models are folders under ``<work dir>/models/``, named by the hash of (pairs, base model,
settings): ``bi-<hash>`` (a sentence-transformers model; its id for an ``Embedder`` and an index
manifest is ``trained/bi-<hash>``) and ``cross-<hash>`` (a sentence-transformers ``CrossEncoder``).
Each holds ``training.json``: what made it, the loss curve and the seconds it took. A model is
trained into a temporary folder and renamed when complete.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import random
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from raglab.book.bm25 import BM25, top_k
from raglab.book.chunking import Chunk, prefix_for
from raglab.infra.precision import resolve_precision
from raglab.base.files import atomic_dir
from raglab.infra.packaged_models import MINILM, TRAINED_PREFIX, minilm_path, models_dir, quiet_loading
from raglab.base.progress import progress_bar
from raglab.base.text import clean, sentence_spans

KINDS = ("heading", "signature", "cloze")
NEGATIVES = ("page", "bm25", "dense")
# an API entry's signature on a line of its own: json.dumps(obj, *, skipkeys=False, ...) or class json.JSONEncoder(...)
_SIGNATURE = re.compile(r"^\s*(?:(?:class|exception|async|await|abstractmethod|classmethod|staticmethod)\s+)*"
                        r"[A-Za-z_][\w.]*\([^\n]{0,300}\)(?:\s*->\s*[^\n]+)?\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Pair:
    """One training example: a query, the passage it came from, and a hard negative passage."""

    query: str
    positive: str
    negative: str
    kind: str
    chunk: str      # the id of the positive's chunk
    negative_chunk: str


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
    precision: str = "auto"      # the forward pass's: bfloat16 autocast where the CPU has it (as the embedder)

    def check(self) -> "TrainSettings":
        """The settings with the precision resolved (part of the hash), or a ``ValueError``."""
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown pair kind {unknown[0]!r}: choose from {', '.join(KINDS)}")
        if self.pairs <= 0 or self.epochs <= 0 or self.batch_size < 2:
            raise ValueError("pairs and epochs must be positive and batch_size at least 2 (in-batch negatives)")
        return replace(self, precision=resolve_precision(self.precision))


# ---------------------------------------------------------------- mining pairs

def section_of(chunk: Chunk) -> tuple:
    """The section a chunk belongs to: its page and heading path."""
    return (chunk.doc, chunk.heading)


def signature_lines(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``text`` that is an API entry's signature.

    >>> text = "json.dumps(obj, *, indent=None)\\n   Serialize obj.\\nThe call f(x) inside prose is not one."
    >>> [text[a:b].strip() for a, b in signature_lines(text)]
    ['json.dumps(obj, *, indent=None)']
    """
    return [(m.start(), m.end()) for m in _SIGNATURE.finditer(text)]


def _without(chunk: Chunk, start: int, end: int) -> str:
    """The chunk as indexed (prefix and cleaned text) with ``text[start:end]`` left out."""
    prefix = prefix_for(chunk.heading) if chunk.indexed_text != clean(chunk.text) else ""
    return prefix + clean(chunk.text[:start] + "\n" + chunk.text[end:])


def candidates(chunks: Sequence[Chunk], kind: str) -> list[tuple[str, str, int]]:
    """Every ``(query, positive, chunk row)`` of one kind the chunks offer, in corpus order."""
    out = []
    if kind == "heading":
        seen = set()
        for row, c in enumerate(chunks):
            if len(c.heading) > 1 and section_of(c) not in seen:
                seen.add(section_of(c))
                text = clean(c.text)
                title = clean(c.heading[-1])
                out.append((" > ".join(c.heading), text[len(title):].strip() if text.startswith(title) else text, row))
    elif kind == "signature":
        for row, c in enumerate(chunks):
            for a, b in signature_lines(c.text):
                rest = _without(c, a, b)
                if len(rest.split()) >= 12:
                    out.append((clean(c.text[a:b]), rest, row))
    else:
        for row, c in enumerate(chunks):
            signatures = signature_lines(c.text)
            for a, b in sentence_spans(c.text):
                words = len(c.text[a:b].split())
                inside_signature = any(a < e and s < b for s, e in signatures)
                if 8 <= words <= 40 and not inside_signature:
                    rest = _without(c, a, b)
                    if len(rest.split()) >= 20:
                        out.append((clean(c.text[a:b]), rest, row))
    return out


def mine_pairs(chunks: Sequence[Chunk], n: int, kinds: Iterable[str] = KINDS, seed: int = 25,
               forbidden: Iterable[str] = (), negatives: str = "page", embedder=None) -> list[Pair]:
    """``n`` training triples from the chunks, drawn evenly over ``kinds`` with a seeded generator
    (a kind with too few candidates gives what it has; the others fill the rest).

    Parameters:
        chunks: the corpus's chunks, as the index holds them.
        n: how many triples to mine.
        kinds: which of ``KINDS`` to mine.
        seed: the generator's seed (the same seed and chunks give the same pairs).
        forbidden: the golden set's questions: a candidate query that is one of them, or contains
            one, is never drawn (the corpus's text may quote a question's words; the question
            itself is never a training query).
        negatives: where the hard negative comes from: ``page``, another section of the positive's
            own page, drawn at random (the retriever's weak spot is ranking within the right page;
            a page with one section falls back to BM25); ``bm25``, BM25's best chunk for the query
            outside the section. BM25 negatives share more words with the query than the positive
            (its query sentence was taken out), so a model can learn that overlap means "wrong": a
            cross-encoder trained on them ranked the small profile's answers below chance;
            ``dense``, the best chunk outside the section among the base model's dense top 20
            for the query (``embedder``: the packaged MiniLM's ``Embedder``, its cache reused).
    """
    if negatives not in NEGATIVES:
        raise ValueError(f"unknown negatives {negatives!r}: choose {', '.join(NEGATIVES)}")
    if negatives == "dense" and embedder is None:
        raise ValueError("dense negatives need the embedder whose top 20 they come from")
    kinds = list(dict.fromkeys(kinds))
    rng = random.Random(seed)
    questions = [" ".join(f.lower().split()) for f in forbidden if f and f.strip()]
    pools = {k: [c for c in candidates(chunks, k) if not _is_question(c[0], questions)] for k in kinds}
    for pool in pools.values():
        rng.shuffle(pool)
    picked, want = [], {k: 0 for k in kinds}
    left = n
    while left > 0 and any(want[k] < len(pools[k]) for k in kinds):      # even shares, refilled from the larger pools
        open_kinds = [k for k in kinds if want[k] < len(pools[k])]
        share = max(1, left // len(open_kinds))
        for k in open_kinds:
            take = min(share, len(pools[k]) - want[k], left)
            want[k] += take
            left -= take
    for k in kinds:
        picked += [(k, *item) for item in pools[k][:want[k]]]
    rng.shuffle(picked)
    sections_of_page: dict[str, dict[tuple, list[int]]] = {}
    for r, c in enumerate(chunks):
        sections_of_page.setdefault(c.doc, {}).setdefault(section_of(c), []).append(r)
    bm25 = None                        # built on first need: "page" negatives need it only for one-section pages
    dense = _dense_top(embedder, chunks, [item[1] for item in picked], DENSE_DEPTH) if negatives == "dense" else None
    pairs = []
    for i, (kind, query, positive, row) in enumerate(picked):
        others = [rows for sec, rows in sections_of_page[chunks[row].doc].items() if sec != section_of(chunks[row])]
        if negatives == "page" and others:
            ranked = [rng.choice(rng.choice(others))]
        elif dense is not None:
            ranked = list(dense[i])
        else:
            bm25 = bm25 or BM25([c.indexed_text for c in chunks])
            ranked = [r for r, _ in top_k(bm25.scores(query), 30)]
        negative = next((r for r in ranked if section_of(chunks[r]) != section_of(chunks[row])), None)
        if negative is None:
            continue
        pairs.append(Pair(query, positive, chunks[negative].indexed_text, kind, chunks[row].id, chunks[negative].id))
    return pairs


DENSE_DEPTH = 20      # the dense candidates a negative is drawn from


def _dense_top(embedder, chunks: Sequence[Chunk], queries: list[str], depth: int) -> np.ndarray:
    """The rows of each query's ``depth`` nearest chunks by the embedder's cosine (exact, best first)."""
    vectors = embedder.encode([c.indexed_text for c in chunks])
    out = np.empty((len(queries), min(depth, len(chunks))), dtype=np.int64)
    for start in range(0, len(queries), 512):
        sims = embedder.encode(queries[start:start + 512]) @ vectors.T
        top = np.argpartition(-sims, out.shape[1] - 1, axis=1)[:, :out.shape[1]]
        order = np.take_along_axis(sims, top, axis=1).argsort(axis=1, kind="stable")[:, ::-1]
        out[start:start + 512] = np.take_along_axis(top, order, axis=1)
    return out


def _is_question(query: str, questions: list[str]) -> bool:
    """Whether a query is, or contains, one of the (lowercased, whitespace-folded) questions."""
    folded = " ".join(query.lower().split())
    return any(q in folded for q in questions)


# ---------------------------------------------------------------- the model store

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


def trained_id(name: str) -> str:
    """The model id an ``Embedder`` and an index manifest use for a trained bi-encoder."""
    return f"{TRAINED_PREFIX}{name}"


@dataclass
class Trained:
    """A trained model on disk and its record."""

    name: str
    path: Path
    record: dict = field(default_factory=dict)
    cached: bool = False

    @property
    def model_id(self) -> str:
        return trained_id(self.name)


def _load_record(path: Path) -> dict:
    return json.loads((path / "training.json").read_text(encoding="utf-8"))


def cached_model(name: str) -> Trained | None:
    """The saved model of this name (``model_name``), if it was trained before."""
    path = models_dir() / name
    return Trained(name, path, _load_record(path), cached=True) if (path / "training.json").exists() else None


def kind_counts(pairs: Sequence[Pair]) -> dict[str, int]:
    """How many pairs of each kind, in ``KINDS`` order."""
    return {k: sum(p.kind == k for p in pairs) for k in KINDS}


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


def trained_models(kind: str | None = None) -> list[Trained]:
    """The models in the store (newest first), optionally of one kind."""
    folder = models_dir()
    found = [Trained(p.name, p, _load_record(p), cached=True) for p in folder.glob("*-*")
             if (p / "training.json").exists()] if folder.exists() else []
    found = [t for t in found if kind is None or t.record.get("kind") == kind]
    return sorted(found, key=lambda t: t.record.get("date", ""), reverse=True)


def describe(t: Trained) -> str:
    """One line for a trained model: name, pairs, batches, seconds, first and last loss."""
    r = t.record
    loss = r.get("loss") or [float("nan")]
    head, tail = np.mean(loss[:10]), np.mean(loss[-10:])
    return (f"{r['kind']}-encoder {t.name}: {r['pairs']} pairs ({', '.join(f'{k} {v}' for k, v in r['pairs_by_kind'].items())}), "
            f"{r['batches']} batches, {r['seconds']:.0f} s, loss {head:.3f} -> {tail:.3f}"
            + (" (cached)" if t.cached else ""))


