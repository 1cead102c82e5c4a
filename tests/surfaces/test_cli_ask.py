"""`raglab ask` on the Python docs' default: a question naming what no page contains is refused, and the
refusal says which name; an answerable one is answered from the corpus's default chunking."""
import pytest

from raglab.surfaces.cli import main

pytestmark = pytest.mark.slow      # builds the small profile's default index (heading-aware, prefixed)


def test_an_unknown_name_is_refused_and_named(workdir, capsys):
    assert main(["index", "--profile", "small"]) == 0
    capsys.readouterr()
    assert main(["ask", "How do I configure retries in boto3?", "--profile", "small"]) == 0
    out = capsys.readouterr().out
    assert "I can't find this in the documentation." in out
    assert "the question names what no page contains: boto3" in out


def test_a_known_topic_is_answered_from_heading_aware_chunks(workdir, capsys):
    assert main(["ask", "Which exception does json.loads raise on invalid JSON?", "--profile", "small", "--json"]) == 0
    import json

    answer = json.loads(capsys.readouterr().out)
    assert not answer["refused"] and answer["citations"]
    assert all("#" in c["id"] and not c["id"].split("#")[1].isdigit() for c in answer["citations"])   # doc#section ids


def test_a_refusal_names_its_stage_and_number(workdir, capsys):
    import json

    assert main(["ask", "How do I configure retries in boto3?", "--profile", "small", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    detail = answer["refusal_detail"]
    assert answer["refused"] and detail["stage"] == answer["reason"] == "weak-evidence"
    assert detail["value"] == round(answer["evidence"], 4) < detail["threshold"] and detail["unknown_names"] == ["boto3"]
    assert main(["ask", "Which exception does json.loads raise on invalid JSON?", "--profile", "small", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["refusal_detail"] is None


def test_an_ask_loads_no_web_server(workdir):
    """A cold `raglab ask` imports neither FastAPI nor uvicorn (only `raglab serve` needs them)."""
    import subprocess
    import sys

    code = ("import sys; from raglab.surfaces.cli import main; "
            "rc = main(['ask', 'Which exception does json.loads raise on invalid JSON?', '--profile', 'small', '--json']); "
            "print(rc, sorted(m for m in ('fastapi', 'starlette', 'uvicorn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "0 []"
