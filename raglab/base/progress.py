"""Progress of a long loop as one bar that updates in place.

In a terminal it is tqdm on stderr. In a Jupyter kernel it is one line of text that updates in
place (an IPython display handle): a learner watches it move, and an executed notebook keeps a
single line, the final state, instead of one stderr block per update.
"""
from __future__ import annotations

import sys
import time

MIN_INTERVAL_S = 0.5     # at most two redraws a second in a notebook


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (IPython's ZMQ shell), not a terminal or a script."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class LineBar:
    """A tqdm-style line (``embedding: 40%|####  | 200/500 [00:03<00:04, 66 text/s]``) shown once and
    updated in place; same ``update``/``close`` interface as tqdm."""

    def __init__(self, total: int, desc: str, unit: str = "it", min_interval: float = MIN_INTERVAL_S):
        from IPython.display import display  # lazy: only inside a Jupyter kernel

        self.total, self.desc, self.unit, self.min_interval = total, desc, unit, min_interval
        self.n, self.start, self.drawn = 0, time.monotonic(), 0.0
        self.handle = display(self._bundle(), raw=True, display_id=True)

    def text(self) -> str:
        """The line as it reads now."""
        from tqdm import tqdm  # lazy: tqdm formats the line

        return tqdm.format_meter(self.n, self.total, time.monotonic() - self.start, prefix=self.desc,
                                 unit=self.unit, ncols=100)

    def _bundle(self) -> dict:
        return {"text/plain": self.text()}

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.drawn >= self.min_interval or self.n >= self.total:
            self.handle.update(self._bundle(), raw=True)
            self.drawn = now

    def close(self) -> None:
        self.handle.update(self._bundle(), raw=True)


def progress_bar(total: int, desc: str, unit: str = "it"):
    """One progress bar: a ``LineBar`` in a Jupyter kernel, else tqdm on stderr."""
    if in_notebook():
        return LineBar(total, desc, unit)
    from tqdm import tqdm  # lazy: only when a bar is shown

    return tqdm(total=total, desc=desc, unit=unit)
