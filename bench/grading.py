"""What grading a class costs: a simulated class graded one student at a time and two at a time, in the same run.

    python bench/grading.py [--students 8] [--notebook STEM ...] [--live-model]

The class is made from the student release: complete submissions (the solutions), submissions with a bug in the
chunker, one handed in blank and one with only the first half of the notebooks, as many students as asked. A
warm-up grades one student first (the embedding caches, and notebook 08's local model, recorded once for the
class), so both timed runs are warm; each timed run grades the whole class into a fresh folder (nothing resumed)
with that recording. Peak memory is the largest sum of resident memory over this process and every process it
started (graders, kernels, the model server), sampled every 0.2 s.

Prints, for 1 and for 2 jobs: wall seconds, seconds per student, the speed-up over 1 job and the peak memory; and
whether both runs wrote the same gradebook. A shared machine's speed drifts over the minutes a run takes: a fixed
single-threaded loop is timed before and after each run, and the speed-up is also given with each run's wall time
divided by its loop time.
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import psutil

from raglab.course import classroom, grading

DROPS_TAIL = """def chunk_words(words, size=150, overlap=30):
    return [words[i:i + size] for i in range(0, max(len(words) - size, 1), size - overlap)]"""


def make_class(release: Path, klass: Path, stems: list[str], n: int) -> None:
    """``n`` students: every fourth one a chunker bug, one blank, one half done, the rest complete."""
    for i in range(n):
        who = klass / f"student{i + 1:02d}"
        kind = "blank" if i == n - 1 else "half" if i == n - 2 else "bug" if i % 4 == 1 else "complete"
        for j, stem in enumerate(stems):
            if kind == "blank" or (kind == "half" and j >= len(stems) // 2):
                who.mkdir(parents=True, exist_ok=True)
                shutil.copy2(release / f"{stem}.ipynb", who / f"{stem}.ipynb")
            else:
                grading.hand_in(release, who, stem, {"chunk_words": DROPS_TAIL} if kind == "bug" else None)


class PeakMemory:
    """The largest resident memory of this process and all its descendants, sampled in a thread."""

    def __init__(self, every: float = 0.2):
        self.every, self.peak, self._stop = every, 0, threading.Event()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:       # a process that ended between listing and reading
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def probe(n: int = 3_000_000) -> float:
    """Seconds of a fixed single-threaded Python loop: the machine's speed right now (a shared machine's speed
    drifts; both runs are compared at the speed measured around each)."""
    started = time.perf_counter()
    x = 0
    for i in range(n):
        x += i * i % 7
    return time.perf_counter() - started


def rows(out: Path) -> list[dict]:
    with open(out / "gradebook.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--students", type=int, default=8)
    p.add_argument("--notebook", action="append", metavar="STEM", help="only these notebooks (default: all nine)")
    p.add_argument("--live-model", action="store_true", help="run notebook 08's model for every student")
    args = p.parse_args()
    if args.students < 4:
        p.error("--students: at least 4 (complete, bug, half, blank)")
    stems = args.notebook or [nb.stem for nb in grading.notebooks()]
    with tempfile.TemporaryDirectory(prefix="raglab-bench-grading-") as tmp:
        base = Path(tmp)
        release = grading.release(base / "course", only=stems)
        make_class(release, base / "class", stems, args.students)
        warm = base / "warm"
        (warm / "class").mkdir(parents=True)
        shutil.copytree(base / "class" / "student01", warm / "class" / "student01")
        started = time.perf_counter()
        classroom.grade_class(warm / "class", warm / "grades", live_model=args.live_model, log=lambda s: None)
        print(f"warm-up: one student in {time.perf_counter() - started:.0f} s (caches filled, the model recorded once)")
        results = {}
        for jobs in (1, 2):
            out = base / f"grades-{jobs}"
            if (warm / "grades" / "recorded").is_dir():
                shutil.copytree(warm / "grades" / "recorded", out / "recorded")
            before = probe()
            with PeakMemory() as mem:
                started = time.perf_counter()
                classroom.grade_class(base / "class", out, jobs=jobs, live_model=args.live_model, log=lambda s: None)
                wall = time.perf_counter() - started
            speed = (before + probe()) / 2
            results[jobs] = (wall, mem.peak, rows(out), speed)
        print(f"\n{args.students} students x {len(stems)} notebooks ({', '.join(s[:2] for s in stems)}), "
              f"{os.cpu_count()} cores, notebook 08's model {'run for every student' if args.live_model else 'recorded once'}")
        print(f"{'jobs':>4}  {'wall s':>7}  {'s/student':>9}  {'speed-up':>8}  {'probe s':>7}  {'speed-up at equal speed':>23}"
              f"  {'peak memory':>11}")
        one, one_speed = results[1][0], results[1][3]
        for jobs, (wall, peak, _, speed) in results.items():
            same = (one / one_speed) / (wall / speed)
            print(f"{jobs:>4}  {wall:>7.1f}  {wall / args.students:>9.1f}  {one / wall:>7.2f}x  {speed:>7.3f}  {same:>22.2f}x"
                  f"  {peak / 2**30:>8.2f} GiB")
        print("probe: a fixed single-threaded Python loop timed before and after each run (the mean shown); the last "
              "speed-up divides each run's wall time by its probe")
        print("same gradebook with 1 and 2 jobs:", "yes" if results[1][2] == results[2][2] else "NO")


if __name__ == "__main__":
    main()
