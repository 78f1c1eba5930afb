"""The built-in conformance tests, collected as ``lens-conformance::test_<clause>[<adapter>]`` with ``--lens-conformance``.

One test function per clause (``retrieve.roundtrip`` -> ``test_retrieve_roundtrip``), so
``-k roundtrip`` or ``-k "search and not limit"`` select clauses; pytest-lens
parametrizes each over the ``--lens-adapter`` adapters.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_lens.conformance.catalog import CLAUSES
from pytest_lens.plugin.conformance.hooks import ConformanceCheck


def _clause_test(clause_id: str, name: str, contract: str) -> Callable[[ConformanceCheck], None]:
    @pytest.mark.lens_conformance(clauses=[clause_id])
    def test(lens_conformance: ConformanceCheck) -> None:
        lens_conformance.check()

    test.__name__ = test.__qualname__ = name
    test.__doc__ = f"{clause_id}: {contract}"
    return test


for _clause in CLAUSES:
    globals()[_clause.test_name] = _clause_test(_clause.id, _clause.test_name, _clause.contract)
