"""Every clause of the adapter contract, in the order they are reported."""

from __future__ import annotations

from collections.abc import Iterable

from pytest_lens.conformance.checks.context import CONTEXT_DETERMINISTIC, CONTEXT_PREPARE_STABLE, CONTEXT_SIZE
from pytest_lens.conformance.checks.filters import FILTERS_DATE_RANGE, FILTERS_FIELDS
from pytest_lens.conformance.checks.latency import LATENCY_CEILING
from pytest_lens.conformance.checks.manifest import MANIFEST_VALID
from pytest_lens.conformance.checks.recall import RECALL_RARE_TOKEN
from pytest_lens.conformance.checks.retrieve import RETRIEVE_ROUNDTRIP, RETRIEVE_UNKNOWN
from pytest_lens.conformance.checks.search import (
    SEARCH_DETERMINISTIC,
    SEARCH_KNOWN_REFS,
    SEARCH_LIMIT,
    SEARCH_ORDERED,
    SEARCH_STORE_ORDER,
)
from pytest_lens.conformance.checks.state import PREPARE_IDEMPOTENT, RESET_FORGETS, SCOPE_ISOLATION
from pytest_lens.conformance.checks.tools import TOOLS_ACCEPT_VALID, TOOLS_BATCH_RETRIEVE, TOOLS_REJECT_INVALID
from pytest_lens.conformance.clause import Clause

__all__ = ["CLAUSES", "find_clause", "select_clauses"]

CLAUSES: tuple[Clause, ...] = (
    MANIFEST_VALID,
    RETRIEVE_ROUNDTRIP,
    RETRIEVE_UNKNOWN,
    SEARCH_LIMIT,
    SEARCH_KNOWN_REFS,
    SEARCH_ORDERED,
    SEARCH_STORE_ORDER,
    SEARCH_DETERMINISTIC,
    RESET_FORGETS,
    SCOPE_ISOLATION,
    PREPARE_IDEMPOTENT,
    FILTERS_FIELDS,
    FILTERS_DATE_RANGE,
    TOOLS_ACCEPT_VALID,
    TOOLS_REJECT_INVALID,
    TOOLS_BATCH_RETRIEVE,
    RECALL_RARE_TOKEN,
    CONTEXT_SIZE,
    CONTEXT_DETERMINISTIC,
    CONTEXT_PREPARE_STABLE,
    LATENCY_CEILING,
)

_BY_ID = {c.id: c for c in CLAUSES}


def find_clause(clause_id: str) -> Clause:
    """The clause with this id; KeyError lists the known ids."""
    try:
        return _BY_ID[clause_id]
    except KeyError:
        raise KeyError(f"no conformance clause {clause_id!r}; known clauses: {', '.join(_BY_ID)}") from None


def select_clauses(patterns: Iterable[str] | None = None) -> list[Clause]:
    """Clauses whose id equals a pattern or starts with ``pattern + "."`` (``search`` selects every ``search.*``); all when none."""
    wanted = [p.strip() for p in patterns or () if p.strip()]
    if not wanted:
        return list(CLAUSES)
    unknown = [p for p in wanted if not any(c.id == p or c.id.startswith(p + ".") for c in CLAUSES)]
    if unknown:
        raise KeyError(f"no conformance clause matches {', '.join(map(repr, unknown))}; known clauses: {', '.join(_BY_ID)}")
    return [c for c in CLAUSES if any(c.id == p or c.id.startswith(p + ".") for p in wanted)]
