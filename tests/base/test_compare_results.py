"""scripts/compare_results.py: the before/after check of a change that must not change any result."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compare_results.py"

BEFORE = {"retrieval": {"hybrid": {"recall@5": {"value": 0.806, "ci_low": 0.677}}, "latency_p50_ms": 12.5},
          "bakeoff": [{"chunker": "words 150/30", "mrr": 0.5}], "corpus": {"profile": "small", "path": "/a/b"}}


def run(tmp_path, after) -> subprocess.CompletedProcess:
    (tmp_path / "a.json").write_text(json.dumps(BEFORE))
    (tmp_path / "b.json").write_text(json.dumps(after))
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "a.json"), str(tmp_path / "b.json")],
                          capture_output=True, text=True)


def test_identical_results_pass_with_timings_and_paths_aside(tmp_path):
    after = json.loads(json.dumps(BEFORE))
    after["retrieval"]["latency_p50_ms"] = 99.0
    after["corpus"]["path"] = "/elsewhere"
    out = run(tmp_path, after)
    assert out.returncode == 0, out.stdout
    assert "5 result values compared" in out.stdout and ": 0 differ" in out.stdout


def test_a_changed_number_a_changed_string_and_a_missing_key_fail(tmp_path):
    after = json.loads(json.dumps(BEFORE))
    after["retrieval"]["hybrid"]["recall@5"]["value"] = 0.807
    after["corpus"]["profile"] = "full"
    del after["bakeoff"][0]["mrr"]
    out = run(tmp_path, after)
    assert out.returncode == 1
    assert ".retrieval.hybrid.recall@5.value: 0.806 -> 0.807" in out.stdout
    assert ".corpus.profile: 'small' -> 'full'" in out.stdout
    assert ".bakeoff[0].mrr: only in before" in out.stdout
