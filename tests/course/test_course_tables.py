"""The README's tables that are made from the notebooks are what the notebooks hold: what a learner writes
(for each milestone notebook, the functions its write-it exercises ask for, every self-check's points and the
prose answers graded by hand), the milestones, and the grading page (``python -m raglab.course.points``
rewrites all three)."""
from pathlib import Path

import pytest

from raglab.course import blocks, points

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = points.WRITE_BEGIN, points.WRITE_END


def table() -> str:
    return "\n".join([BEGIN, points.what_you_write(), END])


def test_readme_table_of_what_you_write_is_the_notebooks():
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme
    shown = readme[readme.index(BEGIN):readme.index(END) + len(END)]
    assert shown == table(), "the README's table of what you write is stale; replace it with:\n" + table()


@pytest.mark.parametrize("markers", [(points.MILESTONES_BEGIN, points.MILESTONES_END),
                                     (points.GRADING_BEGIN, points.GRADING_END)], ids=["milestones", "grading page"])
def test_readme_blocks_are_the_notebooks(markers):
    readme = (ROOT / "README.md").read_text()
    body = points.readme_blocks()[markers]
    expected = "\n".join([markers[0], body, markers[1]])
    assert blocks.readme_block(readme, *markers) == expected, \
        "stale: run `python -m raglab.course.points` to rewrite the README's blocks"
