"""Hierarchical summaries against the project's OpenAI-compatible server: written at prepare, checkpoint-correct, faults loud."""

from __future__ import annotations

import socket
from contextlib import ExitStack
from pathlib import Path

import pytest

from lens_fixtures.adapters.hierarchical import EPISODE_PROMPT, OVERVIEW_PROMPT, PERIOD_PROMPT, HierarchicalAdapter
from lens_fixtures.openai_server import EmptyExtractionPolicy, Fault, HierarchyPolicy, LensPolicy, OpenAITestServer
from pytest_lens import AdapterUnavailable
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from tests.unit.lens_fixtures.adapters.scripted import client_at, scripted_client

EPISODES = [
    ("ep1", "2024-01-01T10:00:00", "## 2024-01-01 Ops\n- Pump-7 vibration 4.1 mm/s\n- all quiet at North Station"),
    ("ep2", "2024-01-02T10:00:00", "## 2024-01-02 Ops\n- Pump-7 vibration 9.8 mm/s, rising sharply"),
    ("ep3", "2024-01-03T10:00:00", "## 2024-01-03 Ops\n- heavy snow, 40 cm, closed the north road"),
    ("ep4", "2024-01-04T10:00:00", "## 2024-01-04 Ops\n- vendor-api timeouts at 30%"),
    ("ep5", "2024-01-05T10:00:00", "## 2024-01-05 Ops\n- Pump-7 replaced; vibration 2.0 mm/s"),
]


def load(adapter: HierarchicalAdapter, upto: int, prepare_at: tuple[int, ...]) -> None:
    adapter.reset("scope")
    for index, (ref, timestamp, text) in enumerate(EPISODES[:upto], start=1):
        adapter.ingest(ref, "scope", timestamp, text)
        if index in prepare_at:
            adapter.prepare("scope", index)


def systems(server: OpenAITestServer) -> list[str]:
    return [r.body["messages"][0]["content"] for r in server.requests if r.body.get("messages")]


def test_without_an_llm_the_adapter_is_unavailable_and_says_how_to_configure_one() -> None:
    with pytest.raises(AdapterUnavailable, match="--lens-llm-base-url"):
        HierarchicalAdapter()


def test_prepare_writes_each_level_once_and_search_reaches_episodes_through_summaries(server: OpenAITestServer, tmp_path: Path) -> None:
    adapter = HierarchicalAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"), group_size=2)
    load(adapter, 5, prepare_at=())
    assert systems(server) == []  # ingest asks no model
    adapter.prepare("scope", 5)
    # 5 episode summaries, 3 periods (2 + 2 + 1 episodes), 1 overview; a second prepare has nothing to write.
    assert systems(server) == [EPISODE_PROMPT] * 5 + [PERIOD_PROMPT] * 3 + [OVERVIEW_PROMPT]
    adapter.prepare("scope", 5)
    assert len(systems(server)) == 9 and adapter.lens_stats()["summary_calls"] == 9
    overview = adapter.call_extended_tool("memory_overview", {})
    assert [period["ref_ids"] for period in overview["periods"]] == [["ep1", "ep2"], ["ep3", "ep4"], ["ep5"]]
    assert "9.8 mm/s" in overview["overview"] and "9.8 mm/s" in overview["periods"][0]["summary"]
    found = adapter.search("Pump-7 vibration", None, 5)
    assert {"ep1", "ep2", "ep5"} <= {r.ref_id for r in found}
    assert any("[summary]" in r.text or "[period]" in r.text for r in found)  # reached through a summary, which it shows
    assert [r.ref_id for r in adapter.search("Pump-7 vibration", {"start_date": "2024-01-05"}, 5)] == ["ep5"]
    assert adapter.retrieve("ep3").text == EPISODES[2][2]
    adapter.close()


def test_search_reads_the_summaries_and_summaries_that_say_nothing_find_nothing(server: OpenAITestServer, tmp_path: Path) -> None:
    built = HierarchicalAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"), group_size=2)
    load(built, 5, prepare_at=(5,))
    # The summaries keep the lines that carry a number: "heavy snow, 40 cm" is in one, "all quiet" in none.
    assert "ep3" in {r.ref_id for r in built.search("snow 40 cm", None, 5)}
    assert built.search("quiet", None, 5) == []
    assert all(r.text.startswith(("[summary]", "[period]")) for r in built.search("Pump-7 vibration", None, 5))
    with OpenAITestServer(EmptyExtractionPolicy()) as empty_server:
        empty_llm = scripted_client(empty_server, tmp_path / "empty.sqlite")
        empty = HierarchicalAdapter(str(tmp_path), lens_llm=empty_llm, group_size=2)
        fused = HierarchicalAdapter(str(tmp_path), lens_llm=empty_llm, group_size=2, search="fused")
        for adapter in (empty, fused):
            load(adapter, 5, prepare_at=(5,))
        assert empty.lens_stats()["summary_calls"] == 9  # every summary written, each saying nothing
        assert empty.search("Pump-7 vibration", None, 5) == []
        assert {"ep1", "ep2", "ep5"} <= {r.ref_id for r in fused.search("Pump-7 vibration", None, 5)}  # BM25 over the episodes
    for adapter in (built, empty, fused):
        adapter.close()


def test_a_new_episode_rewrites_only_its_period_and_the_overview(server: OpenAITestServer, tmp_path: Path) -> None:
    adapter = HierarchicalAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"), group_size=2)
    load(adapter, 4, prepare_at=(4,))
    before = len(systems(server))
    ref, timestamp, text = EPISODES[4]
    adapter.ingest(ref, "scope", timestamp, text)
    adapter.prepare("scope", 5)
    assert systems(server)[before:] == [EPISODE_PROMPT, PERIOD_PROMPT, OVERVIEW_PROMPT]
    adapter.close()


def test_the_memory_at_a_checkpoint_is_the_same_whichever_checkpoints_came_before(server: OpenAITestServer, tmp_path: Path) -> None:
    llm = scripted_client(server, tmp_path / "c.sqlite")
    stepwise = HierarchicalAdapter(str(tmp_path), lens_llm=llm, group_size=2)
    at_once = HierarchicalAdapter(str(tmp_path), lens_llm=llm, group_size=2)
    load(stepwise, 5, prepare_at=(1, 2, 3, 4, 5))
    load(at_once, 5, prepare_at=(5,))
    for query in ("Pump-7 vibration", "snow north road", "vendor-api timeouts"):
        assert stepwise.search(query, None, 5) == at_once.search(query, None, 5)
    assert stepwise.call_extended_tool("memory_overview", {}) == at_once.call_extended_tool("memory_overview", {})
    early = HierarchicalAdapter(str(tmp_path), lens_llm=llm, group_size=2)
    load(early, 2, prepare_at=(2,))  # nothing from episodes 3-5 (not yet streamed) reaches any summary
    overview = early.call_extended_tool("memory_overview", {})
    assert "snow" not in str(overview) and "replaced" not in str(overview)
    assert "ep3" not in {r.ref_id for r in early.search("snow north road", None, 5)}
    for adapter in (stepwise, at_once, early):
        adapter.close()


def test_a_long_stream_is_summarised_in_rounds_before_the_overview(server: OpenAITestServer, tmp_path: Path) -> None:
    # Five episodes, periods of 2: three period summaries, longer together than the overview may read (100 chars).
    llm = scripted_client(server, tmp_path / "c.sqlite")
    stepwise = HierarchicalAdapter(str(tmp_path), lens_llm=llm, group_size=2, overview_input_chars=100)
    load(stepwise, 5, prepare_at=(2, 5))
    system, user = (m["content"] for m in server.requests[-1].body["messages"])
    assert system == OVERVIEW_PROMPT
    assert user.startswith("Period 2024-01-01 to 2024-01-05:\n")  # one block: the three periods, summarised in rounds
    system_and_start = [(m[0]["content"], m[1]["content"][:7]) for m in (r.body["messages"] for r in server.requests)]
    assert system_and_start.count((PERIOD_PROMPT, "Period ")) >= 2  # summaries of period summaries, in rounds
    at_once = HierarchicalAdapter(str(tmp_path), lens_llm=llm, group_size=2, overview_input_chars=100)
    load(at_once, 5, prepare_at=(5,))
    assert stepwise.call_extended_tool("memory_overview", {}) == at_once.call_extended_tool("memory_overview", {})
    for adapter in (stepwise, at_once):
        adapter.close()


def test_a_re_ingested_episode_loses_its_stale_summaries(server: OpenAITestServer, tmp_path: Path) -> None:
    adapter = HierarchicalAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"), group_size=2)
    load(adapter, 2, prepare_at=(2,))
    adapter.ingest("ep2", "scope", EPISODES[1][1], "## 2024-01-02 Ops\n- Pump-7 vibration 5.5 mm/s, steady")
    adapter.prepare("scope", 2)
    summary = adapter.call_extended_tool("memory_overview", {})["periods"][0]["summary"]
    assert "5.5 mm/s" in summary and "9.8 mm/s" not in summary
    adapter.close()


def test_a_recorded_hierarchy_replays_with_no_request_and_the_same_results(server: OpenAITestServer, tmp_path: Path) -> None:
    recorded = HierarchicalAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"))
    load(recorded, 5, prepare_at=(2, 5))
    before = server.count()
    replayed = HierarchicalAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite", "replay"))
    load(replayed, 5, prepare_at=(2, 5))
    assert server.count() == before
    assert replayed.search("Pump-7 vibration", None, 5) == recorded.search("Pump-7 vibration", None, 5)
    assert replayed.lens_stats() == recorded.lens_stats()
    recorded.close()
    replayed.close()


def test_an_empty_summary_is_an_adapter_fault_naming_the_episode(tmp_path: Path) -> None:
    with OpenAITestServer(LensPolicy(hierarchy=HierarchyPolicy(malformed=True))) as server:
        llm = scripted_client(server, tmp_path / "c.sqlite")
        caller = AdapterCaller.build(lambda: HierarchicalAdapter(str(tmp_path), lens_llm=llm), "hierarchical", 30)
        caller.reset("scope")
        caller.ingest("ep1", "scope", "2024-01-01T10:00:00", "Pump-7 vibration 4.1 mm/s", {})
        with pytest.raises(AdapterCallError) as raised:
            caller.prepare("scope", 1)
        caller.close()
    assert raised.value.fault.method == "prepare"
    assert "hierarchical got no summary of episode 'ep1' from the model (an empty reply)" in raised.value.fault.message


def test_memory_overview_takes_no_arguments(server: OpenAITestServer, tmp_path: Path) -> None:
    adapter = HierarchicalAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"))
    adapter.reset("scope")
    with pytest.raises(ValueError, match="takes no arguments"):
        adapter.call_extended_tool("memory_overview", {"x": 1})
    assert adapter.call_extended_tool("memory_overview", {}) == {"overview": "", "periods": []}
    adapter.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("failure", ["down", "not_json"])
def test_an_endpoint_down_or_answering_html_is_a_prepare_fault_and_the_next_prepare_finishes_the_memory(
    tmp_path: Path, failure: str
) -> None:
    with OpenAITestServer(LensPolicy(hierarchy=HierarchyPolicy())) as healthy:
        reference = HierarchicalAdapter(str(tmp_path), lens_llm=scripted_client(healthy, tmp_path / "ref.sqlite"), group_size=2)
        load(reference, 5, prepare_at=(5,))
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    llm = client_at(url, tmp_path / "c.sqlite", retries=1, backoff_base_s=0.01)
    caller = AdapterCaller.build(lambda: HierarchicalAdapter(str(tmp_path), lens_llm=llm, group_size=2), "hierarchical", 30)
    caller.reset("scope")
    for ref, timestamp, text in EPISODES:
        caller.ingest(ref, "scope", timestamp, text, {})
    with ExitStack() as stack:
        if failure == "not_json":  # the third episode's summary comes back as a proxy's HTML page, on both attempts
            fault = Fault("not_json", permanent=True, limit=2, contains="heavy snow")
            server = stack.enter_context(OpenAITestServer(LensPolicy(hierarchy=HierarchyPolicy()), faults=[fault], port=port))
        with pytest.raises(AdapterCallError) as raised:  # down: nothing listens on the port
            caller.prepare("scope", 5)
        if failure == "down":
            server = stack.enter_context(OpenAITestServer(LensPolicy(hierarchy=HierarchyPolicy()), port=port))
        caller.prepare("scope", 5)  # the endpoint answers again, and the memory is finished
    assert raised.value.fault.method == "prepare"
    message = raised.value.fault.message
    assert f"LLM request to {url} failed after 2 attempts" in message
    if failure == "down":
        assert "Connection error" in message
    else:
        assert "a body that is not JSON (text/html" in message
        assert [r.fault for r in server.requests].count("not_json") == 2
        assert "Pump-7 vibration 4.1" in server.requests[0].body["messages"][-1]["content"]  # written before the fault
    answered = [r.body["messages"][-1]["content"] for r in server.requests if r.fault is None]
    assert len(answered) == len(set(answered)) == 9  # 5 episodes, 3 periods, the overview: none asked for twice
    assert caller.extended("memory_overview", {}) == reference.call_extended_tool("memory_overview", {})
    assert caller.search("Pump-7 vibration", None, 5) == reference.search("Pump-7 vibration", None, 5)
    caller.close()
    reference.close()
