from __future__ import annotations

from pathlib import Path

import pytest

from lens_fixtures.adapters.compaction import SUMMARY_REF, CompactionAdapter
from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens import AdapterUnavailable
from pytest_lens.datasets.loader import load_dataset
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
from pytest_lens.records.settings import AdapterSpec
from tests.support import COLD_CHAIN_DEMO

SCOPE = load_dataset(COLD_CHAIN_DEMO).scopes[0]


def client(server: OpenAITestServer, path: Path) -> ChatClient:
    return ChatClient(LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY"), "m", cache=RequestCache(path, "record"), stats=LLMStats())


def stream(adapter: CompactionAdapter, upto: int, prepare_at: list[int]) -> None:
    adapter.reset(SCOPE.scope_id)
    for index, episode in enumerate(SCOPE.stream[:upto], start=1):
        adapter.ingest(episode.episode_id, SCOPE.scope_id, episode.iso_timestamp, episode.text, dict(episode.meta))
        if index in prepare_at:
            adapter.prepare(SCOPE.scope_id, index)


def test_without_an_llm_the_adapter_is_unavailable_and_says_how_to_configure_one() -> None:
    with pytest.raises(AdapterUnavailable, match="--lens-llm-base-url and --lens-agent-model"):
        CompactionAdapter()


def test_search_returns_the_summary_and_retrieve_returns_episodes(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        adapter = CompactionAdapter(client(server, tmp_path / "c.sqlite"), episodes_per_fold=4)
        assert adapter.search("anything") == []
        stream(adapter, 7, prepare_at=[7])
        hits = adapter.search("anything at all", limit=5)
        assert server.count(kind="summary") == 2  # episodes 1-4, then the tail 5-7
    assert [hit.ref_id for hit in hits] == [SUMMARY_REF]
    assert "14.2 bar" in hits[0].text
    assert "cold_chain_demo" not in hits[0].text
    assert adapter.get_synthetic_refs() == [(SUMMARY_REF, hits[0].text)]
    document = adapter.retrieve(SCOPE.stream[0].episode_id)
    assert document is not None
    assert document.text == SCOPE.stream[0].text
    assert adapter.retrieve("nope") is None
    batch = adapter.call_extended_tool("batch_retrieve", {"ref_ids": [SUMMARY_REF, SCOPE.stream[1].episode_id, "nope"]})
    assert batch["count"] == 2


def test_the_summary_at_a_checkpoint_does_not_depend_on_earlier_checkpoints(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        incremental = CompactionAdapter(client(server, tmp_path / "a.sqlite"), episodes_per_fold=5)
        stream(incremental, 13, prepare_at=[3, 7, 10, 13])
        alone = CompactionAdapter(client(server, tmp_path / "b.sqlite"), episodes_per_fold=5)
        stream(alone, 13, prepare_at=[13])
    assert incremental.search("x")[0].text == alone.search("x")[0].text


def test_restreaming_reuses_cached_summaries(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        adapter = CompactionAdapter(client(server, tmp_path / "c.sqlite"), episodes_per_fold=5)
        stream(adapter, 12, prepare_at=[12])
        sent = server.count()
        stream(adapter, 12, prepare_at=[12])  # reset and replay, as the runner does when going backwards
        assert server.count() == sent


def test_the_runtime_hands_the_run_llm_to_adapters_that_ask_for_it(tmp_path: Path) -> None:
    with OpenAITestServer() as server:
        runtime = LensRuntime({"c": AdapterSpec("c", "compaction")}, tmp_path / "s", lens_llm=client(server, tmp_path / "c.sqlite"))
        assert runtime.advance("c", SCOPE, 4) == []
        assert runtime.slot("c").unavailable is None
        runtime.close()
    bare = LensRuntime({"c": AdapterSpec("c", "compaction")}, tmp_path / "t")
    assert bare.slot("c").unavailable is not None
    assert "needs an LLM" in bare.slot("c").unavailable
    bare.close()
