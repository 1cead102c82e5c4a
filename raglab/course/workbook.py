"""The main job: execute the workbook's notebooks headless, in order, and render each to HTML."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from raglab.base import config
from raglab.infra.assemble import build_assistant
from raglab.course import artifacts, timings
from raglab.course.cells import for_readers
from raglab.course.report import write_report
from raglab.course.rubric import check, write_rubric
from raglab.course.golden_in_use import corpus_in_use, golden_in_use
from raglab.evaluation.scoreboard import format_scoreboard, run_golden
from raglab.base.files import atomic_open

NOTEBOOKS = config.PROJECT_ROOT / "notebooks"


def notebooks(folder: Path | None = None) -> list[Path]:
    """The numbered notebooks (``00_setup.ipynb``, ``01_...``) of ``folder`` (default: the workbook's), in order."""
    return sorted(Path(folder or NOTEBOOKS).glob("[0-9][0-9]_*.ipynb"))


def execute(path: Path, timeout: int = 1800, allow_errors: bool = False):
    """Run one notebook top to bottom in its own folder; returns the executed notebook. With
    ``allow_errors`` a failing cell is recorded and the run goes on (how a student release runs)."""
    import nbformat  # lazy: only when notebooks run
    from nbclient import NotebookClient  # lazy: only when notebooks run

    from jupyter_client.manager import KernelManager  # lazy: only when notebooks run

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="raglab-kernel-") as sockets:
        # local sockets instead of TCP: nothing listens on a port, and the kernel has no
        # "running over TCP without encryption" warning to print into the main job's output
        km = KernelManager(kernel_name="python3", transport="ipc", ip=str(Path(sockets) / "kernel"))
        try:
            NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        finally:
            # nbclient leaves a kernel manager it did not create running: stop the kernel here, or it
            # lingers until the main job exits (and then prints "Parent appears to have exited")
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    return nb


def render_html(nb, dest: Path) -> Path:
    """Write a static HTML copy of an executed notebook, as a learner reads it (``for_readers``: without
    the cells only the automated tests need)."""
    import copy

    from nbconvert import HTMLExporter  # lazy: only when notebooks run

    body, _ = HTMLExporter().from_notebook_node(for_readers(copy.deepcopy(nb)))
    with atomic_open(dest) as fh:
        fh.write(body)
    return dest


def run_workbook(out: str | Path = "build", inplace: bool = False, folder: Path = NOTEBOOKS) -> bool:
    """Execute every notebook in order (``out/notebooks/NAME.html`` and ``.ipynb``), then print the
    scoreboard, check the milestones' artifacts (``out/artifacts/rubric.md``) and write the report
    (``out/report/report.html``), and write each notebook's seconds and the whole run's to
    ``out/timings.json`` (``raglab.course.timings``). Returns whether every rubric criterion passed."""
    import os

    import nbformat  # lazy: only when notebooks run

    out = Path(out)
    out_dir = out / "notebooks"
    where = Path(os.environ.setdefault(artifacts.ENV, str((out / "artifacts").resolve())))
    written, seconds, begun, began_at = [], {}, time.perf_counter(), time.time()
    caches = "warm" if any(config.work_dir().iterdir()) else "cold"
    print(f"raglab workbook: profile {config.profile()}, corpus {corpus_in_use(folder)}, {len(notebooks(folder))} notebooks")
    for path in notebooks(folder):
        started = time.perf_counter()
        nb = execute(path)
        with atomic_open(out_dir / path.name) as fh:
            nbformat.write(nb, fh)
        if inplace:
            with atomic_open(path) as fh:
                nbformat.write(nb, fh)
        written.append(render_html(nb, out_dir / path.with_suffix(".html").name))
        seconds[path.stem] = time.perf_counter() - started
        print(f"  {path.name:<40} {seconds[path.stem]:6.1f} s")
    rubric = check(where)
    rubric_path = write_rubric(rubric, where)
    report_md, report_html = write_report(where, out / "report")
    print_scoreboard(out, folder)
    passed = sum(r.passed for r in rubric)
    print()
    print(f"rendered notebooks: {out_dir.resolve()}/ ({', '.join(p.name for p in written)})")
    print(f"rubric:             {rubric_path.resolve()} ({passed} of {len(rubric)} criteria pass"
          + "".join(f"; FAIL: {r.criterion}: {r.why}" for r in rubric if not r.passed) + ")")
    print(f"report:             {report_html.resolve()} (Markdown: {report_md.name} beside it)")
    took = timings.record(out, seconds, time.perf_counter() - begun, caches, timings.setup_before(out, began_at))
    print(f"timings:            {took.resolve()} ({timings.minutes(time.perf_counter() - begun)} in all)")
    return passed == len(rubric)


def print_scoreboard(out: Path, folder: Path = NOTEBOOKS) -> dict:
    """The main job's last step: score the assistant on the corpus and golden set the notebooks in ``folder``
    run on (``golden_in_use``: ``$RAGLAB_GOLDEN``, else ``settings.toml``'s, else a student's ``golden.jsonl``
    there, else the course's) and print it."""
    import json

    golden = golden_in_use(folder=folder)
    print(f"\n{golden.line()}")
    board = run_golden(build_assistant(golden.corpus), golden.path)
    with atomic_open(out / "scoreboard.json") as fh:
        json.dump(board, fh, indent=2)
    print()
    print(format_scoreboard(board))
    print(f"scores:             {(out / 'scoreboard.json').resolve()}")
    return board
