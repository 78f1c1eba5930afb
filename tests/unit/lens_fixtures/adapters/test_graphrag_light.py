"""GraphRAG-light against the project's OpenAI-compatible server: the graph is built at prepare, faults are loud."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens_fixtures.adapters.graphrag_light import ExtractionReplyError, GraphRAGLightAdapter, parse_graph_extraction
from lens_fixtures.openai_server import EmptyExtractionPolicy, ExtractionPolicy, LensPolicy, OpenAITestServer
from pytest_lens import AdapterUnavailable
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from tests.unit.lens_fixtures.adapters.scripted import scripted_client

EPISODES = [
    ("ep1", "2024-01-01T10:00:00", "## 2024-01-01 Ops\n- service-b retries against geo-lookup rose to 12%\n- checkout p99 410ms"),
    ("ep2", "2024-01-02T10:00:00", "## 2024-01-02 Ops\n- geo-lookup latency 900ms after the vendor-api change"),
    ("ep3", "2024-01-03T10:00:00", "## 2024-01-03 Ops\n- heavy snow closed the north road"),
    ("ep4", "2024-01-04T10:00:00", "## 2024-01-04 Ops\n- vendor-api timeouts at 30%"),
]


def load(adapter: GraphRAGLightAdapter, upto: int, prepare_at: tuple[int, ...]) -> None:
    adapter.reset("scope")
    for index, (ref, timestamp, text) in enumerate(EPISODES[:upto], start=1):
        adapter.ingest(ref, "scope", timestamp, text)
        if index in prepare_at:
            adapter.prepare("scope", index)


def test_without_an_llm_the_adapter_is_unavailable_and_says_how_to_configure_one() -> None:
    with pytest.raises(AdapterUnavailable, match="--lens-llm-base-url"):
        GraphRAGLightAdapter()


def test_ingest_calls_no_model_and_prepare_reads_each_episode_once(server: OpenAITestServer, tmp_path: Path) -> None:
    adapter = GraphRAGLightAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"))
    load(adapter, 4, prepare_at=())
    assert server.count(kind="extraction") == 0
    adapter.prepare("scope", 4)
    adapter.prepare("scope", 4)
    assert server.count(kind="extraction") == 4
    assert adapter.lens_stats()["extraction_calls"] == 4
    adapter.close()


def test_search_follows_relations_one_hop_to_episodes_the_query_does_not_name(server: OpenAITestServer, tmp_path: Path) -> None:
    llm = scripted_client(server, tmp_path / "c.sqlite")
    hopping = GraphRAGLightAdapter(str(tmp_path), lens_llm=llm)
    flat = GraphRAGLightAdapter(str(tmp_path), lens_llm=llm, hops=0)
    for adapter in (hopping, flat):
        load(adapter, 4, prepare_at=(4,))
    # ep4 names vendor-api only; service-b -> geo-lookup (ep1) -> vendor-api (ep2) is two hops away from the query.
    two_hops = GraphRAGLightAdapter(str(tmp_path), lens_llm=llm, hops=2)
    load(two_hops, 4, prepare_at=(4,))
    assert "ep4" in [r.ref_id for r in two_hops.search("service-b", None, 5)]
    assert "ep4" not in [r.ref_id for r in flat.search("service-b", None, 5)]
    found = {r.ref_id: r.text for r in hopping.search("service-b", None, 5)}
    assert "ep2" in found and "geo-lookup" in found["ep2"]  # ep2 never says service-b: reached through geo-lookup
    assert "ep2" not in [r.ref_id for r in flat.search("service-b", None, 5)]
    neighbours = hopping.call_extended_tool("graph_neighbors", {"entity": "geo-lookup"})
    assert {(rel["source"], rel["target"], rel["ref_id"]) for rel in neighbours["relations"]} >= {("service-b", "geo-lookup", "ep1")}
    for adapter in (hopping, flat, two_hops):
        adapter.close()


def test_the_graph_at_a_checkpoint_is_the_same_whichever_checkpoints_came_before(server: OpenAITestServer, tmp_path: Path) -> None:
    llm = scripted_client(server, tmp_path / "c.sqlite")
    stepwise = GraphRAGLightAdapter(str(tmp_path), lens_llm=llm)
    at_once = GraphRAGLightAdapter(str(tmp_path), lens_llm=llm)
    load(stepwise, 4, prepare_at=(1, 2, 3, 4))
    load(at_once, 4, prepare_at=(4,))
    for query in ("service-b", "vendor-api timeouts", "geo-lookup latency"):
        assert stepwise.search(query, None, 5) == at_once.search(query, None, 5)
    early = GraphRAGLightAdapter(str(tmp_path), lens_llm=llm)
    load(early, 1, prepare_at=(1,))  # nothing from episodes 2-4 (not yet streamed) reaches the graph
    assert early.call_extended_tool("graph_neighbors", {"entity": "vendor-api"}) == {
        "entity": "vendor-api",
        "relations": [],
        "mentioned_in": [],
    }
    for adapter in (stepwise, at_once, early):
        adapter.close()


def test_search_reads_the_graph_the_model_built_and_finds_nothing_in_an_empty_one(server: OpenAITestServer, tmp_path: Path) -> None:
    built = GraphRAGLightAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"))
    load(built, 4, prepare_at=(4,))
    found = built.search("vendor-api timeouts", None, 5)
    # The episodes naming the entity, and ep1 one relation away (geo-lookup); each shows what led to it.
    assert found[0].ref_id == "ep2" and {r.ref_id for r in found} == {"ep1", "ep2", "ep4"}
    assert all(("vendor-api" if r.ref_id != "ep1" else "geo-lookup") in r.text for r in found)
    assert built.search("heavy snow north road", None, 5) == []  # a record whose words name no entity: BM25 alone finds it
    with OpenAITestServer(EmptyExtractionPolicy()) as empty_server:
        empty_llm = scripted_client(empty_server, tmp_path / "empty.sqlite")
        empty = GraphRAGLightAdapter(str(tmp_path), lens_llm=empty_llm)
        fused = GraphRAGLightAdapter(str(tmp_path), lens_llm=empty_llm, search="fused")
        for adapter in (empty, fused):
            load(adapter, 4, prepare_at=(4,))
        assert empty_server.count(kind="extraction") == 4 and empty.lens_stats()["entities"] == 0
        assert empty.search("vendor-api timeouts", None, 5) == []
        # The fused mode scores the raw episodes whatever the model built: it stays an explicit option.
        assert [r.ref_id for r in fused.search("vendor-api timeouts", None, 5)][:1] == ["ep4"]
    with pytest.raises(ValueError, match="option search must be 'memory'"):
        GraphRAGLightAdapter(str(tmp_path), lens_llm=empty_llm, search="bm25")
    for adapter in (built, empty, fused):
        adapter.close()


def test_a_recorded_graph_replays_with_no_request_and_the_same_results(server: OpenAITestServer, tmp_path: Path) -> None:
    recorded = GraphRAGLightAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite"))
    load(recorded, 4, prepare_at=(2, 4))
    before = server.count()
    replayed = GraphRAGLightAdapter(str(tmp_path), lens_llm=scripted_client(server, tmp_path / "c.sqlite", "replay"))
    load(replayed, 4, prepare_at=(2, 4))
    assert server.count() == before
    assert replayed.search("service-b", None, 5) == recorded.search("service-b", None, 5)
    assert replayed.lens_stats() == recorded.lens_stats()
    recorded.close()
    replayed.close()


def test_an_unreadable_extraction_is_an_adapter_fault_naming_the_episode(tmp_path: Path) -> None:
    with OpenAITestServer(LensPolicy(extraction=ExtractionPolicy(malformed=True))) as server:
        llm = scripted_client(server, tmp_path / "c.sqlite")
        caller = AdapterCaller.build(lambda: GraphRAGLightAdapter(str(tmp_path), lens_llm=llm), "graphrag-light", 30)
        caller.reset("scope")
        caller.ingest("ep1", "scope", "2024-01-01T10:00:00", "service-b retries rose", {})
        with pytest.raises(AdapterCallError) as raised:
            caller.prepare("scope", 1)
        caller.close()
    assert raised.value.fault.method == "prepare"
    assert "graphrag-light could not read the graph extracted from episode 'ep1'" in raised.value.fault.message
    assert "the reply is not JSON" in raised.value.fault.message and "Sure! The record mentions" in raised.value.fault.message


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("[]", "a JSON list, not an object"),
        ('{"entities": "x", "relations": []}', "needs 'entities' and 'relations' lists"),
        ('{"entities": [{"type": "t"}], "relations": []}', "entity 0 has no 'name' string"),
        ('{"entities": [], "relations": [{"source": "a", "target": "b"}]}', "relation 0 needs 'source', 'relation' and 'target'"),
    ],
)
def test_each_shape_error_says_what_is_wrong(reply: str, problem: str) -> None:
    with pytest.raises(ExtractionReplyError, match=problem):
        parse_graph_extraction(reply)


def test_a_fenced_reply_and_an_empty_graph_are_read() -> None:
    assert parse_graph_extraction('```json\n{"entities": [{"name": "A"}], "relations": []}\n```') == ([("A", "", "")], [])
    assert parse_graph_extraction('{"entities": []}') == ([], [])
