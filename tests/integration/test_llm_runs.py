"""LLM agent, LLM judge, request cache and fault handling, end to end through pytest and a real HTTP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.llm.settings import DEFAULT_CACHE_PATH
from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO, assert_answered

#: The inner runs need neither the cache provider nor hypothesis (whose import costs seconds per in-process run).
#: They use the small hand-written example scope (8 questions), not the bundled default.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", f"--lens-dataset={COLD_CHAIN_DEMO}")


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running


def llm_args(server: OpenAITestServer, *extra: str, json_name: str = "out.json") -> list[str]:
    return [
        "--lens-adapter=bm25",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        "--lens-judge=llm",
        f"--lens-llm-base-url={server.base_url}",
        "--lens-llm-retries=3",
        f"--lens-json={json_name}",
        *QUIET,
        *extra,
    ]


def scores(path: Path) -> dict[str, Any]:
    artifact = read_artifact_json(path)
    return {r["question_id"]: (r["answer"], r["metrics"], r["composite"], r["scorer_details"]) for r in artifact["results"]}


def requested_keys(path: Path) -> set[str]:
    """The cache keys the artifact's results say they used."""
    return {key for r in read_artifact_json(path)["results"] for key in r["llm_requests"] or ()}


def cached_keys(root: Path) -> set[str]:
    import sqlite3

    with sqlite3.connect(root / DEFAULT_CACHE_PATH) as db:
        return {key for (key,) in db.execute("SELECT key FROM llm_responses")}


def test_record_then_replay_gives_identical_scores_without_any_request(pytester: pytest.Pytester, server: OpenAITestServer) -> None:
    record = pytester.runpytest(*llm_args(server, "--lens-llm-cache-mode=record", json_name="record.json"))
    assert_answered(record, 8)
    sent = server.count(path="/v1/chat/completions")
    assert sent > 8 * 3  # agent turns, judgments, baselines
    assert {r.kind for r in server.requests} == {"agent", "judge", "baseline"}
    record.stdout.fnmatch_lines(
        [f"llm requests: {sent} (cache record, *: 0 hits, {sent} misses); http requests {sent}, retries 0, recovered 0 *, failures 0"]
    )

    server.reset()
    replay = pytester.runpytest(*llm_args(server, "--lens-llm-cache-mode=replay", json_name="replay.json"))
    assert_answered(replay, 8)
    assert server.count() == 0
    replay.stdout.fnmatch_lines([f"llm requests: {sent} (cache replay, *: {sent} hits, 0 misses); http requests 0, *"])
    recorded, replayed = scores(pytester.path / "record.json"), scores(pytester.path / "replay.json")
    assert replayed == recorded
    assert all("answer_quality" in metrics for _, metrics, _, _ in recorded.values())
    summary = read_artifact_json(pytester.path / "replay.json")["summary"]["bm25"]
    assert "longitudinal_advantage" in summary["metrics"]
    assert "naive_baseline_advantage" in summary["metrics"]
    # Each result names the cache entries it used (answered concurrently: 8 at once), together every entry recorded.
    assert requested_keys(pytester.path / "record.json") == requested_keys(pytester.path / "replay.json") == cached_keys(pytester.path)
    assert len(cached_keys(pytester.path)) == sent


def test_records_under_xdist_replay_serially(pytester: pytest.Pytester, server: OpenAITestServer) -> None:
    record = pytester.runpytest(*llm_args(server, "-n", "2", json_name="record.json"))
    assert_answered(record, 8)
    sent = server.count()
    record.stdout.fnmatch_lines([f"llm requests: {sent} (cache record, *: 0 hits, {sent} misses)*"])  # counted on the workers
    server.reset()
    replay = pytester.runpytest(*llm_args(server, "--lens-llm-cache-mode=replay", "--lens-concurrency=1", json_name="replay.json"))
    assert_answered(replay, 8)
    assert server.count() == 0
    assert scores(pytester.path / "replay.json") == scores(pytester.path / "record.json")
    # Recorded on the workers, replayed one question at a time: the same cache entries, all of them.
    assert requested_keys(pytester.path / "record.json") == requested_keys(pytester.path / "replay.json") == cached_keys(pytester.path)


def test_replay_misses_fail_the_question_naming_the_request(pytester: pytest.Pytester, server: OpenAITestServer) -> None:
    assert_answered(pytester.runpytest(*llm_args(server, "-k", "q01", json_name="record.json")), 1)
    result = pytester.runpytest(*llm_args(server, "--lens-llm-cache-mode=replay", "-k", "q01 or q02"))
    assert_answered(result, 1, failed=1)
    result.stdout.fnmatch_lines(
        ["*--lens-llm-cache-mode=replay: the agent request to scripted * cannot be replayed: it is not in the cache*"]
    )


def test_replay_without_a_cache_is_a_usage_error(pytester: pytest.Pytester, server: OpenAITestServer) -> None:
    result = pytester.runpytest(*llm_args(server, "--lens-llm-cache-mode=replay"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no LLM cache at *llm-cache.sqlite; record one first with --lens-llm-cache-mode=record*"])


def test_permanent_judge_failures_are_counted_and_flag_the_run(pytester: pytest.Pytester) -> None:
    with OpenAITestServer(faults=[Fault("status", rate=0.2, status=500, permanent=True, only="judge")]) as server:
        result = pytester.runpytest(*llm_args(server, "--lens-llm-cache-mode=off"))
        failed_judge_requests = server.count(kind="judge", status=500)
    assert_answered(result, 8)  # the answers were fine; their judge metrics are what is missing
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    artifact = read_artifact_json(pytester.path / "out.json")
    hit = [r for r in artifact["results"] if r["scoring_failures"]]
    assert hit
    assert failed_judge_requests == 4 * sum(r["scorer_details"]["judge"]["failed_judgments"] for r in hit)
    assert artifact["summary"]["bm25"]["scoring_failures"] == len(hit)
    for r in hit:
        failed_metrics = {failure.split(":")[1].strip() for failure in r["scoring_failures"]}
        assert not failed_metrics & set(r["metrics"])  # absent, never a TIE
    n = len(hit)
    result.stdout.fnmatch_lines(
        [
            f"judge failures (questions with a metric left absent): bm25 {n}/8",
            f"  FAIL  --lens-judge-max-failures=0.05: bm25: judge failed on {n} of 8 questions (*%); their judge metrics are absent",
            f"LENS verdict: FAIL - --lens-judge-max-failures=0.05: bm25: judge failed on {n} of 8 questions (*%)*",
        ]
    )


def test_a_higher_failure_threshold_accepts_the_same_failures(pytester: pytest.Pytester) -> None:
    with OpenAITestServer(faults=[Fault("status", rate=0.2, status=500, permanent=True, only="judge")]) as server:
        result = pytester.runpytest(*llm_args(server, "--lens-llm-cache-mode=off", "--lens-judge-max-failures=100%"))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["judge failures (questions with a metric left absent): bm25 */8", "LENS verdict: PASS"])


def test_transient_500s_give_the_same_scores_as_a_clean_run(pytester: pytest.Pytester) -> None:
    with OpenAITestServer() as clean:
        assert_answered(pytester.runpytest(*llm_args(clean, "--lens-llm-cache-mode=off", json_name="clean.json")), 8)
        clean_requests = clean.count()
    with OpenAITestServer(faults=[Fault("status", rate=0.2, status=500)]) as flaky:
        result = pytester.runpytest(*llm_args(flaky, "--lens-llm-cache-mode=off", json_name="flaky.json"))
        errors = flaky.count(status=500)
        recovered = len({json.dumps(r.body, sort_keys=True) for r in flaky.requests if r.status == 500})
    assert_answered(result, 8)
    assert result.ret == pytest.ExitCode.OK
    assert errors >= 0.1 * clean_requests
    assert flaky.count(status=200) == clean_requests
    result.stdout.fnmatch_lines(
        [
            f"llm requests: {clean_requests} (cache off: 0 hits, {clean_requests} misses); "
            f"http requests {clean_requests + errors}, retries {errors}, "
            f"recovered {recovered} (answered after a retry or a trimmed resend), failures 0"
        ]
    )
    assert scores(pytester.path / "flaky.json") == scores(pytester.path / "clean.json")


def test_the_offline_judge_fills_the_same_metrics_and_is_labelled(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-judge=offline", "--lens-json=out.json", *QUIET)
    assert_answered(result, 8)
    result.stdout.fnmatch_lines(["agent: offline *; judge: offline (deterministic: key-fact matching with aliases*no LLM)"])
    artifact = read_artifact_json(pytester.path / "out.json")
    assert artifact["run"]["judge"]["name"] == "offline"
    assert {r["judge"] for r in artifact["results"]} == {"offline"}
    metrics = artifact["summary"]["bm25"]["metrics"]
    assert {
        "answer_quality",
        "insight_depth",
        "reasoning_quality",
        "action_quality",
        "naive_baseline_advantage",
        "longitudinal_advantage",
    } <= set(metrics)
    assert not (pytester.path / ".lens").exists()  # no LLM configured: no cache file either


def test_statistics_include_run_level_metrics_that_carry_weight(pytester: pytest.Pytester) -> None:
    # longitudinal_advantage exists only per run; given weight, the CI must be of the composite shown, which includes it.
    result = pytester.runpytest(
        "--lens-adapter=bm25", "--lens-judge=offline", "--lens-weights=longitudinal_advantage=0.5", "--lens-json=out.json", *QUIET
    )
    assert_answered(result, 8)
    artifact = read_artifact_json(pytester.path / "out.json")
    composite = artifact["summary"]["bm25"]["composite"]
    estimate = artifact["statistics"]["adapters"]["bm25"]["composite"]
    assert estimate["value"] == pytest.approx(composite, abs=1e-6)
    assert estimate["low"] <= composite <= estimate["high"]


def test_without_a_judge_nothing_judge_based_appears(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-json=out.json", *QUIET)
    result.stdout.fnmatch_lines(["agent: offline *; judge: none (tier-2/3 metrics absent)"])
    artifact = read_artifact_json(pytester.path / "out.json")
    assert artifact["run"]["judge"] is None
    assert artifact["run"]["llm"] is None
    assert not {"answer_quality", "longitudinal_advantage"} & set(artifact["summary"]["bm25"]["metrics"])


def test_compaction_is_skipped_with_the_reason_when_no_llm_is_configured(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=compaction", "-rs", *QUIET)
    result.assert_outcomes(skipped=8)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "skipped compaction (8 questions): *",
            "SKIPPED * compaction needs an LLM to write its summary: pass --lens-llm-base-url and --lens-agent-model*",
        ]
    )


def test_compaction_runs_against_an_endpoint(pytester: pytest.Pytester, server: OpenAITestServer) -> None:
    args = ["--lens-adapter=compaction", "--lens-adapter=bm25", f"--lens-llm-base-url={server.base_url}", "--lens-agent-model=scripted"]
    result = pytester.runpytest(*args, "--lens-json=out.json", *QUIET)
    assert_answered(result, 16)
    assert server.count(kind="summary") > 0
    assert server.count(kind="agent") == 0
    artifact = read_artifact_json(pytester.path / "out.json")
    compaction = [r for r in artifact["results"] if r["adapter"] == "compaction"]
    assert all(r["cited_refs"] == ["compaction_summary"] for r in compaction if r["cited_refs"])
    assert artifact["summary"]["compaction"]["metrics"]["evidence_grounding"] > 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lens-agent=llm"], "*--lens-agent=llm needs --lens-agent-model=NAME*"),
        (["--lens-judge=llm"], "*--lens-judge=llm needs --lens-judge-model=NAME (or --lens-agent-model)*"),
        (["--lens-judge-max-failures=2"], "*--lens-judge-max-failures: must be a fraction between 0 and 1*"),
        (["--lens-llm-retries=-1"], "*--lens-llm-retries: must be a whole number, at least 0; got '-1'*"),
    ],
)
def test_llm_usage_errors_name_the_option(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_the_api_key_never_reaches_the_cache_the_artifact_or_the_output(
    pytester: pytest.Pytester, server: OpenAITestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-lens-integration-9f8e7d6c5b4a"
    monkeypatch.setenv("MY_LLM_KEY", secret)
    result = pytester.runpytest(*llm_args(server, "--lens-llm-api-key-env=MY_LLM_KEY", "-k", "q01 or q07", "-v"))
    assert_answered(result, 2)
    assert {r.authorization for r in server.requests} == {f"Bearer {secret}"}
    assert secret not in "\n".join(result.outlines + result.errlines)
    for path in [pytester.path / "out.json", *(pytester.path / ".lens").iterdir()]:
        assert secret.encode() not in path.read_bytes(), path
    assert read_artifact_json(pytester.path / "out.json")["run"]["llm"]["api_key_env"] == "MY_LLM_KEY"


def test_ini_keys_configure_the_llm(pytester: pytest.Pytester, server: OpenAITestServer) -> None:
    pytester.makeini(
        f"""
        [pytest]
        lens_adapters = bm25
        lens_agent = llm
        lens_agent_model = scripted
        lens_judge = llm
        lens_llm_base_url = {server.base_url}
        lens_llm_cache = cache/llm.sqlite
        """
    )
    result = pytester.runpytest("-k", "q03", *QUIET)
    assert_answered(result, 1)
    assert (pytester.path / "cache" / "llm.sqlite").is_file()
    assert server.count(kind="judge") > 0


def test_a_judge_base_url_sends_the_judges_requests_there_and_the_rest_to_the_run_endpoint(
    pytester: pytest.Pytester, server: OpenAITestServer
) -> None:
    with OpenAITestServer() as judge:
        judge_url = judge.base_url
        result = pytester.runpytest(*llm_args(server, f"--lens-judge-base-url={judge_url}", "--lens-judge-model=big-judge"))
        assert_answered(result, 8)
        assert {r.kind for r in judge.requests} == {"judge"} and {r.body["model"] for r in judge.requests} == {"big-judge"}
    assert {r.kind for r in server.requests} == {"agent", "baseline"}  # the agent and the naive baseline stay on the run's
    run = json.loads((pytester.path / "out.json").read_text())["run"]
    assert run["llm"]["judge_base_url"] == judge_url and run["llm"]["judge_model"] == "big-judge"
