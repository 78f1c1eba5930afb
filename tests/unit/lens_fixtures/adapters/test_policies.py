"""The memory policies over the real client and the local test server's scripted folds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lens_fixtures.adapters.policies import CorePolicy, FacetedPolicy, PolicyAdapter, SummaryPolicy
from lens_fixtures.adapters.policies.base import fit_tokens, fold_spans
from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens import AdapterUnavailable
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
from pytest_lens.records.budget import result_tokens

POLICIES: list[type[PolicyAdapter[Any]]] = [CorePolicy, SummaryPolicy, FacetedPolicy]

#: Twelve days of readings: each day's value is a number the folds keep (the scripted model keeps lines with digits).
EPISODES = [
    (
        f"ep_{day:03d}",
        f"2024-03-{day:02d}T09:00:00",
        f"Daily report.\nPump P-7 pressure read {100 + 7 * day} kPa after the valve change.\nDone.",
    )
    for day in range(1, 13)
]


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running


def client(server: OpenAITestServer, root: Path, mode: str = "off") -> ChatClient:
    endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_NO_KEY", retries=0)
    return ChatClient(endpoint, "scripted", cache=RequestCache(root / "cache.sqlite", mode), stats=LLMStats())


def load(policy: PolicyAdapter[Any], episodes: list[tuple[str, str, str]], checkpoints: list[int]) -> dict[int, str | None]:
    policy.reset("s1")
    blocks: dict[int, str | None] = {}
    done = 0
    for checkpoint in checkpoints:
        for episode_id, timestamp, text in episodes[done:checkpoint]:
            policy.ingest(episode_id, "s1", timestamp, text)
        done = checkpoint
        policy.prepare("s1", checkpoint)
        blocks[checkpoint] = policy.context("s1", checkpoint)
    return blocks


def test_fold_spans_are_cut_greedily_and_never_move() -> None:
    assert fold_spans([10] * 7, per_fold=3, max_tokens=1000) == [(0, 3), (3, 6), (6, 7)]
    assert fold_spans([10, 900, 10, 10], per_fold=10, max_tokens=100) == [(0, 1), (1, 2), (2, 4)]  # a long episode alone
    sizes = [30, 50, 20, 70, 10, 40]
    whole = fold_spans(sizes, per_fold=3, max_tokens=100)
    for n in range(1, len(sizes)):  # a prefix's spans are the whole stream's, the last one possibly still open
        prefix = fold_spans(sizes[:n], per_fold=3, max_tokens=100)
        assert prefix[:-1] == whole[: len(prefix) - 1] and prefix[-1][0] == whole[len(prefix) - 1][0]


def test_fit_tokens_cuts_to_the_size_and_says_so() -> None:
    text = "\n".join(f"line {i} " + "x" * 30 for i in range(50))
    cut, was_cut = fit_tokens(text, 100)
    assert was_cut and result_tokens(cut) <= 100 and text.startswith(cut)
    assert fit_tokens("short", 100) == ("short", False)


@pytest.mark.parametrize("cls", POLICIES)
def test_without_an_endpoint_a_policy_is_unavailable_and_says_how_to_configure_one(cls: type[PolicyAdapter[Any]]) -> None:
    with pytest.raises(AdapterUnavailable, match="--lens-llm-base-url"):
        cls()


@pytest.mark.parametrize("cls", POLICIES)
def test_a_policy_folds_the_stream_into_a_bounded_declared_block(
    cls: type[PolicyAdapter[Any]], server: OpenAITestServer, tmp_path: Path
) -> None:
    policy = cls(None, lens_llm=client(server, tmp_path), context_max_tokens=300, episodes_per_fold=3)
    try:
        blocks = load(policy, EPISODES, [4, 12])
        manifest = policy.get_capabilities()
        assert manifest.context_block is not None and manifest.context_block.ref_id == policy.context_ref
        for block in blocks.values():
            assert block is not None and result_tokens(block) <= 300
        # Real values from the stream reach the block: the last reading before each checkpoint.
        assert "128 kPa" in (blocks[4] or "") and "184 kPa" not in (blocks[4] or "")
        assert "184 kPa" in (blocks[12] or "")
        assert policy.get_synthetic_refs() == [(policy.context_ref, blocks[12])]
        document = policy.retrieve(policy.context_ref)
        assert document is not None and document.text == blocks[12]
        stats = policy.lens_stats()
        assert stats["policy_folds"] >= 4 and stats["policy_llm_requests"] >= stats["policy_folds"]
    finally:
        policy.close()


@pytest.mark.parametrize("cls", POLICIES)
def test_the_block_at_a_checkpoint_does_not_depend_on_earlier_checkpoints(
    cls: type[PolicyAdapter[Any]], server: OpenAITestServer, tmp_path: Path
) -> None:
    """A question run alone (-k) must see the block the whole scope's run shows it."""
    options = {"lens_llm": client(server, tmp_path), "context_max_tokens": 300, "episodes_per_fold": 3}
    stepwise, alone = cls(None, **options), cls(None, **options)
    try:
        assert load(stepwise, EPISODES, [2, 5, 7, 10])[10] == load(alone, EPISODES, [10])[10]
        before = stepwise.lens_stats()["policy_llm_requests"]
        stepwise.prepare("s1", 10)  # idempotent, and costs nothing
        assert stepwise.context("s1", 10) == alone.context("s1", 10)
        assert stepwise.lens_stats()["policy_llm_requests"] == before
    finally:
        stepwise.close()
        alone.close()


def test_the_summary_condenses_its_oldest_sections_to_stay_within_its_size(server: OpenAITestServer, tmp_path: Path) -> None:
    policy = SummaryPolicy(None, lens_llm=client(server, tmp_path), context_max_tokens=120, episodes_per_fold=1)
    try:
        block = load(policy, EPISODES, [12])[12]
        assert block is not None and result_tokens(block) <= 120
        assert block.startswith("## Records from 2024-03-01 to")  # the oldest sections merged into one
        assert "184 kPa" in block
        kinds = [r.body["messages"][0]["content"][:40] for r in server.requests if r.kind == "policy"]
        assert any(kind.startswith("You condense the oldest") for kind in kinds)
    finally:
        policy.close()


def test_the_faceted_policy_asks_each_facet_and_merges_them(server: OpenAITestServer, tmp_path: Path) -> None:
    server.reset()
    policy = FacetedPolicy(None, lens_llm=client(server, tmp_path), context_max_tokens=400, episodes_per_fold=12)
    try:
        block = load(policy, EPISODES, [12])[12]
    finally:
        policy.close()
    systems = [r.body["messages"][0]["content"] for r in server.requests if r.kind == "policy"]
    users = [r.body["messages"][1]["content"] for r in server.requests if r.kind == "policy"]
    facets = [user.split(":", 2)[1].strip() for user in users if user.startswith("Facet:")]
    assert sorted(facets) == ["causes", "entities", "events", "relations"]
    assert sum(s.startswith("You merge four facets") for s in systems) == 1
    assert block is not None and "after the valve change" in block


def test_fold_requests_are_recorded_and_replayed_by_the_request_cache(server: OpenAITestServer, tmp_path: Path) -> None:
    recorded = CorePolicy(None, lens_llm=client(server, tmp_path, "record"), episodes_per_fold=4)
    try:
        first = load(recorded, EPISODES, [12])[12]
    finally:
        recorded.close()
    server.reset()
    replayed = CorePolicy(None, lens_llm=client(server, tmp_path, "replay"), episodes_per_fold=4)
    try:
        assert load(replayed, EPISODES, [12])[12] == first
    finally:
        replayed.close()
    assert server.count(kind="policy") == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [({"context_max_tokens": 10}, "context_max_tokens must be an integer of at least 50"), ({"episodes_per_fold": 0}, "episodes_per_fold")],
)
def test_bad_options_are_clear_errors(options: dict[str, Any], message: str, server: OpenAITestServer, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=message):
        CorePolicy(None, lens_llm=client(server, tmp_path), **options)


@pytest.mark.parametrize("cls", POLICIES)
def test_the_runner_hands_every_policy_the_runs_client(cls: type[PolicyAdapter[Any]], server: OpenAITestServer, tmp_path: Path) -> None:
    from pytest_lens.execution.runner import construct_adapter
    from pytest_lens.records.settings import AdapterSpec

    (tmp_path / "store").mkdir()
    policy = construct_adapter(AdapterSpec("p", f"{cls.__module__}:{cls.__name__}"), tmp_path / "store", lens_llm=client(server, tmp_path))
    try:
        assert policy.get_capabilities().context_block is not None
    finally:
        policy.close()
