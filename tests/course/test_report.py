"""The write-up: every section of the course's template, every number read from the results file."""
import copy
import difflib
import json
import re

import pytest

from raglab.course import artifacts
from raglab.course import report as report_module
from raglab.course.report import CHARTS, build_markdown, write_report
from raglab.surfaces.cli import main

SECTIONS = ["Use case and users", "Corpus", "System", "Evaluation set", "Results", "Failure analysis",
            "Risks and next steps", "Stretch experiments"]
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w)")


# Words of the template that hold a digit but no measurement: the names of a metric and an encoding,
# the model's token limit in a column name, how many retrieved ids a table shows, the cost table's units,
# its interval's name and what a question refused before any model call costs.
LABELS = ("UTF-8", "nDCG@10", "share over 256 tokens", "retrieved (top 3)", "$/1,000", "per 1,000 questions",
          "[95% CI]", "(0 tokens)")
DIGIT = re.compile(r"\d")
SHIFTABLE = re.compile("(" + "|".join(map(re.escape, LABELS)) + r")|\d")


def printed(markdown: str) -> list[str]:
    """The numbers of a report, in order (signs are printed apart), labels aside."""
    for label in LABELS:
        markdown = markdown.replace(label, "")
    return NUMBER.findall(markdown)


def fields(obj, path=()):
    """``(path, container, key, kind)`` of every field a printed number can come from: numbers, flags
    (counted), lists (their length), and strings or keys with digits in them."""
    for k, v in list(obj.items() if isinstance(obj, dict) else enumerate(obj)):
        if isinstance(obj, dict) and DIGIT.search(k):
            yield path + (k,), obj, k, "key"
        if isinstance(v, (dict, list)):
            if isinstance(v, list) and v:
                yield path + (k,), obj, k, "length"
            yield from fields(v, path + (k,))
        elif v is not None:
            kind = "flag" if isinstance(v, bool) else "number" if isinstance(v, (int, float)) else "text"
            if kind != "text" or DIGIT.search(v):
                yield path + (k,), obj, k, kind


def values_of(obj, key, kind) -> list[float]:
    """What a number printed from a field may be: its value, its length, a number written in it."""
    if kind in ("text", "key"):
        return [float(x) for x in NUMBER.findall(key if kind == "key" else obj[key])]
    return [len(obj[key]) if kind == "length" else float(obj[key])]


def _shift(text: str) -> str:
    """``text`` with every digit changed, labels aside."""
    return SHIFTABLE.sub(lambda m: m.group(1) or str((int(m.group()) + 3) % 10), text)


def _rekey(obj: dict, rename) -> None:
    """Rename ``obj``'s keys in place, keeping their order (tables are printed in it)."""
    items = list(obj.items())
    obj.clear()
    obj.update((rename(k), v) for k, v in items)


def _rename_metrics(obj, old: str, new: str) -> None:
    """Rename every key holding ``old``, e.g. ``recall@5`` when k changes from 5."""
    if isinstance(obj, dict):
        _rekey(obj, lambda k: k.replace(old, new))
    for v in obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else ():
        _rename_metrics(v, old, new)


def perturb(obj, key, kind):
    """Change one field in place so that any number printed from it changes; returns the undo."""
    if kind == "key":
        _rekey(obj, lambda k: _shift(k) if k == key else k)
        return lambda: _rekey(obj, lambda k: key if k == _shift(key) else k)
    v = obj[key]
    obj[key] = {"length": lambda: v + [copy.deepcopy(v[-1])], "flag": lambda: not v, "text": lambda: _shift(v),
                "number": lambda: v + 7 if isinstance(v, int) else v + 1.1234}[kind]()
    return lambda: obj.__setitem__(key, v)


def render(results: dict, charts: list[str]) -> list[str] | None:
    """The report's numbers, or None when these results cannot be rendered (a field the report looks up by name)."""
    try:
        return printed(build_markdown(results, charts))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None


def changed_positions(base: list[str], now: list[str]) -> list[int]:
    """Which of the report's numbers changed (by position; aligned when rows came or went)."""
    if len(base) == len(now):
        return [i for i, (a, b) in enumerate(zip(base, now)) if a != b]
    ops = difflib.SequenceMatcher(None, base, now, autojunk=False).get_opcodes()
    return [i for tag, i1, i2, _, _ in ops if tag != "equal" for i in range(i1, i2)]


def provenance(results: dict, charts: list[str]) -> tuple[list[str], list[list]]:
    """Each printed number and the fields of ``results`` it comes from: changing one field at a time,
    the numbers that change with it are the ones printed from it."""
    base = render(results, charts)
    owners = [[] for _ in base]
    for path, obj, key, kind in list(fields(results)):
        values = values_of(obj, key, kind)
        undo = perturb(obj, key, kind)
        try:
            now = render(results, charts)
            if now is None and kind == "number" and isinstance(obj[key], int):   # k also names metrics (recall@5)
                _rename_metrics(results, f"@{values[0]:g}", f"@{obj[key]}")
                now = render(results, charts)
                _rename_metrics(results, f"@{obj[key]}", f"@{values[0]:g}")
        finally:
            undo()
        for i in changed_positions(base, now) if now is not None else ():
            owners[i].append((path, kind, values))
    return base, owners


def matches(text: str, owners: list) -> bool:
    """A number as printed matches a field it comes from, rounded to the printed precision (or as a
    percentage), or the total of those fields (a sum, a count of flags or of rows)."""
    x = float(text)
    tol = 0.5 * 10 ** -(len(text.split(".")[1]) if "." in text else 0) + 1e-9
    singles = [v for _, _, values in owners for v in values]
    totals = [sum(values[0] for _, k, values in owners if k == kind) for kind in ("number", "flag", "length")]
    return any(abs(abs(v) - x) <= tol or abs(abs(100 * v) - x) <= tol for v in singles + totals)


def strays(results: dict, charts: list[str]) -> list[str]:
    """Printed numbers that no field explains: read from nowhere, or not equal to what they were read from."""
    base, owners = provenance(results, charts)
    return [f"#{i} {n}: " + ("read from no field" if not own else f"not the value of {[p for p, _, _ in own][:3]}")
            for i, (n, own) in enumerate(zip(base, owners)) if not own or not matches(n, own)]


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


def test_every_number_is_read_from_the_field_it_shows(report):
    md, _, results, where = report
    charts = [n for n in CHARTS if (where / f"{n}.png").exists()]
    assert printed(md) == render(results, charts) and len(printed(md)) > 100
    assert not strays(results, charts)


def test_a_number_typed_into_the_template_is_caught(report, monkeypatch):
    _, _, results, _ = report
    typed = report_module._evalset(results)       # the section as it reads today, frozen: the next run changes nothing
    monkeypatch.setattr(report_module, "_evalset", lambda r: typed)
    found = strays(results, [])
    n = results["evaluation"]["evalset"]["questions"]
    assert f"{n}: read from no field" in " ".join(found) and len(found) == len(printed("\n".join(typed)))


def test_a_changed_result_changes_the_report(project_artifacts, tmp_path):
    import shutil

    copy = tmp_path / "artifacts"
    shutil.copytree(project_artifacts, copy)
    results = artifacts.load_results(copy)
    results["evaluation"]["retrieval"]["bm25"]["mrr"] = {"value": 0.1234, "ci_low": 0.0567, "ci_high": 0.2891}
    results["access"]["leaks"]["FAISS, your rule"]["dense"] = 7
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
