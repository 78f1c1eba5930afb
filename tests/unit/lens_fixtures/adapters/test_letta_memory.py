"""Letta against a real ``letta server`` (SQLite) and the project's OpenAI-compatible server as its model.

The server is a separate installation (see docs/systems/letta.md): its ``letta`` command is named by
``LENS_LETTA_SERVER``. One server is started per module; each adapter attaches to it with ``server_url`` and
makes its own agent, except the test of the adapter-owned server, which starts and removes its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("letta_client", reason="the optional extra pytest-lens[letta] (letta-client) is not installed")

from lens_fixtures.adapters.letta_memorize import CORE_MEMORY_REF, LettaMemorizeAdapter
from lens_fixtures.adapters.letta_memory import SERVER_ENV, LettaAdapter, LettaServer, ModelRelay, agent_name
from lens_fixtures.openai_server import EmptyExtractionPolicy, LensPolicy, LettaAgentPolicy, OpenAITestServer
from pytest_lens import AdapterUnavailable
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.llm.stats import counting
from tests.unit.lens_fixtures.adapters.scripted import scripted_client

EPISODES = [
    ("ep1", "2024-01-01T10:00:00", "## 2024-01-01 Ops\n- pump seven vibration 4.1 mm/s\n- all quiet"),
    ("ep2", "2024-01-02T10:00:00", "## 2024-01-02 Ops\n- pump seven vibration 9.8 mm/s, rising sharply"),
    ("ep3", "2024-01-03T10:00:00", "## 2024-01-03 Ops\n- 40 cm of snow closed the north road"),
]
COMMAND = os.environ.get(SERVER_ENV, "")
#: Skipped where no Letta server is installed, except under CI=true (.ci/run installs one): there they fail, saying so.
needs_server = pytest.mark.skipif(
    not COMMAND and os.environ.get("CI") != "true",
    reason=f"no Letta server installation: set {SERVER_ENV} to its letta command (docs/systems/letta.md)",
)


@pytest.fixture(scope="module")
def letta_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = LettaServer(COMMAND, tmp_path_factory.mktemp("letta-server"))
    yield server.url
    server.stop()


def attached(letta_url: str, tmp_path: Path, hashing: Any, server: OpenAITestServer | None = None, **options: Any) -> LettaAdapter:
    llm = scripted_client(server, tmp_path / f"{options.pop('cache', 'c')}.sqlite") if server is not None else None
    kind = LettaMemorizeAdapter if options.pop("memorize", False) else LettaAdapter
    tmp_path.mkdir(parents=True, exist_ok=True)
    adapter = kind(str(tmp_path), server_url=letta_url, lens_llm=llm, embedder=hashing, **options)
    adapter.reset("scope")
    return adapter


def test_without_a_server_the_adapter_is_unavailable_and_says_how_to_install_one(monkeypatch: pytest.MonkeyPatch, hashing: Any) -> None:
    monkeypatch.delenv(SERVER_ENV, raising=False)
    with pytest.raises(AdapterUnavailable, match=f"{SERVER_ENV}.*letta\\[server,sqlite\\]"):
        LettaAdapter(embedder=hashing)


def test_every_scope_id_becomes_an_agent_name_letta_accepts() -> None:
    # Letta 0.11 answers HTTP 422 to a name with any other character than letters, digits, space, - and _.
    names = [agent_name(scope) for scope in ("scope", "Scope ü/1:x", "a/b", "a:b", "", "x" * 200)]
    assert all(re.fullmatch(r"[A-Za-z0-9 _-]+", name) and len(name) <= 67 for name in names)
    assert len(set(names)) == len(names)  # "a/b" and "a:b" stay apart


@needs_server
def test_a_scope_id_letta_would_refuse_as_a_name_still_gets_an_agent(letta_url: str, tmp_path: Path, hashing: Any) -> None:
    adapter = attached(letta_url, tmp_path, hashing)
    adapter.reset("Scope ü/1:x")  # found by the conformance suite: every such reset was an HTTP 422
    adapter.ingest("ep1", "Scope ü/1:x", EPISODES[0][1], EPISODES[0][2])
    assert [r.ref_id for r in adapter.search("snow north road", None, 5)] == ["ep1"]
    adapter.close()


@needs_server
def test_search_leads_back_to_each_episode_and_a_checkpoint_sees_no_later_one(letta_url: str, tmp_path: Path, hashing: Any) -> None:
    adapter = attached(letta_url, tmp_path, hashing)
    adapter.ingest("ep1", "scope", EPISODES[0][1], EPISODES[0][2])
    assert [r.ref_id for r in adapter.search("snow north road", None, 5)] == ["ep1"]  # the only episode so far
    for ref, timestamp, text in EPISODES[1:]:
        adapter.ingest(ref, "scope", timestamp, text)
    results = adapter.search("snow north road", None, 5)
    assert results[0].ref_id == "ep3" and "40 cm of snow" in results[0].text  # Letta's passage, under its episode
    assert sorted(r.ref_id for r in results) == ["ep1", "ep2", "ep3"]
    dated = adapter.search("pump vibration", {"start_date": "2024-01-02", "end_date": "2024-01-02"}, 5)
    assert [r.ref_id for r in dated] == ["ep2"]
    assert adapter.retrieve("ep2").text == EPISODES[1][2]
    assert adapter.retrieve("nope") is None
    assert hashing.texts_encoded >= 4  # Letta's passages and queries were embedded by our embedder, through the relay
    stats = adapter.lens_stats()
    assert stats["passages_inserted"] >= 3 and stats["chat_requests"] == 0  # nothing LLM-built without memorize
    adapter.close()


@needs_server
def test_memorize_lets_the_model_write_core_memory_which_search_and_the_context_read(letta_url: str, tmp_path: Path, hashing: Any) -> None:
    with OpenAITestServer() as server:
        adapter = attached(letta_url, tmp_path, hashing, server, memorize=True)
        assert adapter.context("scope", 0) is None  # nothing written yet
        with counting() as question:  # as the run counts a question's requests: those Letta sent through the relay too
            for ref, timestamp, text in EPISODES[1:]:
                adapter.ingest(ref, "scope", timestamp, text)
        assert "pump seven vibration 9.8 mm/s, rising sharply" in adapter.core_memory()["human"]
        assert server.count(kind="letta") == adapter.lens_stats()["chat_requests"] >= 4  # per episode a memory step, then send_message
        assert question.snapshot().requests == adapter.lens_stats()["chat_requests"]
        # Search reads the lines the model wrote, each under the episode whose turn wrote it.
        found = adapter.search("snow north road", None, 5)
        assert [r.ref_id for r in found] == ["ep3", "ep2"] and found[0].text == "40 cm of snow closed the north road"
        assert [r.ref_id for r in adapter.search("pump vibration", {"start_date": "2024-01-02", "end_date": "2024-01-02"}, 5)] == ["ep2"]
        # The agent's context: core memory as Letta shows it to its own agent, cited by its synthetic ref.
        context = adapter.context("scope", 3)
        assert context is not None and context.startswith("<memory_blocks>") and "40 cm of snow closed the north road\n" in context
        assert adapter.get_capabilities().context_block.ref_id == CORE_MEMORY_REF
        adapter.close()


@needs_server
def test_a_core_memory_the_model_left_empty_finds_nothing_while_the_fused_search_reads_the_archive(
    letta_url: str, tmp_path: Path, hashing: Any
) -> None:
    with OpenAITestServer(EmptyExtractionPolicy(base=LensPolicy())) as server:
        empty = attached(letta_url, tmp_path / "empty", hashing, server, memorize=True)
        fused = attached(letta_url, tmp_path / "fused", hashing, server, memorize=True, search="fused", cache="f")
        for adapter in (empty, fused):
            for ref, timestamp, text in EPISODES:
                adapter.ingest(ref, "scope", timestamp, text)
        assert empty.lens_stats()["episodes_memorized"] == 3 and empty.core_memory()["human"] == ""  # each turn only answered
        assert empty.search("snow north road", None, 5) == [] and empty.context("scope", 3) is None
        assert fused.search("snow north road", None, 5)[0].ref_id == "ep3"  # Letta's archival memory holds the raw episodes
        for adapter in (empty, fused):
            adapter.close()


def test_tool_call_ids_are_numbered_in_order_of_appearance() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "aea623b2-356b", "type": "function"}]},
        {"role": "tool", "tool_call_id": "aea623b2-356b", "content": "ok"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "x9Zk", "type": "function"}, {"id": "q1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "q1", "content": "ok"},
    ]
    renamed = ModelRelay.numbered_calls(messages)
    assert [c["id"] for m in renamed for c in m.get("tool_calls", [])] == ["call_1", "call_2", "call_3"]
    assert [m["tool_call_id"] for m in renamed if "tool_call_id" in m] == ["call_1", "call_3"]
    assert messages[1]["tool_calls"][0]["id"] == "aea623b2-356b"  # the caller's messages are left alone


def test_lettas_lists_are_sorted_in_place_and_the_rest_of_the_prompt_kept() -> None:
    prompt = (
        "<memory_blocks>\n<persona>\n<description>\nP\n</description>\n</persona>\n\n"
        "<human>\n<description>\nH\n</description>\n</human>\n</memory_blocks>\n"
        "<tool_rule>\nsend_message ends\n</tool_rule>\n<tool_rule>\nmemory_insert continues\n</tool_rule>\ntail"
    )
    relay = ModelRelay.__new__(ModelRelay)
    relay.now = None
    sorted_prompt = relay.dated({"role": "system", "content": prompt})["content"]
    assert sorted_prompt.index("<human>") < sorted_prompt.index("<persona>")
    assert sorted_prompt.index("memory_insert") < sorted_prompt.index("send_message")
    assert sorted(sorted_prompt) == sorted(prompt) and sorted_prompt.endswith("tail")
    assert relay.dated({"role": "user", "content": prompt})["content"] == prompt  # only the system prompt


@needs_server
def test_a_memorized_episode_replays_on_another_server_with_no_request(letta_url: str, tmp_path: Path, hashing: Any) -> None:
    # Letta gives each agent random tool-call ids and lists its tools, memory blocks and tool rules in database
    # order: without the relay's numbering and sorting, the replay below missed the cache.
    episode = ("ep2", "scope", EPISODES[1][1], EPISODES[1][2])
    other = LettaServer(COMMAND, tmp_path / "other-server")
    try:
        with OpenAITestServer() as server:
            llm = scripted_client(server, tmp_path / "c.sqlite")
            recorded = LettaMemorizeAdapter(str(tmp_path), server_url=letta_url, lens_llm=llm, embedder=hashing)
            recorded.reset("scope")
            recorded.ingest(*episode)
            sent = server.count(kind="letta")
            replayed = LettaMemorizeAdapter(
                str(tmp_path), server_url=other.url, lens_llm=scripted_client(server, tmp_path / "c.sqlite", "replay"), embedder=hashing
            )
            replayed.reset("scope")
            replayed.ingest(*episode)
            assert server.count(kind="letta") == sent >= 2
            assert replayed.core_memory()["human"] == recorded.core_memory()["human"]
            recorded.close()
            replayed.close()
    finally:
        other.stop()


@needs_server
def test_an_unusable_model_reply_is_an_adapter_fault_with_lettas_message(letta_url: str, tmp_path: Path, hashing: Any) -> None:
    with OpenAITestServer(LensPolicy(letta=LettaAgentPolicy(malformed=True))) as server:
        llm = scripted_client(server, tmp_path / "c.sqlite")
        caller = AdapterCaller.build(
            lambda: LettaMemorizeAdapter(str(tmp_path), server_url=letta_url, lens_llm=llm, embedder=hashing), "letta-memorize", 120
        )
        caller.reset("scope")
        with pytest.raises(AdapterCallError) as raised:
            caller.ingest("ep1", "scope", EPISODES[0][1], EPISODES[0][2], {})
        caller.close()
    assert raised.value.fault.method == "ingest"
    assert "Letta could not let its agent read episode 'ep1': HTTP 400" in raised.value.fault.message
    assert "No tool calls found in response, model must make a tool call" in raised.value.fault.message  # Letta's own words


@needs_server
def test_an_adapter_owned_server_is_removed_with_every_file_on_close(tmp_path: Path, hashing: Any) -> None:
    adapter = LettaAdapter(str(tmp_path), server=COMMAND, embedder=hashing)
    adapter.reset("s1")
    adapter.ingest("ep3", "s1", EPISODES[2][1], EPISODES[2][2])
    assert list(tmp_path.glob("letta-*/home/.letta/sqlite.db"))  # Letta's own SQLite store, under the adapter's directory
    adapter.reset("s1")
    assert adapter.search("snow", None, 5) == []
    adapter.close()
    assert list(tmp_path.iterdir()) == []


def test_core_memory_is_rendered_as_lettas_own_agent_reads_it() -> None:
    # The recorded Letta agent's system prompt (Letta 0.11.7, memgpt_v2) holds its memory blocks: the answering
    # agent of letta-memorize gets the same rendering of the same blocks.
    import json
    import sqlite3

    from lens_fixtures.adapters.letta_memorize import render_memory_blocks
    from tests.integration.test_real_model_replay import LETTA

    with sqlite3.connect(LETTA.cache) as db:
        request = json.loads(db.execute("SELECT request FROM llm_responses WHERE purpose = 'letta' LIMIT 1").fetchone()[0])
    system = request["messages"][0]["content"]
    recorded = system[system.index("<memory_blocks>") : system.index("</memory_blocks>") + len("</memory_blocks>")]
    descriptions = dict(re.findall(r"<(human|persona)>\n<description>\n(.*?)\n</description>", recorded, re.DOTALL))
    blocks = [
        {"label": "persona", "description": descriptions["persona"], "value": "I keep the operator's records.", "limit": 20000},
        {"label": "human", "description": descriptions["human"], "value": "", "limit": 20000},
    ]
    assert render_memory_blocks(blocks) == recorded
