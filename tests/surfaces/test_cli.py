"""The command line: every chunking strategy on both corpora, JSON output, clear errors."""
import json

import pytest

from raglab.book.chunking import Chunk, ChunkSettings, chunk_corpus
from raglab.base.files import read_jsonl
from raglab.infra.tokenizer import load_tokenizer
from raglab.surfaces.cli import main


@pytest.mark.parametrize("corpus", ["python-docs", "helpcenter"])
@pytest.mark.parametrize("strategy", ["words", "chars", "large", "headings", "recursive", "tokens", "parent"])
def test_chunk_writes_every_chunk_as_jsonl(corpus, strategy, tmp_path, capsys, python_docs, helpcenter):
    out = tmp_path / "chunks.jsonl"
    assert main(["chunk", "--corpus", corpus, "--strategy", strategy, "--prefix", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    docs = python_docs if corpus == "python-docs" else helpcenter
    expected = chunk_corpus(docs, ChunkSettings(strategy, prefix=True), tokenizer=load_tokenizer())
    written = [Chunk.from_dict(r) for r in read_jsonl(out)]
    assert written == expected
    assert summary["chunks"] == len(expected) and summary["strategy"] == strategy and summary["prefix"] is True
    assert summary["over_256_tokens"] <= summary["chunks"]
    assert [p.name for p in tmp_path.iterdir()] == ["chunks.jsonl"]  # no temporary file left


def test_corpus_info_json(capsys):
    assert main(["corpus", "info", "--corpus", "helpcenter", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["documents"] >= 15 and info["access_groups"]["premium"] >= 3


def test_errors_are_one_clear_line_and_write_nothing(tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    assert main(["chunk", "--corpus", "nope", "--out", str(out)]) == 2
    assert "unknown corpus 'nope'" in capsys.readouterr().err
    assert main(["chunk", "--strategy", "words", "--size", "10", "--overlap", "10", "--out", str(out)]) == 2
    assert "overlap must be" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(SystemExit):
        main(["chunk", "--strategy", "sentences", "--out", str(out)])


def test_race_prints_the_table_and_writes_the_run(tmp_path, capsys, workdir):
    """`raglab race` on the help center: one line per chunking (hybrid) and a JSON run that load_race reads back."""
    from raglab.evaluation.chunking_lab import load_race

    out = tmp_path / "race.json"
    assert main(["race", "--corpus", "helpcenter", "--profile", "small", "--strategy", "tokens",
                 "--json", str(out), "--plots", str(tmp_path / "plots")]) == 0
    printed = capsys.readouterr().out
    assert "tokens 256/32" in printed and "headings 150/30 +prefix" in printed
    table, per_question, meta = load_race(out)
    assert sorted(table.retriever.unique()) == ["bm25", "dense", "hybrid"] and meta["split"] == "all"
    assert len(per_question) == len(table) * table.questions.iloc[0]
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "race_hit_by_type.png", "race_recall_vs_index_time.png", "race_recall_vs_tokens.png"]
