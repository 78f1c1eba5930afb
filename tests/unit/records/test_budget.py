from __future__ import annotations

import pytest

from pytest_lens.records.budget import EXHAUSTED_MESSAGE, PRESETS, TOO_MANY_CALLS_MESSAGE, BudgetTracker, parse_budget, result_tokens


@pytest.mark.parametrize(
    ("name", "cap", "turns", "calls", "agent"),
    [("4k", 4096, 6, 12, 16384), ("8k", 8192, 8, 16, 16384), ("16k", 16384, 10, 20, 32768), ("32k", 32768, 12, 24, 65536)],
)
def test_presets_match_the_spec_table(name: str, cap: int, turns: int, calls: int, agent: int) -> None:
    budget = parse_budget(name.upper())
    assert (budget.result_token_cap, budget.max_turns, budget.max_tool_calls, budget.max_agent_tokens) == (cap, turns, calls, agent)
    assert budget is PRESETS[name]


def test_custom_budget_takes_missing_limits_from_16k() -> None:
    budget = parse_budget("results=12k,turns=4")
    assert budget.result_token_cap == 12 * 1024 and budget.max_turns == 4
    assert budget.max_tool_calls == 20 and budget.max_agent_tokens == 32768
    assert budget.name == "custom-results12288-turns4-calls20-agent_tokens32768"


@pytest.mark.parametrize(
    ("spec", "message"),
    [("64k", "unknown budget '64k'"), ("results=0", "must be a positive integer"), ("tokens=5", "unknown limit 'tokens'")],
)
def test_bad_budgets_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_budget(spec)


def test_result_tokens_count_utf8_bytes_over_four() -> None:
    assert result_tokens("abcd" * 10) == 10
    assert result_tokens("é" * 4) == 2  # 8 bytes
    assert result_tokens("abc") == 0


def test_tracker_refuses_calls_once_the_result_cap_is_reached() -> None:
    tracker = BudgetTracker(parse_budget("results=10,calls=5"))
    assert tracker.admit_tool_call() is None
    tracker.charge_result("x" * 44)  # 11 tokens: over the cap, but delivered
    assert tracker.result_tokens == 11 and tracker.remaining_result_tokens == 0
    assert tracker.admit_tool_call() == EXHAUSTED_MESSAGE
    assert [(v.kind, v.tool_call) for v in tracker.violations] == [("result_tokens", 2)]


def test_tracker_refuses_calls_past_the_call_limit() -> None:
    tracker = BudgetTracker(parse_budget("calls=2"))
    assert tracker.admit_tool_call() is None
    assert tracker.admit_tool_call() is None
    assert tracker.admit_tool_call() == TOO_MANY_CALLS_MESSAGE
    assert tracker.remaining_tool_calls == 0
    assert [v.kind for v in tracker.violations] == ["tool_calls"]


def test_turn_and_agent_token_limits_record_one_violation_each() -> None:
    tracker = BudgetTracker(parse_budget("turns=1,agent_tokens=100"))
    assert tracker.begin_turn() is True
    assert tracker.begin_turn() is False
    tracker.charge_agent_tokens(60)
    tracker.charge_agent_tokens(60)
    tracker.charge_agent_tokens(60)
    assert [v.kind for v in tracker.violations] == ["turns", "agent_tokens"]
    assert tracker.agent_tokens == 180
