from __future__ import annotations

from pytest_lens.agents.base import AgentQuestion
from pytest_lens.agents.offline import NO_EVIDENCE_ANSWER, OfflineAgent
from pytest_lens.citations import parse_citations
from pytest_lens.datasets import LoadedScope
from pytest_lens.execution.bridge import RefAliases, ToolBridge
from pytest_lens.execution.calls import AdapterCaller
from pytest_lens.records.budget import BudgetTracker, parse_budget
from tests.support import RecordingMemory


def bridge_for(scope: LoadedScope, adapter: RecordingMemory, budget: str = "16k") -> ToolBridge:
    caller = AdapterCaller(adapter, "mem")
    for e in scope.stream:
        caller.ingest(e.episode_id, scope.scope_id, e.iso_timestamp, e.text, e.meta)
    return ToolBridge(caller, caller.capabilities(), BudgetTracker(parse_budget(budget)), aliases=RefAliases("s", (), False))


QUESTION = AgentQuestion("q", "How did the pump pressure at station A change?")


def test_searches_retrieves_and_cites_what_it_quotes(small_scope: LoadedScope) -> None:
    bridge = bridge_for(small_scope, RecordingMemory())
    answer = OfflineAgent().answer(QUESTION, bridge).text
    assert [r.name for r in bridge.records] == ["memory_capabilities", "memory_search", "batch_retrieve"]
    assert set(parse_citations(answer)) == {"e1", "e3", "e5"}
    assert "4.1 bar" in answer and "5.9 bar" in answer
    for line in answer.splitlines():
        assert line.endswith("]")
    assert not bridge.tracker.violations


def test_without_batch_retrieve_it_retrieves_one_by_one(small_scope: LoadedScope) -> None:
    bridge = bridge_for(small_scope, RecordingMemory(batch=False))
    OfflineAgent().answer(QUESTION, bridge)
    assert [r.name for r in bridge.records].count("memory_retrieve") == 3


def test_is_deterministic(small_scope: LoadedScope) -> None:
    first = OfflineAgent().answer(QUESTION, bridge_for(small_scope, RecordingMemory())).text
    second = OfflineAgent().answer(QUESTION, bridge_for(small_scope, RecordingMemory())).text
    assert first == second


def test_stays_within_a_tight_budget(small_scope: LoadedScope) -> None:
    bridge = bridge_for(small_scope, RecordingMemory(batch=False), budget="results=60,turns=4,calls=4")
    OfflineAgent().answer(QUESTION, bridge)
    assert not bridge.tracker.violations
    assert bridge.tracker.tool_calls <= 4 and bridge.tracker.turns <= 4


def test_says_so_when_memory_has_nothing(small_scope: LoadedScope) -> None:
    bridge = bridge_for(small_scope, RecordingMemory())
    answer = OfflineAgent().answer(AgentQuestion("q", "zebra migration routes?"), bridge).text
    assert answer == NO_EVIDENCE_ANSWER
    assert bridge.returned_refs == []
    assert [r.name for r in bridge.records] == ["memory_capabilities", "memory_search"]


def test_answers_from_the_memorys_ranking_when_no_sentence_shares_a_word(small_scope: LoadedScope) -> None:
    # The bundled failure: "summaries" never appears in a "Daily Operations Summary", so no retrieved sentence
    # shares a word with the question, yet the memory ranked the documents for it. Before, the agent gave up.
    documents = {"e2": "## 2024-01-02 Daily Summary\n- pump A: 5.1 bar", "e1": "## 2024-01-01 Daily Summary\n- pump A: 4.1 bar"}
    answer = OfflineAgent().compose("Are patterns emerging in the summaries?", documents)
    assert answer != NO_EVIDENCE_ANSWER
    assert parse_citations(answer) == ["e2", "e1"]  # the memory's order, one claim each
    assert "5.1 bar" in answer.splitlines()[0]
    assert OfflineAgent().compose("Are patterns emerging in the summaries?", {}) == NO_EVIDENCE_ANSWER
