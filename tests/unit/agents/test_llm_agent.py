from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer, ScriptedAgentPolicy
from pytest_lens.agents import create_agent
from pytest_lens.agents.base import SYSTEM_PROMPT, AgentAnswer, AgentQuestion
from pytest_lens.agents.llm import LLMAgent, strip_reasoning
from pytest_lens.answering.engine import run_case
from pytest_lens.datasets.loader import load_dataset
from pytest_lens.execution.bridge import ToolBridge
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
from pytest_lens.records.budget import parse_budget
from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.settings import AdapterSpec
from pytest_lens.scoring.scorer import Scoring
from tests.support import COLD_CHAIN_DEMO

SCOPE = load_dataset(COLD_CHAIN_DEMO).scopes[0]


def case_for(question_id: str, budget: str = "16k", adapter: str = "bm25") -> LensCase:
    question = next(q for q in SCOPE.questions if q.question_id == question_id)
    return LensCase(adapter, SCOPE, question, parse_budget(budget))


def client_for(server: OpenAITestServer, tmp_path: Path) -> ChatClient:
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY", retries=2, backoff_base_s=0.001)
    return ChatClient(endpoint, "scripted", cache=RequestCache(tmp_path / "c.sqlite", "off"), stats=LLMStats(), seed=42)


def run_llm(server: OpenAITestServer, tmp_path: Path, case: LensCase) -> QuestionResult:
    runtime = LensRuntime({case.adapter: AdapterSpec(case.adapter, case.adapter)}, tmp_path / "storage")
    try:
        return run_case(case, runtime, LLMAgent(client_for(server, tmp_path)), Scoring.default())
    finally:
        runtime.close()


def test_the_agent_searches_retrieves_and_answers_citing_what_it_read(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        result = run_llm(server, tmp_path, case_for("ccd_q07_longitudinal"))
        first = server.requests[0].body
    assert result.agent_error is None
    assert [call.name for call in result.tool_calls] == ["memory_search", "batch_retrieve"]
    assert first["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert first["messages"][1]["content"] == case_for("ccd_q07_longitudinal").question.prompt
    assert first["temperature"] == 0
    assert first["seed"] == 42
    assert {tool["function"]["name"] for tool in first["tools"]} == {
        "memory_search",
        "memory_retrieve",
        "memory_capabilities",
        "batch_retrieve",
    }
    assert result.turns == 3
    assert result.cited_refs
    assert set(result.cited_refs) <= set(result.returned_refs)
    assert result.metrics["evidence_grounding"] == 1.0
    assert result.agent_tokens > 0
    assert result.agent_tokens == sum(_usage(server, r.body) for r in server.requests)


def _usage(server: OpenAITestServer, body: dict[str, object]) -> int:
    usage = server.chat_completion(body, b"", None)["usage"]
    return int(usage["total_tokens"])


def test_malformed_tool_calls_get_readable_errors_are_counted_and_never_crash(tmp_path: Path) -> None:
    script = ScriptedAgentPolicy(
        [
            [
                ("memory_search", '{"query": "compressor'),  # bad JSON
                ("memory_fly", {"to": "moon"}),  # unknown tool
                ("memory_retrieve", {"ref_id": "cold_chain_demo_999"}),  # hallucinated ref id
                ("memory_search", {"query": "x", "limit": "many"}),  # bad argument
                ("memory_search", {"query": "C-2 discharge pressure"}),
            ],
            "C-2 discharge pressure rose to 17.9 bar [cold_chain_demo_013].",
        ]
    )
    with OpenAITestServer(script) as server:
        result = run_llm(server, tmp_path, case_for("ccd_q03_longitudinal"))
        follow_up = server.requests[1].body["messages"]
    assert result.agent_error is None
    assert result.malformed_tool_calls == 4
    assert [c.status for c in result.tool_calls] == ["error", "error", "error", "error", "ok"]
    errors = [m["content"] for m in follow_up if m["role"] == "tool"]
    assert errors[0].startswith("Error: tool arguments are not valid JSON")
    assert "unknown tool 'memory_fly'" in errors[1]
    assert "no document with ref_id 'cold_chain_demo_999'" in errors[2]
    assert "'limit' must be a positive integer" in errors[3]
    assert result.answer == "C-2 discharge pressure rose to 17.9 bar [cold_chain_demo_013]."


def test_a_malformed_tool_call_fault_is_recovered_from(tmp_path: Path) -> None:
    with OpenAITestServer(faults=[Fault("malformed_tool_arguments", only="agent", limit=1)]) as server:
        result = run_llm(server, tmp_path, case_for("ccd_q05_temporal"))
    assert result.agent_error is None
    assert result.malformed_tool_calls >= 1
    assert any(call.status == "ok" and call.name == "batch_retrieve" for call in result.tool_calls)
    assert result.cited_refs


def test_the_last_allowed_turn_switches_tools_off(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        result = run_llm(server, tmp_path, case_for("ccd_q05_temporal", budget="results=16000,turns=2"))
        bodies = [r.body for r in server.requests]
    assert [body.get("tool_choice") for body in bodies] == ["auto", "none"]
    assert result.turns == 2
    assert not result.violations
    assert [call.name for call in result.tool_calls] == ["memory_search"]
    assert result.cited_refs  # answered from the search snippets


def test_an_endpoint_that_keeps_failing_leaves_the_question_not_measured(tmp_path: Path) -> None:
    with OpenAITestServer(faults=[Fault("status", status=503, permanent=True)]) as server:
        result = run_llm(server, tmp_path, case_for("ccd_q05_temporal"))
        url = server.base_url
    assert result.failed
    assert not result.measured
    assert result.agent_error is None  # not an agent bug ...
    assert (result.metrics, result.composite, result.gated) == ({}, 0.0, False)  # ... and nothing scored, not even a 0
    assert result.failure_message() == (
        f"not measured: agent 'llm' could not get an answer from its model: LLM request to {url} failed "
        "after 3 attempts: HTTP 503: injected fault: HTTP 503"
    )


def test_an_endpoint_that_is_down_leaves_the_question_not_measured(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        down = server.base_url  # nothing listens there once the server stopped
    runtime = LensRuntime({"bm25": AdapterSpec("bm25", "bm25")}, tmp_path / "storage")
    endpoint = LLMEndpoint(down, api_key_env="LENS_TEST_KEY", retries=1, backoff_base_s=0.001)
    client = ChatClient(endpoint, "scripted", cache=RequestCache(tmp_path / "c.sqlite", "off"), stats=LLMStats())
    try:
        result = run_case(case_for("ccd_q05_temporal"), runtime, LLMAgent(client), Scoring.default())
    finally:
        runtime.close()
    assert result.not_measured is not None
    assert f"LLM request to {down} failed after 2 attempts: APIConnectionError" in result.not_measured
    assert not result.metrics
    assert client.stats.snapshot().failures == 1


def test_an_agent_bug_is_an_agent_error_not_a_missing_measurement(tmp_path: Path) -> None:
    class Broken(LLMAgent):
        def answer(self, question: AgentQuestion, bridge: ToolBridge) -> AgentAnswer:
            raise KeyError("oops")

    with OpenAITestServer() as server:
        runtime = LensRuntime({"bm25": AdapterSpec("bm25", "bm25")}, tmp_path / "storage")
        try:
            result = run_case(case_for("ccd_q05_temporal"), runtime, Broken(client_for(server, tmp_path)), Scoring.default())
        finally:
            runtime.close()
    assert result.measured
    assert result.agent_error == "KeyError: 'oops'"


def test_reasoning_blocks_are_stripped_from_answers() -> None:
    assert strip_reasoning("<think>\nlet me see [x]\n</think>\nThe answer [a].") == "The answer [a]."


def test_the_llm_agent_needs_a_model() -> None:
    with pytest.raises(ValueError, match="--lens-agent-model"):
        create_agent("llm")


def test_tool_results_reach_the_model_verbatim(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        result = run_llm(server, tmp_path, case_for("ccd_q06_severity_assessment"))
        last = server.requests[-1].body["messages"]
    tool_messages = [m for m in last if m["role"] == "tool"]
    assert len(tool_messages) == len(result.tool_calls)
    search = json.loads(tool_messages[0]["content"])
    assert search
    assert all(set(hit) >= {"ref_id", "text", "score"} for hit in search)
