"""The course's notebooks, in order: each one's milestone number, its title and the short name the rubric
uses. Everything that names a milestone (the rubric's ``M``, the student bundle's ``START.md``, notebook 00's
table, the README) reads it from here, so a number or a name is written once.
"""
from __future__ import annotations

from dataclasses import dataclass

from raglab.course.timings import minutes


@dataclass(frozen=True)
class Milestone:
    notebook: str              # the file's stem in notebooks/
    number: int | None         # the milestone; None for the set-up and the optional appendix
    title: str                 # what the notebook's first heading calls it
    short: str = ""            # the rubric's name for the milestone ("chunking")
    part: int = 1              # a milestone taught in two notebooks has a part 2
    graded: bool = True        # the appendix is optional and earns nothing

    @property
    def label(self) -> str:
        """How a learner reads it: ``milestone 7, part 2``, ``set-up`` or ``optional``.

        >>> MILESTONES[0].label, by_notebook("07_bakeoff").label
        ('set-up', 'milestone 7')
        """
        if self.number is None:
            return "set-up" if self.graded else "optional"
        return f"milestone {self.number}" + (f", part {self.part}" if self.part > 1 else "")


MILESTONES = (
    Milestone("00_setup", None, "Set-up: the milestones, the words, the grading"),
    Milestone("01_ingest_and_chunking", 1, "Ingestion and chunking", "chunking"),
    Milestone("02_dense_and_bm25", 2, "Dense and keyword retrieval", "dense and keyword retrieval"),
    Milestone("03_hybrid_rrf_rerank", 3, "Hybrid search and reranking", "hybrid search and reranking"),
    Milestone("04_cited_answers", 4, "Cited answers, refusals and injection", "cited answers"),
    Milestone("05_access_and_vector_db", 5, "Access control, a real vector database, and fresh indexes",
              "access and a vector database"),
    Milestone("06_evaluation", 6, "Evaluation", "evaluation"),
    Milestone("07_bakeoff", 7, "The chunking × retriever bake-off", "bake-off"),
    Milestone("07_chunking_lab", 7, "The chunking lab", "bake-off", part=2),
    Milestone("08_stretch_experiments", 8, "Stretch experiments and the write-up", "stretch experiments"),
    Milestone("appendix_research", None, "Research readouts (optional)", graded=False),
)


def by_notebook(stem: str) -> Milestone:
    """The entry of one notebook (its file's stem); an unknown notebook raises, naming the known ones.

    >>> by_notebook("06_evaluation").number
    6
    """
    for m in MILESTONES:
        if m.notebook == stem:
            return m
    raise KeyError(f"{stem!r} is not in raglab.course.milestones.MILESTONES: {[m.notebook for m in MILESTONES]}")


def rubric_names() -> dict[str, str]:
    """The rubric's milestone names by notebook number (``{"01": "1 chunking", ...}``).

    >>> rubric_names()["04"]
    '4 cited answers'
    """
    return {m.notebook[:2]: f"{m.number} {m.short}" for m in MILESTONES if m.number and m.part == 1}


def table(present: set[str] | None = None, measured: dict | None = None) -> str:
    """The notebooks as a Markdown table (notebook, milestone, what it builds); with ``present``, only the
    notebooks whose stems it holds; with ``measured`` (``raglab.course.timings.BUNDLE``'s contents), a column
    with each notebook's first run, measured from a new install of the student bundle.

    >>> print(table({"00_setup", "06_evaluation"}, {"notebooks": {"06_evaluation": 61.9}}))
    | notebook | milestone | title | first run, measured |
    | --- | --- | --- | --- |
    | `00_setup` | set-up | Set-up: the milestones, the words, the grading | not measured |
    | `06_evaluation` | milestone 6 | Evaluation | 1 min 2 s |
    """
    listed = [m for m in MILESTONES if present is None or m.notebook in present]
    if not measured:
        rows = [f"| `{m.notebook}` | {m.label} | {m.title} |" for m in listed]
        return "\n".join(["| notebook | milestone | title |", "| --- | --- | --- |", *rows])
    seconds = measured["notebooks"]
    rows = [f"| `{m.notebook}` | {m.label} | {m.title} | "
            f"{minutes(seconds[m.notebook]) if m.notebook in seconds else 'not measured'} |" for m in listed]
    return "\n".join(["| notebook | milestone | title | first run, measured |", "| --- | --- | --- | --- |", *rows])
