"""Notebooks render cleanly from cold caches: progress is one line updated in place (not a stderr block per
update), and running the notebooks prints no kernel transport warning into the main job's output."""
import os

import nbformat
import pytest

from raglab.course.workbook import execute, render_html
from raglab.base.progress import in_notebook, progress_bar


def test_outside_a_kernel_the_bar_is_tqdm_on_stderr():
    from tqdm import tqdm

    assert not in_notebook()
    bar = progress_bar(3, "embedding", "text")
    assert isinstance(bar, tqdm)
    bar.close()


def _notebook(tmp_path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    return path


def _stderr_lines(nb) -> list[int]:
    """Lines of each stderr output of an executed notebook."""
    return [len(o.text.splitlines()) for c in nb.cells for o in c.get("outputs", [])
            if o.output_type == "stream" and o.name == "stderr"]


@pytest.mark.slow
def test_in_a_kernel_the_bar_is_one_line_updated_in_place(tmp_path, capfd):
    path = _notebook(tmp_path, "import time\nfrom raglab.base.progress import progress_bar, in_notebook\n"
                               "assert in_notebook()\nbar = progress_bar(500, 'embedding', 'text')\n"
                               "for _ in range(500):\n    bar.update(1)\n    time.sleep(0.002)\nbar.close()")
    nb = execute(path, timeout=120)
    outputs = nb.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data"]           # one output, updated in place
    text = outputs[0].data["text/plain"]
    assert text.startswith("embedding: 100%") and "500/500" in text and "\n" not in text
    assert "without encryption" not in capfd.readouterr().err               # the kernel ran over local sockets


@pytest.fixture(scope="module")
def cold_notebook(tmp_path_factory):
    """A corpus of 240 short pages indexed with an empty embedding cache (so the bar shows), in a
    notebook executed headless and rendered to HTML: ``(executed notebook, html path)``."""
    tmp_path = tmp_path_factory.mktemp("cold")
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(240):
        (docs / f"page{i:03}.md").write_text(f"# Page {i}\n\nPage {i} explains topic number {i} in a sentence.\n")
    mp = pytest.MonkeyPatch()
    mp.setenv("RAGLAB_WORKDIR", str(tmp_path / "work"))                 # empty cache and index folder
    try:
        path = _notebook(tmp_path, "import raglab as rl\n"
                                   f"index = rl.get_index({str(docs)!r}, settings=rl.ChunkSettings('headings'))\n"
                                   "print(len(index.chunks), 'chunks')")
        nb = execute(path, timeout=600)
    finally:
        mp.undo()
    return nb, render_html(nb, tmp_path / "probe.html")


@pytest.mark.slow
def test_a_cold_notebook_on_a_tiny_corpus_has_no_long_stderr_block(cold_notebook):
    nb, html_path = cold_notebook
    outputs = nb.cells[0].outputs
    assert all(n <= 3 for n in _stderr_lines(nb)), _stderr_lines(nb)
    bars = [o for o in outputs if o.output_type == "display_data" and "embedding" in o.data.get("text/plain", "")]
    assert len(bars) == 1 and "240/240" in bars[0].data["text/plain"]
    html = html_path.read_text()
    assert html.count("240/240") == 1 and "text/s" in html


@pytest.mark.slow
def test_the_rendered_notebook_as_chromium_shows_it(cold_notebook, tmp_path):
    """Headless Chromium opens the rendered notebook: the progress line is visible once, no stderr
    block is longer than 3 lines, no empty ``Out`` prompt, and a screenshot is taken."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    browser = Path(__file__).parents[1] / "browser"
    chromium = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    if not chromium.exists() or shutil.which("node") is None or not (browser / "node_modules" / "playwright-core").exists():
        message = "needs Chromium, node and tests/browser/node_modules (./setup.sh --tests installs them)"
        if os.environ.get("RAGLAB_SKIP_BROWSER") == "1":      # the browser tests' own switch
            pytest.skip(message)
        pytest.fail(message)
    _, html_path = cold_notebook
    shot = tmp_path / "notebook.png"
    run = subprocess.run(["node", str(browser / "notebook.mjs"),
                          json.dumps({"file": str(html_path), "screenshot": str(shot), "expect": "240/240"})],
                         capture_output=True, text=True, timeout=180)
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen.get("ok"), seen
    assert all(n <= 3 for n in seen["stderrLines"]) and seen["emptyOutputs"] == 0 and seen["expectVisible"]
    assert shot.stat().st_size > 10_000
