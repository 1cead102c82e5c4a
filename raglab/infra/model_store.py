"""The store of models trained here: the folders under ``<work dir>/models/``, each with its ``training.json``
record (what made it, the loss curve, the seconds it took), looked up by name.

A trained bi-encoder's id for an ``Embedder`` and an index manifest is ``trained/bi-<hash>``
(``trained_id``); the models themselves are trained by ``raglab.experiments.finetune``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from raglab.infra.packaged_models import TRAINED_PREFIX, models_dir


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
