"""The default run: no --lens-dataset, the six generated scopes bundled in lens_fixtures."""

from __future__ import annotations

from pathlib import Path
from statistics import mean

import pytest

from pytest_lens.generator import DOMAINS
from pytest_lens.records.rows import read_artifact_json
from tests.support import assert_answered

REPO = Path(__file__).parents[2]
NO_CACHE = ("-p", "no:cacheprovider")


def test_default_run_uses_the_bundled_scopes_and_separates_null_from_bm25(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=null", "--lens-adapter=bm25", "--lens-budget=16k", "--lens-json=out.json", *NO_CACHE)
    assert_answered(result, 2 * 6 * 24)
    result.stdout.fnmatch_lines(
        [
            "data: 6 scope(s), 720 episodes, 144 questions*",
            "null * 144 * 0.000 *FAIL evidence_grounding 0.000 < 0.5",
            "bm25 * 144 * pass",
            "LENS verdict: FAIL - null: hard gate evidence_grounding 0.000 < 0.5",
        ]
    )
    assert "dataset defects" not in result.stdout.str()
    artifact = read_artifact_json(pytester.path / "out.json")
    assert {r["scope_id"] for r in artifact["results"]} == {f"{domain}_s01" for domain in DOMAINS}
    bm25 = [r for r in artifact["results"] if r["adapter"] == "bm25"]
    assert artifact["summary"]["bm25"]["composite"] > 0.5
    # Not trivially easy: one keyword search finds only part of the evidence a longitudinal question needs.
    longitudinal = mean(r["metrics"]["evidence_coverage"] for r in bm25 if r["question_type"] == "longitudinal")
    assert 0.1 < longitudinal < 0.8
    # Control questions have real key facts, and a plain keyword memory answers them.
    control = [r["metrics"]["fact_recall"] for r in bm25 if r["question_type"] == "null_hypothesis"]
    assert len(control) == 12 and mean(control) > 0.5


def test_the_hand_written_example_dataset_runs(pytester: pytest.Pytester) -> None:
    example = REPO / "examples" / "cold_chain_demo.json"
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-dataset={example}", *NO_CACHE)
    assert_answered(result, 8)
    result.stdout.fnmatch_lines(["bm25 *8 *pass", "LENS verdict: PASS"])
