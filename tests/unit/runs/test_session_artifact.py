"""The run artifact is built once per set of results: the JSON file, the HTML report and the saved run share it."""

from __future__ import annotations

from pathlib import Path

from tests.support import run_lens_session


def test_the_artifact_is_built_once_and_rebuilt_when_the_results_change(tmp_path: Path) -> None:
    session = run_lens_session(tmp_path, {"bm25": "bm25"})
    first = session.artifact()
    assert session.artifact() is first  # written as JSON, as HTML and as the saved run: one document

    result = first.results[0]
    session.record(result.model_copy(update={"composite": 0.0}))
    rebuilt = session.artifact()
    assert rebuilt is not first
    assert rebuilt.results[0].composite == 0.0

    session.add_problems(["a group ran on two workers"])
    problem = session.artifact()
    assert problem is not rebuilt
    assert "a group ran on two workers" in problem.verdict.reasons
    assert problem.verdict.exit_code != 0
