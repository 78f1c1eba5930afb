"""Cognee (add -> cognify -> search) against the project's OpenAI-compatible server; skipped only without cognee.

Every test builds a real Cognee (SQLite, LanceDB and its embedded graph in the test's directory); the first
import of cognee in a process takes 15-40 s on a loaded 2-core machine, each fresh store about 10 s more.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("cognee") is None:  # importorskip would import cognee before the adapter configures it
    pytest.skip("the optional extra pytest-lens[cognee] (cognee) is not installed", allow_module_level=True)

from lens_fixtures.adapters.cognee_memory import CogneeAdapter
from lens_fixtures.openai_server import EmptyExtractionPolicy, LensPolicy, OpenAITestServer
from lens_fixtures.openai_server.extraction_cognee import CogneePolicy
from pytest_lens import AdapterUnavailable
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.llm.stats import counting
from tests.unit.lens_fixtures.adapters.scripted import scripted_client

EPISODES = [
    ("ep1", "2024-01-01T10:00:00", "## 2024-01-01 Ops\n- Pump-7 vibration 4.1 mm/s\n- all quiet at North Station"),
    ("ep2", "2024-01-02T10:00:00", "## 2024-01-02 Ops\n- Pump-7 vibration 9.8 mm/s, rising sharply"),
    ("ep3", "2024-01-03T10:00:00", "## 2024-01-03 Ops\n- 40 cm of snow closed the North Road"),
]


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    """The scripted server with Cognee's role (its request log is the test's own)."""
    with OpenAITestServer(LensPolicy()) as running:
        yield running


def cognee(server: OpenAITestServer, tmp_path: Path, hashing: Any, name: str = "a", cache: str = "a", **options: Any) -> CogneeAdapter:
    (tmp_path / name).mkdir()
    llm = scripted_client(server, tmp_path / f"{cache}.sqlite", options.pop("mode", "record"))
    adapter = CogneeAdapter(str(tmp_path / name), lens_llm=llm, embedder=hashing, **options)
    adapter.reset("scope")
    return adapter


def cognee_prompts(server: OpenAITestServer) -> list[str]:
    return [str(r.body["messages"][-1]["content"]) for r in server.requests if "You MUST respond with valid JSON" in json.dumps(r.body)]


def test_without_an_llm_the_adapter_is_unavailable_and_says_how_to_configure_one(hashing: Any) -> None:
    with pytest.raises(AdapterUnavailable, match="--lens-llm-base-url"):
        CogneeAdapter(embedder=hashing)


def test_cognify_builds_at_prepare_search_leads_to_episodes_and_close_removes_every_store(
    server: OpenAITestServer, tmp_path: Path, hashing: Any
) -> None:
    adapter = cognee(server, tmp_path, hashing)
    for ref, timestamp, text in EPISODES:
        adapter.ingest(ref, "scope", timestamp, text)
    assert cognee_prompts(server) == []  # add asks no model
    assert adapter.search("snow road", None, 3) == []  # nothing cognified: no chunk to search
    with counting() as question:  # as the run counts a question's requests: Cognee's, made on its own loop, are there
        adapter.prepare("scope", 3)
    prompts = cognee_prompts(server)
    assert question.snapshot().requests == adapter.lens_stats()["extraction_calls"] >= 6
    assert len(prompts) == 6 and all(any(text in p for _, _, text in EPISODES) for p in prompts)  # graph + summary per chunk
    results = adapter.search("snow closed the north road", None, 3)
    # The graph's triplets that led to it: the entities the model named in the record, and its summary.
    assert results[0].ref_id == "ep3" and "north road" in results[0].text and "40 cm of snow" in results[0].text
    assert {r.ref_id for r in adapter.search("Pump-7 vibration", {"start_date": "2024-01-02"}, 3)} <= {"ep2", "ep3"}
    assert adapter.retrieve("ep2").text == EPISODES[1][2] and adapter.retrieve("nope") is None
    stats = adapter.lens_stats()
    assert stats["extraction_calls"] >= 6 and stats["extraction_prompt_tokens"] > 0 and stats["embedded_texts"] > 0
    adapter.prepare("scope", 3)  # idempotent: nothing new to cognify
    assert len(cognee_prompts(server)) == 6
    adapter.close()
    assert list((tmp_path / "a").iterdir()) == []


def test_nothing_from_a_later_episode_reaches_an_earlier_checkpoint(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    adapter = cognee(server, tmp_path, hashing)
    for ref, timestamp, text in EPISODES[:2]:
        adapter.ingest(ref, "scope", timestamp, text)
    adapter.prepare("scope", 2)
    assert not any("snow" in prompt for prompt in cognee_prompts(server))
    assert "ep3" not in {r.ref_id for r in adapter.search("snow closed the north road", None, 5)}
    before = len(cognee_prompts(server))
    ref, timestamp, text = EPISODES[2]
    adapter.ingest(ref, "scope", timestamp, text)
    adapter.prepare("scope", 3)
    new = cognee_prompts(server)[before:]
    assert len(new) == 2 and all("snow" in prompt and "Pump-7" not in prompt for prompt in new)  # the new episode alone
    assert adapter.search("snow closed the north road", None, 1)[0].ref_id == "ep3"
    adapter.reset("scope")
    assert adapter.search("pump", None, 5) == [] and adapter.retrieve("ep1") is None
    adapter.close()


def test_search_reads_the_graph_cognify_built_and_an_empty_extraction_finds_nothing(tmp_path: Path, hashing: Any) -> None:
    with OpenAITestServer(EmptyExtractionPolicy(base=LensPolicy())) as server:
        empty = cognee(server, tmp_path, hashing, name="empty", cache="empty")
        fused = cognee(server, tmp_path, hashing, name="fused", cache="fused", search="fused")
        for adapter in (empty, fused):
            for ref, timestamp, text in EPISODES:
                adapter.ingest(ref, "scope", timestamp, text)
            adapter.prepare("scope", 3)
        assert len(cognee_prompts(server)) == 12  # a graph and a summary asked for every chunk, twice: each reply empty
        # Cognee's own graph context would still hold the raw chunks (chunk -> document): the adapter reads what the
        # model wrote, which is nothing; the fused mode finds the chunks.
        assert empty.search("snow closed the north road", None, 3) == []
        assert fused.search("snow closed the north road", None, 3)[0].ref_id == "ep3"
        for adapter in (empty, fused):
            adapter.close()


def test_a_recorded_stream_replays_with_no_request_and_the_same_memory(server: OpenAITestServer, tmp_path: Path, hashing: Any) -> None:
    recorded = cognee(server, tmp_path, hashing)
    for ref, timestamp, text in EPISODES:
        recorded.ingest(ref, "scope", timestamp, text)
    recorded.prepare("scope", 3)
    before = server.count()
    replayed = cognee(server, tmp_path, hashing, name="b", cache="a", mode="replay")  # a second Cognee, the recording replayed
    for ref, timestamp, text in EPISODES:
        replayed.ingest(ref, "scope", timestamp, text)
    replayed.prepare("scope", 3)
    assert server.count() == before
    assert replayed.search("snow closed the north road", None, 3) == recorded.search("snow closed the north road", None, 3)
    assert replayed.lens_stats()["extraction_prompt_tokens"] == recorded.lens_stats()["extraction_prompt_tokens"] > 0
    recorded.close()
    replayed.close()


def test_a_reply_cognee_cannot_validate_is_an_adapter_fault_with_cognees_message(tmp_path: Path, hashing: Any) -> None:
    with OpenAITestServer(LensPolicy(cognee=CogneePolicy(malformed=True))) as server:
        llm = scripted_client(server, tmp_path / "c.sqlite")
        (tmp_path / "a").mkdir()
        caller = AdapterCaller.build(lambda: CogneeAdapter(str(tmp_path / "a"), lens_llm=llm, embedder=hashing), "cognee", 120)
        caller.reset("scope")
        ref, timestamp, text = EPISODES[0]
        caller.ingest(ref, "scope", timestamp, text, {})
        with pytest.raises(AdapterCallError) as raised:
            caller.prepare("scope", 1)
        assert caller.search("pump", None, 5) == []  # the episode is not silently in the memory
        caller.close()
    assert raised.value.fault.method == "prepare"
    message = raised.value.fault.message
    # Cognee asked for the chunk's graph and its summary side by side: both rejected, both named, in a fixed order.
    assert "Cognee could not validate the model's reply: 2 requests on one chunk: 1 validation error for" in message
    graph, summary = message.split(" | ")
    assert "validation error for KnowledgeGraph" in graph and "validation error for SummarizedContent" in summary
    assert "Invalid JSON" in message and "Sure! Here is what the t" in message  # the reply, quoted
    assert not (tmp_path / "a").exists() or list((tmp_path / "a").iterdir()) == []


COGNEE_CLAUSES = ["retrieve.roundtrip", "search.known_refs", "reset.forgets", "recall.rare_token"]


def test_graphiti_beside_cognee_refuses_to_load_saying_why() -> None:
    # cognee's wheel installs a `kuzu` module (a shim over Ladybug 0.19) that shadows Kuzu 0.11: Graphiti's searches
    # would each fail with Ladybug's "function CREATE_FTS_INDEX is not defined", so the adapter refuses at import.
    if importlib.util.find_spec("graphiti_core") is None:
        pytest.skip("graphiti-core is not installed beside cognee here (CI's cognee venv is layered over one that has it)")
    command = [sys.executable, "-c", "import lens_fixtures.adapters.graphiti_memory"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    assert "is ladybug" in done.stderr and "install pytest-lens[graphiti] and pytest-lens[cognee] in separate environments" in done.stderr


def test_cognee_keeps_the_contract_bearing_clauses(tmp_path: Path, hashing: Any) -> None:
    pytest.importorskip("hypothesis", reason="the conformance suite needs the optional extra pytest-lens[conformance]")
    from hypothesis import HealthCheck, Phase, settings

    from pytest_lens.conformance import ConformanceConfig, SubjectFactory, select_clauses, verify_clause
    from pytest_lens.records.settings import AdapterSpec

    profile = "lens-test-cognee"
    settings.register_profile(
        profile,
        max_examples=2,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    with OpenAITestServer(LensPolicy()) as server:
        llm = scripted_client(server, tmp_path / "c.sqlite", "off")
        spec = AdapterSpec("cognee", "lens_fixtures.adapters.cognee_memory:CogneeAdapter", {"embedder": hashing})
        factory = SubjectFactory(spec, tmp_path, lens_llm=llm)
        found = {}
        for clause in select_clauses(COGNEE_CLAUSES):
            outcome = verify_clause(clause, factory, ConformanceConfig(profile=profile))
            found[clause.id] = outcome.status if outcome.status != "failed" else f"failed: {outcome.message}"
    assert found == dict.fromkeys(COGNEE_CLAUSES, "passed")
