"""An imported LongMemEval file judged by the judge model (``--lens-judge=llm``), through pytest and a local server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens_fixtures.openai_server import ChatRequest, LensPolicy, OpenAITestServer, Reply
from pytest_lens.records.rows import read_artifact_json
from tests.unit.datasets.importers.test_longmemeval import instance

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def lme_file(path: Path) -> Path:
    """Three LongMemEval instances in the public format: temporal, knowledge update, abstention."""
    records = [
        instance(),
        instance(question_id="upd_1", question_type="knowledge-update", answer="GPS system"),
        instance(question_id="gpt4_x_abs", question_type="multi-session", answer="You never mentioned a second car."),
    ]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def lme_scores(path: Path) -> dict[str, tuple[float | None, str | None]]:
    return {r["question_id"]: (r["metrics"].get("lme_answer"), r["judge"]) for r in read_artifact_json(path)["results"]}


def test_imported_longmemeval_is_judged_by_the_judge_model_and_replays_for_free(pytester: pytest.Pytester) -> None:
    data = f"--lens-dataset=longmemeval:{lme_file(pytester.path / 'lme.json')}"
    offline = pytester.runpytest("--lens-adapter=bm25", data, "--lens-json=offline.json", *QUIET)
    offline.assert_outcomes(passed=3)
    offline.stdout.fnmatch_lines(["  agent: offline *; judge: mechanical (offline)"])
    with OpenAITestServer() as server:
        base_url = server.base_url
        llm = [f"--lens-llm-base-url={base_url}", "--lens-judge=llm", "--lens-judge-model=scripted", "--lens-llm-retries=0"]
        record = pytester.runpytest("--lens-adapter=bm25", data, *llm, "--lens-llm-cache-mode=record", "--lens-json=record.json", *QUIET)
        record.assert_outcomes(passed=3)
        assert server.count(kind="lme_judge") == server.count() == 3
        server.reset()
        replay = pytester.runpytest("--lens-adapter=bm25", data, *llm, "--lens-llm-cache-mode=replay", "--lens-json=replay.json", *QUIET)
        replay.assert_outcomes(passed=3)
        assert server.count() == 0
    record.stdout.fnmatch_lines(
        [f"  agent: offline *; judge: llm (scripted at {base_url}; LongMemEval per-type criteria, JSON verdicts at temperature 0)"]
    )
    recorded = lme_scores(pytester.path / "record.json")
    assert recorded == lme_scores(pytester.path / "replay.json")
    # The scripted judge applies the proxy's rule, so the judge model agrees with the offline scores.
    assert {q: score for q, (score, _) in recorded.items()} == {
        q: score for q, (score, _) in lme_scores(pytester.path / "offline.json").items()
    }
    assert {judge for _, judge in recorded.values()} == {"llm"}


def test_the_judge_models_verdict_is_the_score(pytester: pytest.Pytester) -> None:
    data = f"--lens-dataset=longmemeval:{lme_file(pytester.path / 'lme.json')}"
    offline = pytester.runpytest("--lens-adapter=bm25", data, "--lens-json=offline.json", *QUIET)
    offline.assert_outcomes(passed=3)
    assert {score for score, _ in lme_scores(pytester.path / "offline.json").values()} == {0.0}  # extractive answers miss the gold

    def lenient(request: ChatRequest) -> Reply:
        return Reply(content=json.dumps({"correct": True, "reason": "Close enough."}))

    with OpenAITestServer(LensPolicy(lme_judge=lenient)) as server:
        llm = [f"--lens-llm-base-url={server.base_url}", "--lens-judge=llm", "--lens-judge-model=lenient", "--lens-llm-cache-mode=off"]
        judged = pytester.runpytest("--lens-adapter=bm25", data, *llm, "--lens-json=judged.json", *QUIET)
    judged.assert_outcomes(passed=3)
    assert {score for score, _ in lme_scores(pytester.path / "judged.json").values()} == {1.0}
    judged.stdout.fnmatch_lines(["bm25 *3 *1.000 *"])
