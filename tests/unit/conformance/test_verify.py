"""The suite against adapters that keep the contract: every clause passes (or does not apply), for good reasons."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_lens.conformance.catalog import CLAUSES, find_clause
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.conformance.verify import ConformanceConfig, verify_clause
from tests.unit.conformance.conftest import QUICK

CI = ConformanceConfig(profile="ci")
Factory = Callable[..., SubjectFactory]

#: The clauses of a block of context: they apply only to a manifest declaring one.
CONTEXT = {"context.size", "context.deterministic", "context.prepare_stable"}
#: The clause of an adapter over a store with a ranking of its own (lens_store_ranking): none of these wraps one.
STORE = {"search.store_order"}
#: Reference adapters and the clauses that do not apply to them (what they do not declare).
REFERENCES = {
    "bm25": {"filters.fields", *CONTEXT, *STORE},
    "random": {"filters.fields", "filters.date_range", *CONTEXT, *STORE},
    "null": {
        "filters.fields",
        "filters.date_range",
        "tools.accepts_valid",
        "tools.rejects_invalid",
        "tools.batch_retrieve",
        *CONTEXT,
        *STORE,
    },
    "examples.my_memory:DictMemory": {"filters.fields", "filters.date_range", *CONTEXT, *STORE},
    "lens_fixtures.adapters.faceted:FacetedMemory": {*CONTEXT, *STORE},
    "lens_fixtures.adapters.broken:BriefedMemory": set(STORE),  # FacetedMemory with a block of context: the rest applies
}


@pytest.mark.parametrize("target", list(REFERENCES))
def test_reference_adapters_keep_every_clause_that_applies(factory_for: Factory, target: str) -> None:
    # The quick profile keeps our own suite fast; the integration tests and benchmarks/conformance.py run lens-ci.
    outcomes = [verify_clause(clause, factory_for(target), ConformanceConfig(QUICK)) for clause in CLAUSES]
    failures = [o.message for o in outcomes if o.failed]
    assert not failures, "\n\n".join(failures)
    assert {o.clause for o in outcomes if o.status == "not_applicable"} == REFERENCES[target]
    for outcome in outcomes:
        if outcome.status == "passed":
            assert outcome.examples > 0 and outcome.instances > outcome.examples / 2  # fresh instances, real examples
            assert outcome.latencies and all(seconds for seconds in outcome.latencies.values())


def test_a_clause_that_does_not_apply_says_why(factory_for: Factory) -> None:
    outcome = verify_clause(find_clause("filters.fields"), factory_for("bm25"), CI)
    assert outcome.status == "not_applicable"
    assert outcome.reason == "the manifest declares no filter_fields"
    assert outcome.message == "not applicable to 'bm25': the manifest declares no filter_fields"


def test_an_adapter_that_cannot_be_built_fails_each_clause_at_once_naming_the_constructor(factory_for: Factory) -> None:
    outcome = verify_clause(find_clause("search.limit"), factory_for("bm25", label="bad", no_such_option=1), CI)
    assert outcome.failed and outcome.method == "__init__" and outcome.examples == 0
    assert "adapter 'bad' could not be constructed: TypeError" in outcome.message
    assert "minimal failing example" not in outcome.message


class Forgetful:
    """Forgets the episode ingested third: a plain class, not a MemoryAdapter subclass."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.count = 0

    def reset(self, scope_id: str) -> None:
        self.texts.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: Any = None) -> None:
        self.count += 1
        if self.count != 3:
            self.texts[episode_id] = text

    def search(self, query: str, filters: Any = None, limit: Any = None) -> list[Any]:
        return []

    def retrieve(self, ref_id: str) -> Any:
        from pytest_lens import Document

        return Document(ref_id, self.texts[ref_id]) if ref_id in self.texts else None

    def get_capabilities(self) -> Any:
        from pytest_lens import CapabilityManifest

        return CapabilityManifest(search_modes=["keyword"])


def test_a_failure_names_clause_method_and_the_shrunk_example(factory_for: Factory) -> None:
    outcome = verify_clause(
        find_clause("retrieve.roundtrip"), factory_for(f"{__name__}:Forgetful", label="forgetful"), ConformanceConfig(QUICK)
    )
    assert outcome.failed and outcome.method == "retrieve"
    lines = outcome.message.splitlines()
    assert lines[0] == "conformance clause retrieve.roundtrip failed for adapter 'forgetful', in retrieve()"
    assert lines[1].startswith("  contract: retrieve(ref_id) returns a Document")
    assert lines[2].startswith("  violation: retrieve(") and lines[2].endswith(") returned None for an episode ingested in this scope")
    assert lines[3].startswith(f"  minimal failing example (hypothesis profile {QUICK}, ")
    assert "episodes: 3 episode(s), ingested in this order" in outcome.message  # shrunk to exactly three episodes
    assert outcome.violation == lines[2].removeprefix("  violation: ")


class SometimesWrong(Forgetful):
    """Answers the same calls differently from one instance to the next."""

    made = 0

    def __init__(self) -> None:
        super().__init__()
        SometimesWrong.made += 1
        self.broken = SometimesWrong.made % 3 == 0

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: Any = None) -> None:
        self.texts[episode_id] = text + ("!" if self.broken else "")


def test_a_failure_that_does_not_reproduce_is_reported_as_nondeterminism(factory_for: Factory) -> None:
    outcome = verify_clause(find_clause("retrieve.roundtrip"), factory_for(f"{__name__}:SometimesWrong"), ConformanceConfig(QUICK))
    assert outcome.failed
    assert "did not reproduce when hypothesis replayed the example" in outcome.message


def test_advisory_latency_passes_with_the_finding(factory_for: Factory) -> None:
    config = ConformanceConfig("ci", latency_ceilings={"*": 1e-9})
    outcome = verify_clause(find_clause("latency.ceiling"), factory_for("lens_fixtures.adapters.faceted:FacetedMemory"), config)
    assert outcome.status == "passed"
    assert any(line.startswith("search() p95 ") and "exceeds the ceiling of 0 ms" in line for line in outcome.advisories)


class HashRankedSemantic:
    """A 'semantic' memory whose ranking ignores the query's meaning: every episode, in an order set by a hash."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def reset(self, scope_id: str) -> None:
        self.texts.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: Any = None) -> None:
        self.texts[episode_id] = text

    def search(self, query: str, filters: Any = None, limit: Any = None) -> list[Any]:
        import hashlib

        from pytest_lens import SearchResult

        def score(ref: str) -> float:
            return int(hashlib.sha256(f"{query}|{ref}".encode()).hexdigest()[:8], 16) / 2**32

        ranked = sorted(self.texts, key=lambda ref: -score(ref))[: limit or 10]
        return [SearchResult(ref, self.texts[ref][:50], score(ref)) for ref in ranked]

    def retrieve(self, ref_id: str) -> Any:
        from pytest_lens import Document

        return Document(ref_id, self.texts[ref_id]) if ref_id in self.texts else None

    def get_capabilities(self) -> Any:
        from pytest_lens import CapabilityManifest

        return CapabilityManifest(search_modes=["semantic"])


def test_a_semantic_ranking_that_ignores_the_token_misses_the_recall_floor(factory_for: Factory) -> None:
    outcome = verify_clause(find_clause("recall.rare_token"), factory_for(f"{__name__}:HashRankedSemantic", label="hashed"), CI)
    assert outcome.failed and outcome.method == "search"
    assert "ranked below the top 3 in" in outcome.violation and "examples (at most 2 allowed); the worst, at rank" in outcome.violation
    assert "    episodes: " in outcome.message and "    token: " in outcome.message  # the worst corpus, described


def test_an_unavailable_adapter_is_not_applicable_with_its_reason(factory_for: Factory) -> None:
    factory = factory_for("compaction")  # needs an LLM endpoint; none is configured here
    outcome = verify_clause(find_clause("retrieve.roundtrip"), factory, CI)
    assert outcome.status == "not_applicable" and outcome.examples == 0
    assert outcome.reason.startswith("the adapter is unavailable here: compaction needs an LLM to write its summary")
