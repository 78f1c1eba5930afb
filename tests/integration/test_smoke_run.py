from __future__ import annotations

import json

import pytest


def test_bm25_runs_the_bundled_scope_and_writes_the_artifact(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-json=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*LENS summary*", "bm25 *8 *pass", "LENS verdict: PASS"])
    artifact = json.loads((pytester.path / "out.json").read_text())
    assert [r["question_id"] for r in artifact["results"]][:2] == ["ccd_q01_null_hypothesis", "ccd_q02_distractor_resistance"]
    assert artifact["summary"]["bm25"]["gated"] is False
