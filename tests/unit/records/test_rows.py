"""A run's rows file: written as results are recorded, put in case order, read back whole or without transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.analysis.run import analyze_run
from pytest_lens.analysis.summary import summarize
from pytest_lens.records.results import TRANSCRIPT_FIELDS, QuestionResult, RunArtifact, ScoredResult
from pytest_lens.records.rows import FileRows, RowWriter, rows_path
from pytest_lens.runs.storage import load_run, write_run
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS


@pytest.fixture
def written(tmp_path: Path, example_run: RunArtifact) -> RunArtifact:
    write_run(tmp_path / "run.json", example_run)
    return load_run(tmp_path / "run.json")


def test_rows_read_for_computing_keep_every_field_but_the_transcript(written: RunArtifact, example_run: RunArtifact) -> None:
    scored, whole = list(written.results.scored()), list(written.results)
    assert [r.model_dump() for r in whole] == [r.model_dump() for r in example_run.results]
    assert all(type(r) is ScoredResult for r in scored)
    for light, full in zip(scored, whole, strict=True):
        for name in QuestionResult.model_fields:
            assert getattr(light, name) == (getattr(full, name) if name not in TRANSCRIPT_FIELDS else getattr(ScoredResult.of({}, 0), name))
        assert light.tool_call_count == full.tool_call_count == len(full.tool_calls) > 0
        assert light.model_copy(update={"composite": 0.5}).tool_call_count == full.tool_call_count


def test_what_a_run_adds_up_to_is_the_same_from_scored_rows(written: RunArtifact) -> None:
    # Summaries and statistics read nothing of the transcript: computed from scored rows they are the whole rows' figures.
    scored, whole = list(written.results.scored()), list(written.results)
    assert summarize(scored, DEFAULT_WEIGHTS, DEFAULT_GATES) == summarize(whole, DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert analyze_run(scored, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=3) == analyze_run(whole, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=3)
    # ... and the check can fail: a tool call count lost on reading changes the summary.
    lost = [r.model_copy(update={"composite": r.composite}) for r in scored]
    for result in lost:
        result.__pydantic_private__ = {"_tool_calls": 0}
    assert summarize(lost, DEFAULT_WEIGHTS, DEFAULT_GATES) != summarize(whole, DEFAULT_WEIGHTS, DEFAULT_GATES)


def test_rows_recorded_out_of_order_are_put_in_case_order(tmp_path: Path, example_run: RunArtifact) -> None:
    results = list(example_run.results)
    order = {r.item_key: index for index, r in enumerate(results)}
    writer = RowWriter(tmp_path / "run.rows.jsonl")
    shuffled = [*results[10:], *results[:10]]
    for result in shuffled:
        writer.write(result)
    on_disk = [json.loads(line)["question_id"] for line in (tmp_path / "run.rows.jsonl").read_text().splitlines()]
    assert on_disk == [r.question_id for r in shuffled]  # as recorded, each flushed at once
    rows = writer.finish(lambda key: order[key])
    assert rows.count == len(results)
    assert [r.model_dump() for r in FileRows(tmp_path / "run.rows.jsonl", rows.count)] == [r.model_dump() for r in results]


def test_a_result_recorded_again_replaces_the_first(tmp_path: Path, example_run: RunArtifact) -> None:
    first, second = list(example_run.results)[:2]
    writer = RowWriter(tmp_path / "run.rows.jsonl")
    for result in (first, second, first.model_copy(update={"answer": "again"})):
        writer.write(result)
    rows = writer.finish(lambda key: (key != first.item_key, key))
    kept = list(FileRows(tmp_path / "run.rows.jsonl", rows.count))
    assert [(r.item_key, r.answer) for r in kept] == [(first.item_key, "again"), (second.item_key, second.answer)]


def test_rows_in_order_are_not_written_twice(tmp_path: Path, example_run: RunArtifact) -> None:
    results = list(example_run.results)
    writer = RowWriter(tmp_path / "run.rows.jsonl")
    for result in results:
        writer.write(result)
    inode = (tmp_path / "run.rows.jsonl").stat().st_ino
    order = {r.item_key: index for index, r in enumerate(results)}
    rows = writer.finish(lambda key: order[key])
    assert (tmp_path / "run.rows.jsonl").stat().st_ino == inode  # the file as streamed: already in order
    assert rows == write_run(tmp_path / "again.json", example_run).model_copy(update={"file": "run.rows.jsonl"})


def test_rows_path_is_beside_the_document() -> None:
    assert rows_path(Path("out/run.json")) == Path("out/run.rows.jsonl")
    assert rows_path(Path("run")) == Path("run.rows.jsonl")
