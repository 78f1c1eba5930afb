"""The conformance suite against the LLM-built memories, their model the project's scripted server.

graphrag-light and hierarchical run every clause. mem0-extract (a fresh mem0 and Qdrant per example, about a second each even
with the hashing embedder) runs the clauses its design bears on: the episode round trip, known refs, forgetting
and isolation, and finding a rare token through mem0's extracted facts. Both with few examples (the full
``ci`` profile's results, and the time they take, are in docs/systems.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="the conformance suite needs the optional extra pytest-lens[conformance]")

from hypothesis import HealthCheck, Phase, settings

from lens_fixtures.openai_server import OpenAITestServer
from pytest_lens.conformance import CLAUSES, ConformanceConfig, SubjectFactory, select_clauses, verify_clause
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
from pytest_lens.records.settings import AdapterSpec

SYSTEMS_PROFILE = "lens-test-systems"
settings.register_profile(
    SYSTEMS_PROFILE,
    max_examples=6,
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
    suppress_health_check=list(HealthCheck),
)
MEM0_CLAUSES = ["retrieve.roundtrip", "search.known_refs", "reset.forgets", "scope.isolation", "recall.rare_token"]


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatClient]:
    with OpenAITestServer() as server:
        path = tmp_path_factory.mktemp("llm") / "cache.sqlite"
        yield ChatClient(LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY"), "m", cache=RequestCache(path, "off"), stats=LLMStats())


def outcomes(factory: SubjectFactory, clause_ids: list[str] | None) -> dict[str, str]:
    clauses = select_clauses(clause_ids) if clause_ids else list(CLAUSES)
    found = {}
    for clause in clauses:
        outcome = verify_clause(clause, factory, ConformanceConfig(profile=SYSTEMS_PROFILE))
        found[clause.id] = outcome.status if outcome.status != "failed" else f"failed: {outcome.message}"
    return found


def test_graphrag_light_keeps_every_clause_it_declares(llm: ChatClient, tmp_path: Path) -> None:
    spec = AdapterSpec("graphrag-light", "lens_fixtures.adapters.graphrag_light:GraphRAGLightAdapter", {})
    found = outcomes(SubjectFactory(spec, tmp_path, lens_llm=llm), None)
    assert [status for status in found.values() if status.startswith("failed")] == []
    assert found["recall.rare_token"] == found["tools.batch_retrieve"] == found["prepare.idempotent"] == "passed"


def test_hierarchical_keeps_every_clause_it_declares(llm: ChatClient, tmp_path: Path) -> None:
    spec = AdapterSpec("hierarchical", "lens_fixtures.adapters.hierarchical:HierarchicalAdapter", {})
    found = outcomes(SubjectFactory(spec, tmp_path, lens_llm=llm), None)
    assert [status for status in found.values() if status.startswith("failed")] == []
    assert found["recall.rare_token"] == found["tools.batch_retrieve"] == found["prepare.idempotent"] == "passed"
    assert found["tools.accepts_valid"] == found["tools.rejects_invalid"] == found["filters.date_range"] == "passed"


@pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="the optional extra pytest-lens[mem0] (mem0ai) is not installed")
@pytest.mark.parametrize(("keep_episodes", "roundtrip"), [(True, "passed"), (False, "failed")])
def test_mem0_extract_keeps_the_contract_and_without_episode_copies_loses_the_roundtrip(
    llm: ChatClient, tmp_path: Path, hashing: Any, keep_episodes: bool, roundtrip: str
) -> None:
    spec = AdapterSpec(
        "mem0-extract", "lens_fixtures.adapters.mem0_extract:Mem0ExtractAdapter", {"embedder": hashing, "keep_episodes": keep_episodes}
    )
    clauses = MEM0_CLAUSES if keep_episodes else ["retrieve.roundtrip"]
    found = outcomes(SubjectFactory(spec, tmp_path, lens_llm=llm), clauses)
    assert found.pop("retrieve.roundtrip").startswith(roundtrip)
    assert set(found.values()) <= {"passed"}
