"""The stretch experiments by name, one list for the command line and the report: each one's title,
runner (returns a results dict) and formatter (the text the CLI prints and the report quotes)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from raglab.experiments import chunksize, cost, longcontext, rewrite


@dataclass(frozen=True)
class Experiment:
    """One stretch experiment: ``raglab experiment NAME`` runs ``run`` and prints ``format(result)``."""

    name: str
    title: str
    run: Callable[..., dict]
    format: Callable[[dict], str]

    @property
    def command(self) -> str:
        """The command that runs it."""
        return f"raglab experiment {self.name}"


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment("rewrite", "Query rewriting for multi-part questions", rewrite.run_rewrite_experiment,
               rewrite.format_rewrite),
    Experiment("longcontext", "When not to use RAG: a long-context baseline", longcontext.run_longcontext_experiment,
               longcontext.format_longcontext),
    Experiment("cost", "Cost and latency per answer", cost.run_cost_experiment, cost.format_cost),
    Experiment("chunksize", "Chunk size against the model's limit", chunksize.run_chunksize_experiment,
               chunksize.format_chunksize),
)}
