from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lens.records.results import RunArtifact
from pytest_lens.runs.merge import MergeError, merge_runs
from tests.support import run_lens_session


def test_runs_of_different_adapters_merge_into_one_comparison(tmp_path: Path, example_run: RunArtifact) -> None:
    bm25 = run_lens_session(tmp_path / "a", {"bm25": "bm25"}).artifact()
    null = run_lens_session(tmp_path / "b", {"null": "null"}).artifact()
    merged = merge_runs([("a.json", bm25), ("b.json", null)])
    assert len(merged.results) == len(bm25.results) + len(null.results)
    assert list(merged.summary) == ["bm25", "null"]
    assert merged.summary["bm25"].composite == example_run.summary["bm25"].composite
    assert merged.statistics is not None and [(p.first, p.second) for p in merged.statistics.pairs] == [("bm25", "null")]
    assert merged.verdict is not None and merged.verdict.exit_code == 1  # null is gated, whichever run it came from
    assert any("null" in reason for reason in merged.verdict.reasons)
    assert merged.run.merged_from == ["a.json", "b.json"]
    assert [a["label"] for a in merged.run.adapters or []] == ["bm25", "null"]
    assert set(merged.evidence["cold_chain_demo"].texts) >= set(null.evidence["cold_chain_demo"].texts)


def test_the_same_question_twice_is_an_error(example_run: RunArtifact) -> None:
    with pytest.raises(MergeError, match=r"is in both a.json and b.json"):
        merge_runs([("a.json", example_run), ("b.json", example_run)])
    assert merge_runs([("only.json", example_run)]) is example_run


def test_a_repeated_run_is_not_merged(example_run: RunArtifact) -> None:
    repeated = example_run.model_copy(update={"run": example_run.run.model_copy(update={"repeat": 3})})
    with pytest.raises(MergeError, match=r"b.json answered each question several times \(--lens-repeat\)"):
        merge_runs([("a.json", example_run), ("b.json", repeated)])


def test_runs_measured_differently_are_not_merged_and_the_merged_card_covers_every_run(tmp_path: Path) -> None:
    bm25 = run_lens_session(tmp_path / "a", {"bm25": "bm25"}).artifact()
    null = run_lens_session(tmp_path / "b", {"null": "null"}).artifact()
    merged = merge_runs([("a.json", bm25), ("b.json", null)])
    assert merged.run.card is not None and merged.run.card.selection == bm25.card.selection  # the same questions, two adapters
    assert merged.run.card.test == "paired t-test over the questions (t(questions - 1))"  # the merge treats questions as units
    judged = null.model_copy(update={"run": null.run.model_copy(update={"card": null.card.model_copy(update={"judge": "offline"})})})
    with pytest.raises(MergeError, match=r"b.json and a.json are unlike runs: judge differs: this run offline, a.json none; merge runs"):
        merge_runs([("a.json", bm25), ("b.json", judged)])
