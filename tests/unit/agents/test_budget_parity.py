"""The LLM agent is held to exactly the limits the tool bridge enforces for the offline agent.

Two situations: (1) the LLM plays back, turn for turn, the tool calls the offline agent made
under a budget, and must end with identical violations, tool-call records and answer;
(2) a scripted LLM overruns turns, tool calls, result tokens or agent tokens, and its
violations must equal what the bridge records when the same calls are made directly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from lens_fixtures.openai_server import OpenAITestServer, ScriptedAgentPolicy
from pytest_lens.agents.llm import LLMAgent
from pytest_lens.agents.offline import OfflineAgent
from pytest_lens.answering.engine import run_case
from pytest_lens.datasets.loader import load_dataset
from pytest_lens.execution.bridge import ToolBridge
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
from pytest_lens.records.budget import BudgetTracker, parse_budget
from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.settings import AdapterSpec
from pytest_lens.scoring.scorer import Scoring
from tests.support import COLD_CHAIN_DEMO

SCOPE = load_dataset(COLD_CHAIN_DEMO).scopes[0]
Turn = str | Sequence[tuple[str, Mapping[str, Any] | str]]


def case_for(question_id: str, budget: str) -> LensCase:
    question = next(q for q in SCOPE.questions if q.question_id == question_id)
    return LensCase("bm25", SCOPE, question, parse_budget(budget))


def runtime_for(tmp_path: Path, name: str) -> LensRuntime:
    return LensRuntime({"bm25": AdapterSpec("bm25", "bm25")}, tmp_path / name)


def llm_agent(server: OpenAITestServer, tmp_path: Path) -> LLMAgent:
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY", retries=0)
    return LLMAgent(ChatClient(endpoint, "scripted", cache=RequestCache(tmp_path / "c.sqlite", "off"), stats=LLMStats()))


def offline_script(result: QuestionResult) -> list[Turn]:
    """The offline agent's run as an LLM script: each turn's tool calls, then its answer."""
    turns: list[Turn] = []
    for turn in range(1, result.turns):
        turns.append([(call.name, json.dumps(call.arguments)) for call in result.tool_calls if call.turn == turn])
    turns.append(result.answer)
    return turns


def comparable(result: QuestionResult) -> tuple[object, ...]:
    calls = [(c.index, c.turn, c.name, c.arguments, c.status, c.result_tokens, c.returned_refs, c.error) for c in result.tool_calls]
    return (result.violations, calls, result.result_tokens, result.turns, result.answer, result.metrics)


@pytest.mark.parametrize(
    ("question_id", "budget"),
    [
        ("ccd_q07_longitudinal", "16k"),
        ("ccd_q03_longitudinal", "4k"),
        ("ccd_q07_longitudinal", "results=30"),  # the cap is hit before the search: a result_tokens violation
        ("ccd_q05_temporal", "results=900,turns=4,calls=3"),
        ("ccd_q08_action_recommendation", "results=2000,turns=3"),
    ],
)
def test_llm_agent_replaying_the_offline_agent_records_the_same_violations(tmp_path: Path, question_id: str, budget: str) -> None:
    case = case_for(question_id, budget)
    runtime = runtime_for(tmp_path, "offline")
    offline = run_case(case, runtime, OfflineAgent(), Scoring.default())
    runtime.close()
    with OpenAITestServer(ScriptedAgentPolicy(offline_script(offline))) as server:
        runtime = runtime_for(tmp_path, "llm")
        llm = run_case(case, runtime, llm_agent(server, tmp_path), Scoring.default())
        runtime.close()
    assert llm.agent_error is None
    assert comparable(llm) == comparable(offline)
    if budget == "results=30":
        assert [v.kind for v in offline.violations] == ["result_tokens"]


def drive_bridge(case: LensCase, tmp_path: Path, script: Sequence[Turn], usages: Sequence[int]) -> BudgetTracker:
    """The same situation without an LLM: the script's turns, tokens and calls made directly on a bridge."""
    runtime = runtime_for(tmp_path, "direct")
    runtime.advance("bm25", case.scope, case.checkpoint)
    manifest, _ = runtime.manifest("bm25")
    caller = runtime.slot("bm25").caller
    assert caller is not None
    tracker = BudgetTracker(case.budget)
    bridge = ToolBridge(caller, manifest, tracker, label_keys=case.scope.label_keys, aliases=runtime.aliases(case.scope))
    turn = 0
    while bridge.begin_turn():
        bridge.charge_agent_tokens(usages[turn])
        step = script[min(turn, len(script) - 1)]
        turn += 1
        if isinstance(step, str):
            break
        for name, arguments in step:
            bridge.call(name, arguments if isinstance(arguments, str) else json.dumps(arguments))
    runtime.close()
    return tracker


SEARCH = ("memory_search", {"query": "compressor C-2 discharge pressure", "limit": 5})
RETRIEVE = ("memory_retrieve", {"ref_id": "cold_chain_demo_013"})


@pytest.mark.parametrize(
    ("budget", "script", "kinds"),
    [
        ("results=16000,turns=3", [[SEARCH]] * 6, ["turns"]),
        ("results=16000,calls=2", [[SEARCH, RETRIEVE, SEARCH, RETRIEVE], "done [cold_chain_demo_013]"], ["tool_calls", "tool_calls"]),
        ("results=120,calls=10", [[SEARCH, RETRIEVE, RETRIEVE], "done"], ["result_tokens", "result_tokens"]),
        ("results=16000,agent_tokens=400", [[SEARCH], [RETRIEVE], "done"], ["agent_tokens"]),
        ("results=16000", [[("memory_search", "{oops"), ("nope", {})], "done"], []),
    ],
)
def test_llm_overruns_are_recorded_exactly_as_the_bridge_records_them(
    tmp_path: Path, budget: str, script: list[Turn], kinds: list[str]
) -> None:
    case = case_for("ccd_q03_longitudinal", budget)
    with OpenAITestServer(ScriptedAgentPolicy(script)) as server:
        runtime = runtime_for(tmp_path, "llm")
        llm = run_case(case, runtime, llm_agent(server, tmp_path), Scoring.default())
        runtime.close()
        usages = [int(server.chat_completion(r.body, b"", None)["usage"]["total_tokens"]) for r in server.requests]
    direct = drive_bridge(case, tmp_path, script, usages)
    assert llm.agent_error is None
    assert [v.kind for v in llm.violations] == kinds
    assert llm.violations == direct.violations
    assert (llm.turns, llm.result_tokens, llm.agent_tokens, len(llm.tool_calls)) == (
        direct.turns,
        direct.result_tokens,
        direct.agent_tokens,
        direct.tool_calls,
    )
