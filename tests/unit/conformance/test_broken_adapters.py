"""Every clause can fail: each broken adapter fails exactly its clause, with a readable message, and passes the others."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lens_fixtures.adapters.broken import BROKEN_ADAPTERS, SlowSearch
from pytest_lens.conformance.catalog import CLAUSES, find_clause
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.conformance.verify import ConformanceConfig, verify_clause
from tests.unit.conformance.conftest import QUICK

Factory = Callable[..., SubjectFactory]
#: SlowSearch is only broken under an enforced ceiling below its 100 ms per search.
ENFORCED = {"latency_ceilings": {"search": 0.05}, "enforce_latency": True}
#: What each failure message must say: (method named, a phrase of the violation).
EXPECTED_VIOLATION = {
    "manifest.valid": ("get_capabilities", "field_type 'datetime' is not one of"),
    "retrieve.roundtrip": ("retrieve", "(the returned text is a truncated prefix)"),
    "retrieve.unknown": ("retrieve", "for an id that was never ingested"),
    "search.limit": ("search", "more than limit=1"),
    "search.known_refs": ("search", "returned ref_id 'digest', which was neither ingested"),
    "search.ordered": ("search", "is not sorted by descending score"),
    "search.deterministic": ("search", "answered differently when called twice in a row"),
    "reset.forgets": ("reset", "still returns"),
    "scope.isolation": ("search", "an adapter that only saw scope"),
    "prepare.idempotent": ("prepare", "get_synthetic_refs() changed"),
    "filters.fields": ("search", "it does not match the filter"),
    "filters.date_range": ("search", "dropped"),
    "tools.accepts_valid": ("call_extended_tool", "failed although the arguments are valid for the tool's schema"),
    "tools.rejects_invalid": ("call_extended_tool", "although the arguments break its schema"),
    "tools.batch_retrieve": ("call_extended_tool", "returned another text for"),
    "recall.rare_token": ("search", "the only episode containing"),
    "latency.ceiling": ("search", "search() p95"),
    "context.size": ("context", "more than the declared context_block.max_tokens=200"),
    "context.deterministic": ("context", "two fresh instances fed the same"),
    "context.prepare_stable": ("prepare", "context() changed from"),
}


def target(cls: type) -> str:
    return f"{cls.__module__}:{cls.__name__}"


@pytest.mark.parametrize("cls", list(BROKEN_ADAPTERS), ids=lambda cls: cls.__name__)
def test_the_broken_clause_fails_naming_clause_method_and_minimal_example(factory_for: Factory, cls: type) -> None:
    clause_id = BROKEN_ADAPTERS[cls]
    config = ConformanceConfig("ci", **ENFORCED) if cls is SlowSearch else ConformanceConfig("ci")  # type: ignore[arg-type]
    outcome = verify_clause(find_clause(clause_id), factory_for(target(cls), label=cls.__name__), config)
    assert outcome.failed, f"{cls.__name__} should break {clause_id}"
    method, phrase = EXPECTED_VIOLATION[clause_id]
    assert outcome.method == method
    assert outcome.message.startswith(f"conformance clause {clause_id} failed for adapter '{cls.__name__}', in {method}()\n  contract: ")
    assert phrase in outcome.violation, outcome.message
    if clause_id != "latency.ceiling":  # judged over all examples, not one
        assert "minimal failing example (hypothesis profile lens-ci" in outcome.message


@pytest.mark.parametrize("cls", [cls for cls in BROKEN_ADAPTERS if cls is not SlowSearch], ids=lambda cls: cls.__name__)
def test_a_broken_adapter_passes_every_other_clause(factory_for: Factory, cls: type) -> None:
    broken = BROKEN_ADAPTERS[cls]
    outcomes = [verify_clause(clause, factory_for(target(cls)), ConformanceConfig(QUICK)) for clause in CLAUSES if clause.id != broken]
    failed = [o.message for o in outcomes if o.failed]
    assert not failed, "\n\n".join(failed)
