"""mem0 with extraction (infer=True) against the project's OpenAI-compatible server; skipped only without mem0ai."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("mem0") is None:  # importorskip would import mem0 before the adapter configures it
    pytest.skip("the optional extra pytest-lens[mem0] (mem0ai) is not installed", allow_module_level=True)

from lens_fixtures.adapters.mem0_extract import ExtractionReplyError, Mem0ExtractAdapter, parse_mem0_extraction
from lens_fixtures.openai_server import EmptyExtractionPolicy, ExtractionPolicy, LensPolicy, OpenAITestServer
from pytest_lens import AdapterUnavailable
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from tests.unit.lens_fixtures.adapters.scripted import scripted_client

EPISODES = [
    ("ep1", "2024-01-01T10:00:00", "## 2024-01-01 Ops\n- pump seven vibration 4.1 mm/s\n- all quiet"),
    ("ep2", "2024-01-02T10:00:00", "## 2024-01-02 Ops\n- pump seven vibration 9.8 mm/s, rising sharply"),
    ("ep3", "2024-01-03T10:00:00", "## 2024-01-03 Ops\n- 40 cm of snow closed the north road"),
]


def loaded(server: OpenAITestServer, tmp_path: Path, hashing: Any, name: str = "a", **options: Any) -> Mem0ExtractAdapter:
    (tmp_path / name).mkdir()
    adapter = Mem0ExtractAdapter(
        str(tmp_path / name),
        lens_llm=scripted_client(server, tmp_path / "c.sqlite", options.pop("mode", "record")),
        embedder=hashing,
        **options,
    )
    adapter.reset("scope")
    for ref, timestamp, text in EPISODES:
        adapter.ingest(ref, "scope", timestamp, text)
    return adapter


def test_without_an_llm_the_adapter_is_unavailable_and_says_how_to_configure_one(hashing: Any) -> None:
    with pytest.raises(AdapterUnavailable, match="--lens-llm-base-url"):
        Mem0ExtractAdapter(embedder=hashing)


def test_search_returns_mem0s_extracted_facts_under_the_episode_they_came_from(
    server: OpenAITestServer, tmp_path: Path, hashing: Any
) -> None:
    adapter = loaded(server, tmp_path, hashing)
    assert server.count(kind="extraction") == 3  # one extraction per episode, at ingest
    results = adapter.search("pump seven vibration", None, 5)
    assert {r.ref_id for r in results} >= {"ep1", "ep2"}
    by_ref = {r.ref_id: r.text for r in results}
    assert by_ref["ep2"] == "On 2024-01-02: pump seven vibration 9.8 mm/s, rising sharply"  # mem0's fact, not the episode
    assert adapter.retrieve("ep2").text == EPISODES[1][2]  # the episode itself, verbatim
    assert adapter.lens_stats()["extraction_calls"] == 3
    adapter.close()


def test_mem0s_prompt_is_dated_with_the_episode_not_the_wall_clock(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    adapter = loaded(server, tmp_path, hashing)
    prompts = [str(r.body["messages"][-1]["content"]) for r in server.requests if r.kind == "extraction"]
    assert ["## Observation Date\n2024-01-0" + day in prompt for prompt, day in zip(prompts, "123", strict=True)] == [True] * 3
    assert all("## Current Date\n2024-01-0" in prompt for prompt in prompts)
    adapter.close()


def test_a_recorded_stream_replays_with_no_request_and_the_same_memory(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    recorded = loaded(server, tmp_path, hashing)
    before = server.count()
    replayed = loaded(server, tmp_path, hashing, name="b", mode="replay")
    assert server.count() == before
    assert replayed.search("snow road", None, 3) == recorded.search("snow road", None, 3)
    assert replayed.lens_stats()["extraction_prompt_tokens"] == recorded.lens_stats()["extraction_prompt_tokens"] > 0
    recorded.close()
    replayed.close()


def test_without_kept_episodes_retrieve_returns_the_facts_and_fails_the_roundtrip(
    server: OpenAITestServer, tmp_path: Path, hashing: Any
) -> None:
    adapter = loaded(server, tmp_path, hashing, keep_episodes=False)
    assert adapter.retrieve("ep3").text == "On 2024-01-03: 40 cm of snow closed the north road"
    assert adapter.retrieve("ep3").text != EPISODES[2][2]
    adapter.close()


def test_reingest_replaces_the_episodes_memories_and_reset_forgets_them(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    adapter = loaded(server, tmp_path, hashing)
    adapter.ingest("ep3", "scope", "2024-01-03T10:00:00", "## 2024-01-03 Ops\n- 25 degrees and sunny")
    texts = [r.text for r in adapter.search("snow sunny degrees", None, 5) if r.ref_id == "ep3"]
    assert texts == ["On 2024-01-03: 25 degrees and sunny"]
    adapter.reset("scope")
    assert adapter.search("pump", None, 5) == []
    assert adapter.retrieve("ep1") is None
    adapter.close()


def test_an_unreadable_extraction_is_an_adapter_fault_with_mem0s_message(tmp_path: Path, hashing: Any) -> None:
    with OpenAITestServer(LensPolicy(extraction=ExtractionPolicy(malformed=True))) as server:
        llm = scripted_client(server, tmp_path / "c.sqlite")
        caller = AdapterCaller.build(lambda: Mem0ExtractAdapter(str(tmp_path), lens_llm=llm, embedder=hashing), "mem0-extract", 60)
        caller.reset("scope")
        with pytest.raises(AdapterCallError) as raised:
            caller.ingest("ep1", "scope", "2024-01-01T10:00:00", "pump seven vibration 4.1 mm/s", {})
        assert caller.search("pump", None, 5) == []
        caller.close()
    assert raised.value.fault.method == "ingest"
    assert "LLM extraction failed: the reply is not JSON" in raised.value.fault.message  # mem0's LLMError, our reason
    assert "Sure! The record mentions" in raised.value.fault.message


def test_a_stream_that_left_no_memory_is_a_prepare_fault_not_an_empty_memory(tmp_path: Path, hashing: Any) -> None:
    with OpenAITestServer(EmptyExtractionPolicy()) as server:
        llm = scripted_client(server, tmp_path / "c.sqlite")
        caller = AdapterCaller.build(lambda: Mem0ExtractAdapter(str(tmp_path), lens_llm=llm, embedder=hashing), "mem0-extract", 60)
        caller.reset("scope")
        for index, (ref, timestamp, text) in enumerate(EPISODES, start=1):
            caller.ingest(ref, "scope", timestamp, text, {})  # each extraction well formed: {"memory": []}
            if index < len(EPISODES):
                caller.prepare("scope", index)  # fewer episodes than empty_memory_after (3): not yet a fault
        with pytest.raises(AdapterCallError) as raised:
            caller.prepare("scope", 3)
        assert caller.stats()["episodes_without_memories"] == 3
        caller.close()
    assert raised.value.fault.method == "prepare"
    assert "mem0-extract stored no memory from any of the 3 episodes of scope 'scope' read so far" in raised.value.fault.message
    with OpenAITestServer() as server:  # the scripted extractor's facts: the same stream prepares without a fault
        adapter = loaded(server, tmp_path, hashing, name="kept")
        adapter.prepare("scope", 3)
        adapter.close()


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("the pump is fine", "the reply is not JSON"),
        ('["a"]', "a JSON list, not an object"),
        ('{"facts": []}', "no 'memory' list"),
        ('{"memory": [{"id": "0"}]}', "memory item 0 is not an object with a 'text' string"),
    ],
)
def test_every_reply_mem0_would_store_nothing_for_is_an_error(reply: str, problem: str) -> None:
    with pytest.raises(ExtractionReplyError, match=problem):
        parse_mem0_extraction(reply)


def test_a_fenced_reply_and_an_empty_memory_list_are_read() -> None:
    assert parse_mem0_extraction("```json\n" + json.dumps({"memory": [{"text": "x"}]}) + "\n```") == [{"text": "x"}]
    assert parse_mem0_extraction('{"memory": []}') == []
    assert parse_mem0_extraction("") == []
