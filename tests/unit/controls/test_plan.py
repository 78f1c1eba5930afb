"""Which adapters --lens-controls adds, and how they are labelled and built."""

from __future__ import annotations

from pathlib import Path

import pytest

from lens_fixtures.adapters.oracle import OracleAdapter
from pytest_lens.controls.mutants import HalfRandom, Stale
from pytest_lens.controls.plan import ControlsError, is_oracle, mark_oracles, mutant_names, plan_controls
from pytest_lens.execution.runner import construct_adapter
from pytest_lens.records.settings import AdapterSpec, ControlRole


def test_controls_follow_the_users_adapters_with_a_mutant_family_each() -> None:
    specs = plan_controls(
        [AdapterSpec("bm25", "bm25", {"snippet_tokens": 30}), AdapterSpec("mine", "pkg:Mine")], seed=7, mutants=["top2", "stale"]
    )
    assert [s.label for s in specs] == ["bm25", "mine", "null", "random", "oracle", "bm25/top2", "bm25/stale", "mine/top2", "mine/stale"]
    assert [s.control for s in specs[:2]] == [None, None]
    assert specs[2].control == ControlRole("null") and specs[2].options == {}
    assert specs[3].target == "lens_fixtures.adapters.random_memory:RandomAdapter" and specs[3].options == {"seed": 7}
    assert specs[4].control == ControlRole("oracle") and specs[4].target == "lens_fixtures.adapters.oracle:OracleAdapter"
    top2 = specs[5]
    assert (top2.target, dict(top2.options), top2.control) == ("bm25", {"snippet_tokens": 30}, ControlRole("mutant", "bm25", "top2"))
    assert top2.mutation is not None and top2.mutation.seed == 7


def test_a_users_own_null_becomes_the_control_and_a_clashing_label_is_an_error() -> None:
    specs = plan_controls([AdapterSpec("null", "null"), AdapterSpec("bm25", "bm25")], seed=1, mutants=())
    assert [(s.label, s.control is not None) for s in specs] == [("bm25", False), ("null", True), ("random", True), ("oracle", True)]
    with pytest.raises(ControlsError, match="already uses that label"):
        plan_controls([AdapterSpec("random", "pkg:Mine")], seed=1)


def test_mutant_names_are_checked() -> None:
    assert mutant_names(None) == ["top2", "reversed", "shuffled", "half-random", "stale", "cut200"]
    assert mutant_names(["cut200", "top2"]) == ["top2", "cut200"]
    with pytest.raises(ValueError, match=r"unknown mutant.*sideways.*known: top2"):
        mutant_names(["sideways"])


def test_a_mutant_spec_builds_the_users_adapter_wrapped(tmp_path: Path) -> None:
    specs = plan_controls([AdapterSpec("bm25", "bm25")], seed=3, first_checkpoints={"s": 9}, mutants=["half-random", "stale"])
    half, stale = specs[-2:]
    built = construct_adapter(half, tmp_path / "half")
    assert isinstance(built, HalfRandom) and built.seed == 3 and type(built.inner).__name__ == "BM25Adapter"
    frozen = construct_adapter(stale, tmp_path / "stale")
    assert isinstance(frozen, Stale) and frozen.freeze_at == {"s": 9}
    assert list((tmp_path / "half").glob("*.db"))  # the wrapped adapter got its own storage_dir


def test_the_oracle_named_alone_is_marked_the_control_it_is() -> None:
    specs = mark_oracles(
        [AdapterSpec("bm25", "bm25"), AdapterSpec("oracle", "oracle"), AdapterSpec("top", OracleAdapter.__module__ + ":OracleAdapter")]
    )
    assert [s.control for s in specs] == [None, ControlRole("oracle"), ControlRole("oracle")]


def test_only_the_oracle_itself_is_handed_a_questions_evidence() -> None:
    class LooksLikeIt(OracleAdapter):
        pass

    assert is_oracle(OracleAdapter()) and not is_oracle(LooksLikeIt()) and not is_oracle(object())


def test_a_model_built_adapter_gets_an_empty_extraction_control_built_against_the_empty_extractor(tmp_path: Path) -> None:
    from lens_fixtures.openai_server import OpenAITestServer
    from pytest_lens.controls.empty import stop_empty_extractor
    from tests.unit.lens_fixtures.adapters.scripted import scripted_client

    graph = "lens_fixtures.adapters.graphrag_light:GraphRAGLightAdapter"
    specs = plan_controls([AdapterSpec("bm25", "bm25"), AdapterSpec("graph", graph, {"hops": 0})], seed=1, mutants=())
    assert [s.label for s in specs] == ["bm25", "graph", "null", "random", "oracle", "graph/empty-extraction"]  # bm25 builds nothing
    control = specs[-1]
    assert (control.target, dict(control.options), control.control) == (graph, {"hops": 0}, ControlRole("empty-extraction", "graph"))
    with OpenAITestServer() as server:
        llm = scripted_client(server, tmp_path / "c.sqlite")
        try:
            for spec, entities in ((specs[1], 2), (control, 0)):
                adapter = construct_adapter(spec, tmp_path / spec.label.replace("/", "_"), lens_llm=llm)
                adapter.reset("s")
                adapter.ingest("e1", "s", "2024-01-01T00:00:00", "## Ops\n- PX-7 vibration 9.8 mm/s at North Station")
                adapter.prepare("s", 1)
                assert adapter.lens_stats()["extraction_calls"] == 1 and adapter.lens_stats()["entities"] == entities
                adapter.close()
        finally:
            stop_empty_extractor()
        assert server.count(kind="extraction") == 1  # the control's extraction went to the empty extractor, not the run's model
    with pytest.raises(ControlsError, match="graph/empty-extraction"):
        plan_controls([AdapterSpec("graph", graph), AdapterSpec("graph/empty-extraction", "bm25")], seed=1, mutants=())
