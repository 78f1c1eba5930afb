from __future__ import annotations

import pytest

from pytest_lens.conformance.catalog import CLAUSES, find_clause, select_clauses

METHODS = {"get_capabilities", "retrieve", "search", "reset", "prepare", "call_extended_tool", "context"}


def test_clauses_have_unique_ids_a_contract_sentence_and_a_method() -> None:
    ids = [c.id for c in CLAUSES]
    assert len(ids) == len(set(ids)) == 21
    for clause in CLAUSES:
        assert clause.contract and clause.method in METHODS
        assert clause.test_name == "test_" + clause.id.replace(".", "_")


def test_selection_by_id_or_group_prefix() -> None:
    assert [c.id for c in select_clauses(["search"])] == [
        "search.limit",
        "search.known_refs",
        "search.ordered",
        "search.store_order",
        "search.deterministic",
    ]
    assert [c.id for c in select_clauses(["retrieve.unknown", "manifest"])] == ["manifest.valid", "retrieve.unknown"]
    assert len(select_clauses(None)) == len(CLAUSES)
    with pytest.raises(KeyError, match="no conformance clause matches 'serch'"):
        select_clauses(["serch"])
    with pytest.raises(KeyError, match=r"known clauses: manifest\.valid"):
        find_clause("nope")
