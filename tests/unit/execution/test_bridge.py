from __future__ import annotations

import json

import pytest

from pytest_lens.datasets import LoadedScope
from pytest_lens.execution.bridge import RefAliases, ToolBridge, unseen_chars
from pytest_lens.execution.calls import AdapterCaller
from pytest_lens.records.budget import EXHAUSTED_MESSAGE, BudgetTracker, parse_budget, result_tokens
from tests.support import RecordingMemory, SearchRaises


def make_bridge(scope: LoadedScope, adapter: RecordingMemory | None = None, budget: str = "16k", aliases: bool = False) -> ToolBridge:
    adapter = adapter or RecordingMemory()
    caller = AdapterCaller(adapter, "mem")
    for e in scope.stream:
        caller.ingest(e.episode_id, scope.scope_id, e.iso_timestamp, e.text, e.meta)
    return ToolBridge(
        caller,
        caller.capabilities(),
        BudgetTracker(parse_budget(budget)),
        label_keys=scope.label_keys,
        aliases=RefAliases(scope.scope_id, [e.episode_id for e in scope.stream], enabled=aliases),
    )


def test_tools_are_built_from_the_manifest(small_scope: LoadedScope) -> None:
    bridge = make_bridge(small_scope)
    names = [tool.name for tool in bridge.tools]
    assert names == ["memory_search", "memory_retrieve", "memory_capabilities", "batch_retrieve"]
    search = bridge.tools[0].openai()["function"]
    assert search["parameters"]["properties"]["limit"]["maximum"] == 10
    assert "filters" not in search["parameters"]["properties"]  # no filters declared, none offered


def test_ground_truth_labels_never_reach_the_agent(small_scope: LoadedScope) -> None:
    bridge = make_bridge(small_scope)
    search = bridge.call("memory_search", {"query": "pump pressure"})
    retrieve = bridge.call("memory_retrieve", {"ref_id": "e1"})
    batch = bridge.call("batch_retrieve", {"ref_ids": ["e1", "e3"]})
    for outcome in (search, retrieve, batch):
        assert not outcome.is_error
        for label in ("episode_type", "signal", "distractor", '"phase"'):
            assert label not in outcome.content
    hits = json.loads(search.content)
    assert [hit["ref_id"] for hit in hits] == ["e1", "e3", "e5"]
    assert hits[0]["metadata"] == {"timestamp": "2025-01-01T09:00:00", "meta": {}}
    assert bridge.returned_refs == ["e1", "e3", "e5"]


def test_aliases_hide_ids_both_ways(small_scope: LoadedScope) -> None:
    bridge = make_bridge(small_scope, aliases=True)
    hits = json.loads(bridge.call("memory_search", {"query": "pump pressure"}).content)
    alias = hits[0]["ref_id"]
    assert alias.startswith("ref_") and "e1" not in alias
    doc = json.loads(bridge.call("memory_retrieve", {"ref_id": alias}).content)
    assert doc["ref_id"] == alias and "4.1 bar" in doc["text"]
    batch = json.loads(bridge.call("batch_retrieve", {"ref_ids": [alias]}).content)
    assert batch["documents"][0]["ref_id"] == alias
    assert bridge.resolve_ref(alias) == "e1" and bridge.returned_refs[0] == "e1"


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("memory_search", '{"query": ', "not valid JSON"),
        ("memory_search", {"query": ""}, "non-empty string 'query'"),
        ("memory_search", {"query": "x", "limit": 0}, "'limit' must be a positive integer"),
        ("memory_search", {"query": "x", "filters": {"site": "A"}}, "unknown filter(s) site; this memory offers: none"),
        ("memory_search", {"query": "x", "top_k": 3}, "unexpected argument(s) top_k"),
        ("memory_retrieve", {"ref_id": "e99"}, "no document with ref_id 'e99'"),
        ("batch_retrieve", {"ref_ids": "e1"}, "invalid arguments for batch_retrieve"),
        ("delete_everything", {}, "unknown tool 'delete_everything'"),
    ],
)
def test_agent_mistakes_come_back_as_readable_errors(small_scope: LoadedScope, name: str, arguments: object, message: str) -> None:
    bridge = make_bridge(small_scope)
    outcome = bridge.call(name, arguments)  # type: ignore[arg-type]
    assert outcome.is_error and message in outcome.content
    assert outcome.record.status == "error"
    assert not bridge.faults


def test_limit_is_clamped_to_the_manifest(small_scope: LoadedScope) -> None:
    bridge = make_bridge(small_scope, adapter=RecordingMemory(max_results=2))
    hits = json.loads(bridge.call("memory_search", {"query": "pump pressure", "limit": "50"}).content)
    assert len(hits) == 2


def test_result_tokens_are_charged_exactly_and_the_cap_refuses_the_next_call(small_scope: LoadedScope) -> None:
    bridge = make_bridge(small_scope, budget="results=40")
    first = bridge.call("memory_retrieve", {"ref_id": "e1"})
    second = bridge.call("memory_retrieve", {"ref_id": "e3"})
    assert first.record.result_tokens == result_tokens(first.content)
    assert bridge.tracker.result_tokens == sum(r.result_tokens for r in bridge.records)
    if bridge.tracker.result_tokens - second.record.result_tokens >= 40:
        pytest.fail("the cap was reached by the first call; make the test data larger")
    third = bridge.call("memory_retrieve", {"ref_id": "e5"})
    assert third.content == EXHAUSTED_MESSAGE and third.record.status == "refused"
    assert [v.kind for v in bridge.tracker.violations] == ["result_tokens"]
    assert "e5" not in bridge.returned_refs


def test_adapter_exceptions_become_faults_not_crashes(small_scope: LoadedScope) -> None:
    bridge = make_bridge(small_scope, adapter=SearchRaises())
    outcome = bridge.call("memory_search", {"query": "pump"})
    assert outcome.is_error and "RuntimeError: index corrupted" in outcome.content
    (fault,) = bridge.faults
    assert fault.describe() == "adapter 'mem' raised in search(): RuntimeError: index corrupted"
    assert not bridge.call("memory_retrieve", {"ref_id": "e1"}).is_error


def test_records_keep_what_each_call_returned_and_the_budget_left(small_scope: LoadedScope) -> None:
    from pytest_lens.records.results import SNIPPET_CHARS

    long_text = "x" * (SNIPPET_CHARS + 50)
    bridge = make_bridge(small_scope, budget="results=2000,calls=5")
    search = bridge.call("memory_search", {"query": "pump pressure"}).record
    assert [(hit.ref_id, hit.score) for hit in search.hits] == [("e1", 2.0), ("e3", 2.0), ("e5", 2.0)]
    assert search.hits[0].snippet == small_scope.stream[0].text[:80]  # RecordingMemory's search returns 80 characters
    assert (search.result_tokens_left, search.calls_left) == (2000 - search.result_tokens, 4)
    # A ref already shown keeps no second snippet; with no score either, it is listed in returned_refs only.
    batch = bridge.call("batch_retrieve", {"ref_ids": ["e1", "e2"]}).record
    assert batch.returned_refs == ["e1", "e2"]
    assert [hit.ref_id for hit in batch.hits] == ["e2"]
    assert batch.hits[0].snippet.startswith(small_scope.stream[1].text[:40]) and batch.hits[0].score is None
    assert batch.result_tokens_left == 2000 - search.result_tokens - batch.result_tokens and batch.calls_left == 3
    # Snippets are cut to SNIPPET_CHARS (with an ellipsis), whatever the adapter returned.
    memory = RecordingMemory()
    caller = AdapterCaller(memory, "mem")
    caller.ingest("long", "s1", "2025-01-01T00:00:00", long_text, {})
    lone = ToolBridge(caller, caller.capabilities(), BudgetTracker(parse_budget("16k")))
    hit = lone.call("memory_retrieve", {"ref_id": "long"}).record.hits[0]
    assert len(hit.snippet) == SNIPPET_CHARS and hit.snippet.endswith("…")


def test_refused_calls_record_no_hits(small_scope: LoadedScope) -> None:
    bridge = make_bridge(small_scope, budget="results=1,calls=5")
    bridge.call("memory_search", {"query": "pump pressure"})
    refused = bridge.call("memory_search", {"query": "pump"}).record
    assert refused.status == "refused" and refused.hits == [] and refused.result_tokens_left == 0


def test_huge_tool_call_arguments_are_stored_cut_like_answers(small_scope: LoadedScope) -> None:
    # Issue 32: 20 MB of arguments were stored whole in the record (and so in the artifact and report).
    from pytest_lens.records.results import ARGUMENT_CHARS

    bridge = make_bridge(small_scope)
    query = "pump pressure " + "x" * 20_000_000
    outcome = bridge.call("memory_search", json.dumps({"query": query}))
    assert outcome.record.arguments == {"_cut": json.dumps({"query": query})[:ARGUMENT_CHARS], "_chars": len(query) + 13}
    small = bridge.call("memory_search", {"query": "pump pressure"})
    assert small.record.arguments == {"query": "pump pressure"}  # short ones are kept as they came


def test_records_count_the_text_a_return_added_beyond_earlier_returns() -> None:
    full = "pump pressure readings for station A. " + "The night shift logged every valve in turn. " * 20
    caller = AdapterCaller(RecordingMemory(), "mem")
    caller.ingest("e1", "s1", "2025-01-01T00:00:00", full, {})
    bridge = ToolBridge(caller, caller.capabilities(), BudgetTracker(parse_budget("16k")))
    search = bridge.call("memory_search", {"query": "pump pressure"}).record
    assert search.hits[0].new_chars == 80  # RecordingMemory's search returns the first 80 characters
    # The retrieval returns the whole episode: everything past those 80 characters is new to the agent.
    retrieval = bridge.call("memory_retrieve", {"ref_id": "e1"}).record
    assert [(hit.ref_id, hit.snippet, hit.new_chars) for hit in retrieval.hits] == [("e1", "", len(full) - 80)]
    # Retrieved again, it adds nothing: listed in returned_refs alone.
    again = bridge.call("memory_retrieve", {"ref_id": "e1"}).record
    assert again.returned_refs == ["e1"] and again.hits == []


@pytest.mark.parametrize(
    ("text", "seen", "new"),
    [
        ("abcdefghij", [], 10),
        ("abcdefghij", ["abcdefghij"], 0),
        ("abcde", ["abcdefghij"], 0),  # a snippet after the full text adds nothing
        ("abcdefghij", ["abcd ..."], 6),  # excerpt()-style cut marker
        ("abcdefghij", ["... cde ... hij …"], 4),  # FTS5-style pieces; only a, b, f, g are new
        ("abcdefghij", ["abcdef", "defghi"], 1),  # overlapping pieces count once
        ("abcdefghij", ["xyz"], 10),
        ("   ", [], 0),
    ],
)
def test_unseen_chars(text: str, seen: list[str], new: int) -> None:
    assert unseen_chars(text, seen) == new
