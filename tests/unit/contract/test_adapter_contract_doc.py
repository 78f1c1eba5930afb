"""docs/adapter-contract.md: every python block runs, in order, and its adapter passes the conformance suite."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from pytest_lens.conformance.catalog import CLAUSES
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.conformance.verify import ConformanceConfig, verify_clause
from pytest_lens.records.settings import AdapterSpec

DOC = Path(__file__).parents[3] / "docs" / "adapter-contract.md"
MODULE = "notes_memory_doc"


def _blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", DOC.read_text(), flags=re.DOTALL | re.MULTILINE)


@pytest.fixture(scope="module")
def doc_module() -> types.ModuleType:
    module = types.ModuleType(MODULE)
    sys.modules[MODULE] = module
    try:
        for index, block in enumerate(_blocks(), start=1):
            try:
                exec(compile(block, f"{DOC.name} python block {index}", "exec"), module.__dict__)
            except Exception as exc:
                pytest.fail(f"{DOC.name}: python block {index} fails: {type(exc).__name__}: {exc}\n{block}")
        yield module
    finally:
        sys.modules.pop(MODULE, None)


def test_the_page_has_an_example_for_every_part_of_the_contract() -> None:
    text = "\n".join(_blocks())
    for needle in ("validate_manifest", "start_date", "get_synthetic_refs", "call_extended_tool", "lens_stats", "close", "lens_llm",
                   "AdapterUnavailable", "report_embeddings", "context_block"):  # fmt: skip
        assert needle in text, needle


def test_every_block_runs(doc_module: types.ModuleType) -> None:
    assert len(_blocks()) >= 8
    assert doc_module.NotesMemory.__name__ == "NotesMemory"


def test_the_documented_adapter_keeps_every_clause(doc_module: types.ModuleType, tmp_path: Path) -> None:
    statuses = {}
    for clause in CLAUSES:
        factory = SubjectFactory(AdapterSpec("notes", f"{MODULE}:NotesMemory"), tmp_path / clause.id)
        outcome = verify_clause(clause, factory, ConformanceConfig(profile="ci"))
        assert outcome.status != "failed", outcome.message
        statuses[clause.id] = outcome.status
    # The page's adapter declares filters, a date range, batch_retrieve and synthetic refs: those clauses ran.
    for clause_id in ("filters.fields", "filters.date_range", "tools.batch_retrieve", "tools.rejects_invalid", "search.known_refs"):
        assert statuses[clause_id] == "passed", clause_id
