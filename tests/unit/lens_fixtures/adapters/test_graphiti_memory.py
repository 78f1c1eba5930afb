"""Graphiti (graphiti-core over embedded Kuzu) against the project's scripted server; skipped without graphiti-core, or beside cognee."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("graphiti_core", reason="the optional extra pytest-lens[graphiti] (graphiti-core, kuzu) is not installed")
# Beside cognee the adapter refuses to load (cognee's wheel shadows kuzu); test_cognee_memory.py checks that refusal.
pytest.importorskip("lens_fixtures.adapters.graphiti_memory", exc_type=ImportError)  # the skip quotes why

from lens_fixtures.adapters.graphiti_memory import GraphitiAdapter, GraphitiReplyError, parse_graphiti_reply
from lens_fixtures.openai_server import EmptyExtractionPolicy, ExtractionPolicy, LensPolicy, OpenAITestServer, Reply
from lens_fixtures.openai_server.extraction_graphiti import GraphitiPolicy, graphiti_reply_model
from lens_fixtures.openai_server.requests import ChatRequest
from pytest_lens import AdapterUnavailable
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from tests.unit.lens_fixtures.adapters.scripted import scripted_client

EPISODES = [
    ("ep1", "2024-01-01T10:00:00", "## 2024-01-01 Ops\n- Pump-7 vibration 4.1 mm/s at North Station\n- all quiet"),
    ("ep2", "2024-01-02T10:00:00", "## 2024-01-02 Ops\n- 40 cm of snow closed the North Road near Camp Alpha"),
    ("ep3", "2024-01-03T10:00:00", "## 2024-01-03 Ops\n- Pump-7 vibration 4.1 mm/s at North Station\n- Pump-7 vibration 9.8 mm/s, rising"),
]


def loaded(server: OpenAITestServer, tmp_path: Path, hashing: Any, episodes: int = 3, name: str = "a", **options: Any) -> GraphitiAdapter:
    adapter = GraphitiAdapter(
        str(tmp_path / name),
        lens_llm=scripted_client(server, tmp_path / "c.sqlite", options.pop("mode", "record")),
        embedder=hashing,
        **options,
    )
    adapter.reset("scope")
    for ref, timestamp, text in EPISODES[:episodes]:
        adapter.ingest(ref, "scope", timestamp, text)
    return adapter


def test_without_an_llm_the_adapter_is_unavailable_and_says_how_to_configure_one(hashing: Any) -> None:
    with pytest.raises(AdapterUnavailable, match="--lens-llm-base-url"):
        GraphitiAdapter(embedder=hashing)


def test_search_leads_from_graphitis_facts_to_their_episodes_and_retrieve_returns_the_episode(
    server: OpenAITestServer, tmp_path: Path, hashing: Any
) -> None:
    adapter = loaded(server, tmp_path, hashing)
    asked = [graphiti_reply_model(ChatRequest(r.body)) for r in server.requests]
    assert asked[:3] == ["ExtractedEntities", "ExtractedEdges", "EdgeTimestamps"]  # Graphiti's steps, in its order
    assert server.count() == adapter.lens_stats()["extraction_calls"] > 0
    results = adapter.search("North Road snow", None, 5)
    assert results[0].ref_id == "ep2"
    assert "40 cm of snow closed the North Road near Camp Alpha" in results[0].text.splitlines()[0]  # Graphiti's fact first
    assert adapter.retrieve("ep2").text == EPISODES[1][2]  # Graphiti's stored episode, verbatim
    assert adapter.retrieve("ep2").metadata == {"timestamp": "2024-01-02T10:00:00"}
    assert adapter.retrieve("nope") is None
    adapter.close()


def test_a_fact_stated_again_leads_to_both_episodes_and_an_earlier_checkpoint_sees_only_its_own(
    server: OpenAITestServer, tmp_path: Path, hashing: Any
) -> None:
    adapter = loaded(server, tmp_path, hashing, episodes=2)
    before = adapter.search("Pump-7 vibration North Station", None, 5)
    assert before[0].ref_id == "ep1"
    assert "ep3" not in {r.ref_id for r in before}  # checkpoint 2: nothing from ep3
    adapter.ingest(*EPISODES[2][:1], "scope", *EPISODES[2][1:])
    after = adapter.search("Pump-7 vibration North Station", None, 5)
    assert {"ep1", "ep3"} <= {r.ref_id for r in after}
    merged = [r.text.splitlines()[0] for r in after if r.ref_id in ("ep1", "ep3")]
    assert merged == ["Pump-7 vibration 4.1 mm/s at North Station"] * 2  # the restated fact leads to both episodes
    adapter.close()


def test_an_episode_graphiti_drew_nothing_from_is_found_only_through_the_fused_episode_search(
    server: OpenAITestServer, tmp_path: Path, hashing: Any
) -> None:
    quiet = ("ep4", "2024-01-04T10:00:00", "## 2024-01-04 Ops\n- quiet shift, the kettle descaled")  # no named thing
    for search, found in (("fused", ["ep4"]), ("memory", [])):
        adapter = loaded(server, tmp_path, hashing, episodes=1, name=search, search=search)
        adapter.ingest(quiet[0], "scope", quiet[1], quiet[2])
        assert [r.ref_id for r in adapter.search("kettle descaled", None, 5)] == found
        assert adapter.retrieve("ep4").text == quiet[2]  # stored all the same
        adapter.close()


def test_an_entity_leads_to_the_episodes_that_mention_it_and_an_empty_graph_finds_nothing(tmp_path: Path, hashing: Any) -> None:
    with OpenAITestServer() as server:
        built = loaded(server, tmp_path, hashing, name="built")
        # "Camp Alpha" is an entity of ep2 (no fact names it alone): found through the node, shown by its name.
        found = built.search("Camp Alpha", None, 5)
        assert found[0].ref_id == "ep2" and any(line.startswith("Camp Alpha") for line in found[0].text.splitlines())
        built.close()
    with OpenAITestServer(EmptyExtractionPolicy()) as empty_server:
        empty = loaded(empty_server, tmp_path, hashing, name="empty")
        fused = loaded(empty_server, tmp_path, hashing, name="fused", search="fused")
        assert empty.lens_stats()["facts"] == empty.lens_stats()["entities"] == 0 and empty.lens_stats()["episodes"] == 3
        assert empty.search("Pump-7 vibration North Station", None, 5) == []
        assert fused.search("Pump-7 vibration North Station", None, 5)  # Graphiti's episode BM25 reads the raw text
        for adapter in (empty, fused):
            adapter.close()


def test_a_date_range_keeps_only_the_episodes_inside_it(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    adapter = loaded(server, tmp_path, hashing)
    ranged = adapter.search("Pump-7 vibration", {"start_date": "2024-01-03", "end_date": "2024-01-03"}, 5)
    assert [r.ref_id for r in ranged] == ["ep3"]
    adapter.close()


def test_a_recorded_stream_replays_with_no_request_and_the_same_memory(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    recorded = loaded(server, tmp_path, hashing)
    before = server.count()
    replayed = loaded(server, tmp_path, hashing, name="b", mode="replay")
    assert server.count() == before
    assert replayed.search("Pump-7 snow", None, 5) == recorded.search("Pump-7 snow", None, 5)
    recorded.close()
    replayed.close()


def test_reset_and_close_delete_every_store_the_adapter_made(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    adapter = loaded(server, tmp_path, hashing, episodes=1)
    (made,) = (tmp_path / "a").iterdir()
    assert [p.name for p in made.iterdir() if p.name.startswith("graph-1")]  # the Kuzu database
    adapter.reset("other")
    assert not [p for p in made.iterdir() if p.name.startswith("graph-1")]
    assert adapter.search("Pump-7", None, 5) == [] and adapter.retrieve("ep1") is None
    adapter.close()
    assert list((tmp_path / "a").iterdir()) == []


def test_an_unreadable_reply_is_an_adapter_fault_quoting_it_and_graphitis_step(tmp_path: Path, hashing: Any) -> None:
    with OpenAITestServer(LensPolicy(extraction=ExtractionPolicy(malformed=True))) as server:
        llm = scripted_client(server, tmp_path / "c.sqlite")
        caller = AdapterCaller.build(lambda: GraphitiAdapter(str(tmp_path / "s"), lens_llm=llm, embedder=hashing), "graphiti", 60)
        caller.reset("scope")
        with pytest.raises(AdapterCallError) as raised:
            caller.ingest("ep1", "scope", "2024-01-01T10:00:00", "Pump-7 vibration 4.1 mm/s at North Station", {})
        assert server.count() == 1  # not retried (Graphiti would wait 5-120 s between four tries)
        assert caller.search("Pump-7", None, 5) == []
        caller.close()
    assert raised.value.fault.method == "ingest"
    message = raised.value.fault.message
    assert "graphiti could not add episode 'ep1': the ExtractedEntities reply is not JSON" in message
    assert "Sure! Here are the entities" in message


def test_a_failed_request_graphiti_would_skip_is_still_a_fault(tmp_path: Path, hashing: Any) -> None:
    scripted = GraphitiPolicy()

    def bad_dates(request: ChatRequest) -> Reply:  # Graphiti logs a failed EdgeTimestamps and keeps the fact undated
        return Reply(content="no idea") if graphiti_reply_model(request) == "EdgeTimestamps" else scripted(request)

    with OpenAITestServer(LensPolicy(extraction=bad_dates)) as server:
        adapter = GraphitiAdapter(str(tmp_path / "s"), lens_llm=scripted_client(server, tmp_path / "c.sqlite"), embedder=hashing)
        adapter.reset("scope")
        with pytest.raises(GraphitiReplyError, match=r"without the answer to a failed request.*EdgeTimestamps reply is not JSON"):
            adapter.ingest("ep1", "scope", "2024-01-01T10:00:00", "Pump-7 vibration 4.1 mm/s at North Station")
        adapter.close()


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("the pump is fine", "the ExtractedEntities reply is not JSON"),
        ('["Pump-7"]', "a JSON list, not an object"),
        ('{"entities": ["Pump-7"]}', "does not match Graphiti's schema .*extracted_entities: Field required"),
        ('{"extracted_entities": [{"name": "Pump-7", "entity_type_id": "pump"}]}', "extracted_entities.0.entity_type_id"),
    ],
)
def test_every_reply_graphiti_cannot_use_is_an_error(reply: str, problem: str) -> None:
    from graphiti_core.prompts.extract_nodes import ExtractedEntities

    with pytest.raises(GraphitiReplyError, match=problem):
        parse_graphiti_reply(reply, ExtractedEntities)


def test_a_fenced_reply_is_read() -> None:
    from graphiti_core.prompts.extract_nodes import ExtractedEntities

    reply = '```json\n{"extracted_entities": [{"name": "Pump-7", "entity_type_id": 0}]}\n```'
    assert parse_graphiti_reply(reply, ExtractedEntities) == {"extracted_entities": [{"name": "Pump-7", "entity_type_id": 0}]}


#: The clauses Graphiti's design bears on: refs recoverable and episodes returned whole, forgetting, isolation,
#: a rare token found through Graphiti's search, and prepare as a harmless barrier. Three examples each (a fresh
#: Kuzu graph per example, about 3 s an episode even with the scripted model); every clause of the catalogue
#: passed at six examples (docs/systems/graphiti.md).
GRAPHITI_CLAUSES = [
    "retrieve.roundtrip",
    "search.known_refs",
    "reset.forgets",
    "scope.isolation",
    "recall.rare_token",
    "prepare.idempotent",
]
GRAPHITI_PROFILE = "lens-test-graphiti"


def test_graphiti_keeps_the_contract_bearing_clauses(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    pytest.importorskip("hypothesis", reason="the conformance suite needs the optional extra pytest-lens[conformance]")
    from hypothesis import HealthCheck, Phase, settings

    from pytest_lens.conformance import ConformanceConfig, SubjectFactory, select_clauses, verify_clause
    from pytest_lens.records.settings import AdapterSpec

    settings.register_profile(
        GRAPHITI_PROFILE,
        max_examples=3,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    llm = scripted_client(server, tmp_path / "c.sqlite", "off")
    spec = AdapterSpec("graphiti", "lens_fixtures.adapters.graphiti_memory:GraphitiAdapter", {"embedder": hashing})
    factory = SubjectFactory(spec, tmp_path / "s", lens_llm=llm)
    found = {}
    for clause in select_clauses(GRAPHITI_CLAUSES):
        outcome = verify_clause(clause, factory, ConformanceConfig(profile=GRAPHITI_PROFILE))
        found[clause.id] = outcome.status if outcome.status != "failed" else f"failed: {outcome.message}"
    assert found == dict.fromkeys(GRAPHITI_CLAUSES, "passed")
    assert server.count() > 0  # Graphiti built its graphs through the model
    assert [p for p in (tmp_path / "s").rglob("*") if "graph-" in p.name] == []  # every example's Kuzu graph deleted
