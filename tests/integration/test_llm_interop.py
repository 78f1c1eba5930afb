"""The LLM path against servers that misbehave the way real ones do, through pytest and a real HTTP server.

Each test makes the local server reproduce one behaviour met on real servers (llama.cpp's tool handling,
a model that never stops, prose instead of a verdict, non-JSON 200 bodies, a model with a small context,
an endpoint that is down) and shows what pytest-lens does about it.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import openai
import pytest

from lens_fixtures.openai_server import Fault, LensPolicy, OpenAITestServer, ScriptedAgentPolicy
from pytest_lens.records.rows import read_artifact_json
from tests.integration.test_llm_runs import QUIET, llm_args, scores
from tests.support import assert_answered

CAPACITY = Path(__file__).parents[2] / "src" / "pytest_lens" / "datasets" / "data" / "capacity_regime_s01.json"


def artifact(pytester: pytest.Pytester, name: str = "out.json") -> dict[str, Any]:
    data: dict[str, Any] = read_artifact_json(pytester.path / name)
    return data


def tool_calls(data: dict[str, Any]) -> int:
    return sum(len(result["tool_calls"]) for result in data["results"])


# -- tools reach the model ------------------------------------------------------------------------------------


def test_in_llama_cpp_mode_the_agent_still_calls_tools(pytester: pytest.Pytester) -> None:
    with OpenAITestServer(tools_need_choice=True, strict_messages=True) as server:
        # The mode reproduces llama.cpp: without tool_choice the model does not see the tools.
        raw = openai.OpenAI(base_url=server.base_url, api_key="x").chat.completions.create(
            model="scripted",
            messages=[{"role": "user", "content": "What happened to compressor C-2?"}],
            tools=[{"type": "function", "function": {"name": "memory_search", "parameters": {"type": "object"}}}],
        )
        assert raw.choices[0].message.tool_calls is None
        server.reset()
        result = pytester.runpytest(*llm_args(server, "--lens-judge=none"))
        bodies = [r.body for r in server.requests if r.kind == "agent"]
    assert_answered(result, 8)
    assert {body.get("tool_choice") for body in bodies} == {"auto"}
    assert server.count(status=500) == 0  # assistant turns with tool calls carry "" as content, never null
    calls = tool_calls(artifact(pytester))
    assert calls >= 16  # search and batch_retrieve on every question
    result.stdout.no_fnmatch_line("*never called a tool*")


def test_a_model_that_never_calls_a_tool_is_named_in_the_summary(pytester: pytest.Pytester) -> None:
    answers = LensPolicy(agent=ScriptedAgentPolicy(["Pressure rose steadily [ep_003]."]))
    with OpenAITestServer(answers) as server:
        result = pytester.runpytest(*llm_args(server, "--lens-judge=none"))
    assert tool_calls(artifact(pytester)) == 0
    result.stdout.fnmatch_lines(
        ["warning: bm25: the model never called a tool on any of its 8 questions — does the server support tool calling?*"]
    )


# -- every request is bounded ---------------------------------------------------------------------------------


def test_a_rambling_model_is_stopped_by_max_tokens_within_the_timeout(pytester: pytest.Pytester) -> None:
    timeout, retries = 5.0, 1
    ramble = [Fault("ramble", permanent=True)]
    with OpenAITestServer(faults=ramble, context_tokens=8192, seconds_per_token=0.002) as server:
        started = time.perf_counter()
        result = pytester.runpytest(
            *llm_args(server, "--lens-llm-cache-mode=off", f"--lens-llm-timeout={timeout}", f"--lens-llm-retries={retries}"),
            "--lens-agent-max-tokens=200",
            "-k",
            "q01 or q05",
        )
        wall = time.perf_counter() - started
        answered = [r for r in server.requests if r.path == "/v1/chat/completions"]
        # Unbounded, the same model generates until the context is full: longer than the client waits.
        unbounded = openai.OpenAI(base_url=server.base_url, api_key="x", timeout=timeout, max_retries=0)
        with pytest.raises(openai.APITimeoutError):
            unbounded.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "Tell me about it."}])
    assert_answered(result, 2)
    limits = {"agent": 200, "baseline": 200, "judge": 16}
    assert {r.kind for r in answered} == set(limits)
    for request in answered:
        assert request.status == 200
        assert request.body["max_tokens"] == limits[request.kind]
        assert request.elapsed_s < timeout  # no request outlived the client's timeout, so none was retried
    out = artifact(pytester)
    assert sum(r["llm"]["retries"] for r in out["results"]) == 0
    assert all(r["agent_tokens"] > 0 and r["answer"].startswith("well and then") for r in out["results"])
    # Every judge reply rambled past its 16 tokens: judge failures, not verdicts.
    result.stdout.fnmatch_lines(["*FAIL  --lens-judge-max-failures=0.05: bm25: judge failed on 2 of 2 questions (100%)*"])
    assert wall < 2 * 60  # two questions; an unbounded request alone would have taken 16 s per attempt


# -- verdicts are strict --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply", ["I refuse to give a verdict", "As a language model I cannot judge this", "Both mention it; I would call it a draw"]
)
def test_judge_prose_is_a_judge_failure_that_fails_the_run(pytester: pytest.Pytester, reply: str) -> None:
    with OpenAITestServer(faults=[Fault("content", text=reply, permanent=True, only="judge")]) as server:
        result = pytester.runpytest(*llm_args(server, "--lens-llm-cache-mode=off", "-k", "q05 or q07"))
        judge_requests = server.count(kind="judge")
    assert_answered(result, 2)  # the answers were fine
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = artifact(pytester)
    for entry in out["results"]:
        assert not {"answer_quality", "insight_depth", "reasoning_quality", "naive_baseline_advantage"} & set(entry["metrics"])
        judgments = entry["scorer_details"]["judge"]["judgments"]
        assert all("winner" not in j and "no usable verdict" in j["error"] for j in judgments)
    assert judge_requests == 2 * sum(len(r["scorer_details"]["judge"]["judgments"]) for r in out["results"])  # one repair each
    result.stdout.fnmatch_lines(
        [
            "  FAIL  --lens-judge-max-failures=0.05: bm25: judge failed on 2 of 2 questions (100%); their judge metrics are absent",
            "LENS verdict: FAIL - --lens-judge-max-failures=0.05: *",
        ]
    )


# -- failures are failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["not_json", "truncated"])
def test_non_json_200s_are_retried_counted_and_change_no_score(pytester: pytest.Pytester, kind: str) -> None:
    with OpenAITestServer() as clean:
        assert_answered(pytester.runpytest(*llm_args(clean, "--lens-llm-cache-mode=off", json_name="clean.json")), 8)
        sent = clean.count()
    with OpenAITestServer(faults=[Fault(kind, rate=0.25)]) as flaky:  # type: ignore[arg-type]
        result = pytester.runpytest(*llm_args(flaky, "--lens-llm-cache-mode=off", json_name="flaky.json"))
        bad = flaky.count(status=200) - sent
    assert_answered(result, 8)
    assert bad >= 0.15 * sent
    result.stdout.fnmatch_lines(
        [f"llm requests: {sent} (cache off: 0 hits, {sent} misses); http requests {sent + bad}, retries {bad} ({bad} bad 200 responses*"]
    )
    assert scores(pytester.path / "flaky.json") == scores(pytester.path / "clean.json")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens there once the socket is closed


def test_an_endpoint_that_is_down_measures_nothing_and_blames_no_memory(pytester: pytest.Pytester) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = pytester.runpytest(
        "--lens-adapter=bm25",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        f"--lens-llm-base-url={url}",
        "--lens-llm-retries=1",
        "--lens-json=out.json",
        *QUIET,
    )
    result.assert_outcomes(failed=8)
    result.stdout.fnmatch_lines(
        [
            f"not measured: agent 'llm' could not get an answer from its model: LLM request to {url} failed after 2 attempts: "
            "APIConnectionError: Connection error.",
            "not measured bm25 (8 of 8 questions; no score, left out of composites and statistics): *",
            "  pass  hard gates (evidence_grounding < 0.5 zeroes the composite): no adapter gated (0 checked)",
            "  FAIL  --lens-max-not-measured=0.05: bm25: no answer from the model on 8 of 8 questions (100%); those questions are "
            "not measured (failed tests, left out of composites and statistics)",
        ]
    )
    result.stdout.no_fnmatch_line("*evidence_grounding < 0.5: *")  # the memory is not blamed
    out = artifact(pytester)
    assert all(r["not_measured"] and not r["metrics"] for r in out["results"])
    assert out["summary"] == {}
    assert out["statistics"] is None


def test_some_questions_not_measured_leave_the_rest_scored(pytester: pytest.Pytester) -> None:
    # The agent's model fails for good on one question (the only text asking "How severe"): 1 of 8 not measured.
    down_for_one = [Fault("status", status=503, permanent=True, only="agent", contains="How severe")]
    with OpenAITestServer(faults=down_for_one) as server:
        result = pytester.runpytest(*llm_args(server, "--lens-judge=none", "--lens-llm-cache-mode=off", "--lens-max-not-measured=20%"))
    assert_answered(result, 7, failed=1)
    out = artifact(pytester)
    unmeasured = [r for r in out["results"] if r["not_measured"]]
    assert len(unmeasured) == 1
    summary = out["summary"]["bm25"]
    assert (summary["n_questions"], summary["not_measured"]) == (7, 1)
    assert out["statistics"]["adapters"]["bm25"]["composite"]["n"] == 7
    measured = [r["composite"] for r in out["results"] if not r["not_measured"]]
    assert summary["composite"] > 0 and len(measured) == 7
    result.stdout.fnmatch_lines(
        [
            "bm25 *7 (1 not measured) *",
            "  pass  --lens-max-not-measured=0.2: bm25: no answer from the model on 1 of 8 questions (12%): within the limit",
        ]
    )


# -- the naive baseline fits the model's context -------------------------------------------------------------

#: What a real tokenizer does: 1.47 times as many tokens as UTF-8 bytes / 4 (measured on LENS scope 01, SmolLM2).
REAL_BYTES_PER_TOKEN = 4 / 1.47


def baseline_run(pytester: pytest.Pytester, server: OpenAITestServer, *extra: str) -> Any:
    return pytester.runpytest(
        "--lens-adapter=bm25",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        "--lens-judge=llm",
        f"--lens-llm-base-url={server.base_url}",
        "--lens-llm-cache-mode=off",
        "--lens-agent-max-tokens=256",
        "--lens-json=out.json",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
        f"--lens-dataset={CAPACITY}",
        "-k",
        "q01 or q07 or q17",
        *extra,
    )


@pytest.mark.parametrize("style", ["llama-cpp-python", "llama.cpp", "openai"])
def test_the_baseline_sized_for_the_model_context_fits(pytester: pytest.Pytester, style: str) -> None:
    with OpenAITestServer(context_tokens=8192, bytes_per_token=REAL_BYTES_PER_TOKEN, context_error=style) as server:  # type: ignore[arg-type]
        result = baseline_run(pytester, server, "--lens-llm-context=8192")
        refused = server.count(status=400)
        biggest = max(server.prompt_tokens(r.body) + r.body["max_tokens"] for r in server.requests if r.kind == "baseline")
    assert_answered(result, 3)
    assert result.ret == pytest.ExitCode.OK
    assert refused == 0
    assert 6000 < biggest <= 8192  # sized to fit, not starved
    baselines = [r["scorer_details"]["judge"]["baseline"] for r in artifact(pytester)["results"]]
    assert all("trimmed" not in b for b in baselines)
    assert baselines[-1]["episodes"] < 111  # checkpoint 111's stream does not fit: the newest records that do


@pytest.mark.parametrize("style", ["llama-cpp-python", "llama.cpp", "openai"])
def test_a_context_length_error_trims_the_baseline_and_retries_once(pytester: pytest.Pytester, style: str) -> None:
    with OpenAITestServer(context_tokens=8192, bytes_per_token=REAL_BYTES_PER_TOKEN, context_error=style) as server:  # type: ignore[arg-type]
        result = baseline_run(pytester, server)  # no --lens-llm-context: the budget's 16k estimate overflows the model
        baseline_requests = [(r.status, server.prompt_tokens(r.body)) for r in server.requests if r.kind == "baseline"]
    assert_answered(result, 3)
    assert result.ret == pytest.ExitCode.OK
    out = artifact(pytester)
    baselines = [r["scorer_details"]["judge"]["baseline"] for r in out["results"]]
    trimmed = [b for b in baselines if b.get("trimmed")]
    assert len(trimmed) == 2  # checkpoints 63 and 111 overflow, checkpoint 17 fits
    # One retry each, and it fits (concurrent questions may interleave the checkpoints' requests).
    assert sorted(status for status, _ in baseline_requests) == [200, 200, 200, 400, 400]
    assert all("naive_baseline_advantage" in r["metrics"] for r in out["results"])
