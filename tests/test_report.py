"""The write-up: every section of the course's template, every number read from the results file."""
import json
import re

import pytest

from raglab import artifacts
from raglab.cli import main
from raglab.report import CHARTS, write_report

SECTIONS = ["Use case and users", "Corpus", "System", "Evaluation set", "Results", "Failure analysis",
            "Risks and next steps", "Stretch experiments"]
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w)")


def numbers_in(obj, out=None):
    """Every number in a JSON value: numeric values, and numbers written inside keys and strings."""
    out = [] if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            numbers_in(k, out)
            numbers_in(v, out)
    elif isinstance(obj, list):
        for v in obj:
            numbers_in(v, out)
    elif isinstance(obj, bool) or obj is None:
        pass
    elif isinstance(obj, (int, float)):
        out.append(float(obj))
    elif isinstance(obj, str):
        out.extend(float(m) for m in NUMBER.findall(obj))
    return out


def found(text: str, values: list[float]) -> bool:
    """A number as printed (signs are printed apart) matches a value rounded to the printed precision,
    or the value as a percentage."""
    x = float(text)
    decimals = len(text.split(".")[1]) if "." in text else 0
    tol = 0.5 * 10 ** -decimals + 1e-9
    return any(abs(abs(v) - x) <= tol or abs(abs(100 * v) - x) <= tol for v in values)


@pytest.fixture(scope="module")
def report(project_artifacts, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    md, page = write_report(project_artifacts, out)
    return md.read_text(), page.read_text(), artifacts.load_results(project_artifacts), project_artifacts


def test_every_section_of_the_template_is_there(report):
    md, page, results, _ = report
    headings = re.findall(r"^## (.+)$", md, flags=re.M)
    assert [h for h in headings if h in SECTIONS] == SECTIONS
    for section in SECTIONS:
        body = md.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
        assert len(body.split()) > 20, section
    assert "| dense |" in md and "| bm25 |" in md and "| hybrid |" in md        # the retrieval table
    for name in ("Query rewriting", "long-context baseline", "Cost and latency", "Chunk size"):
        assert name in md
    assert "Not run" not in md                                                   # every experiment ran


def test_every_number_is_read_from_the_results_file(report):
    md, _, results, _ = report
    values = numbers_in(results)
    printed = NUMBER.findall(md)
    assert len(printed) > 100
    stray = [n for n in printed if not found(n, values)]
    assert not stray, f"numbers not in the results file: {stray[:20]}"


def test_a_changed_result_changes_the_report(project_artifacts, tmp_path):
    import shutil

    copy = tmp_path / "artifacts"
    shutil.copytree(project_artifacts, copy)
    results = artifacts.load_results(copy)
    results["evaluation"]["retrieval"]["bm25"]["mrr"] = {"value": 0.1234, "ci_low": 0.0567, "ci_high": 0.2891}
    results["access"]["leaks"]["FAISS"]["dense"] = 7
    artifacts.save_json(artifacts.RESULTS, results, copy)
    md = write_report(copy, tmp_path / "report")[0].read_text()
    assert "0.123 [0.057, 0.289]" in md
    assert ": 7 restricted chunks retrieved" in md


def test_the_html_is_self_contained_with_the_charts_embedded(report):
    md, page, _, where = report
    charts = [n for n in CHARTS if (where / f"{n}.png").exists()]
    assert len(charts) >= 5
    assert page.count('<img src="data:image/png;base64,') == len(charts)
    assert not re.search(r'(src|href)="(?!data:|#|https?:)', page)
    assert page.count("<table>") == md.count("\n|---") and "<h2>Failure analysis</h2>" in page


def test_the_command_and_a_clear_error_without_results(project_artifacts, tmp_path, capsys):
    assert main(["report", "--artifacts", str(project_artifacts), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "report.html").exists() and "report:" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "results.json").write_text(json.dumps({"corpus": {}}))
    assert main(["report", "--artifacts", str(tmp_path / "empty"), "--out", str(tmp_path / "r2")]) == 2
    err = capsys.readouterr().err
    assert "results.json: sections evaluation, access missing" in err
    assert not (tmp_path / "r2" / "report.html").exists()
