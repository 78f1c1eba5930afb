"""The conformance suite: hypothesis property tests of the memory-adapter contract.

``pytest --lens-adapter=mypkg:MyAdapter --lens-conformance`` runs every clause
against the adapter (``lens-conformance::test_<clause>[<adapter>]``), and the
``lens_conformance`` marker and fixture run clauses from your own test modules.
Without pytest::

    from pytest_lens.conformance import CLAUSES, ConformanceConfig, SubjectFactory, verify_clause

Importing this package imports nothing heavy; hypothesis is loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_lens._lazy import lazy_attributes

__all__ = ["CLAUSES", "Clause", "ClauseOutcome", "ConformanceConfig", "SubjectFactory", "find_clause", "select_clauses", "verify_clause"]

_LAZY = {
    "CLAUSES": "pytest_lens.conformance.catalog",
    "find_clause": "pytest_lens.conformance.catalog",
    "select_clauses": "pytest_lens.conformance.catalog",
    "Clause": "pytest_lens.conformance.clause",
    "ClauseOutcome": "pytest_lens.conformance.results",
    "ConformanceConfig": "pytest_lens.conformance.verify",
    "verify_clause": "pytest_lens.conformance.verify",
    "SubjectFactory": "pytest_lens.conformance.subject",
}

if TYPE_CHECKING:
    from pytest_lens.conformance.catalog import CLAUSES, find_clause, select_clauses
    from pytest_lens.conformance.clause import Clause
    from pytest_lens.conformance.results import ClauseOutcome
    from pytest_lens.conformance.subject import SubjectFactory
    from pytest_lens.conformance.verify import ConformanceConfig, verify_clause


__getattr__ = lazy_attributes(__name__, _LAZY)
