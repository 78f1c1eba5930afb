"""Adapters' own counters (optional ``lens_stats()``): collected per question, summed per adapter, printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_lens.analysis.summary import summarize
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.settings import AdapterSpec
from pytest_lens.reports.terminal import LensReport
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS


class CountingMemory:
    """Counts its searches; ``lens_stats`` returns whatever ``stats`` holds."""

    stats: Any = None

    def __init__(self) -> None:
        self.searches = 0

    def reset(self, scope_id: str) -> None: ...
    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: Any = None) -> None: ...
    def search(self, query: str, filters: Any = None, limit: Any = None) -> list[Any]:
        self.searches += 1
        return []

    def retrieve(self, ref_id: str) -> None:
        return None

    def get_capabilities(self) -> dict[str, Any]:
        return {}

    def lens_stats(self) -> Any:
        return self.stats if self.stats is not None else {"searches": self.searches}


def test_caller_reads_counters_and_rejects_bad_ones() -> None:
    memory = CountingMemory()
    caller = AdapterCaller(memory, "counting")
    memory.search("q")
    assert caller.stats() == {"searches": 1}
    memory.stats = {"searches": "one"}
    with pytest.raises(AdapterCallError, match=r"lens_stats\(\).*dict\[str, int\]") as info:
        caller.stats()
    assert info.value.fault.kind == "bad_return"
    assert info.value.fault.method == "lens_stats"
    assert AdapterCaller(object(), "plain").stats() == {}


def test_runtime_reports_growth_since_the_last_question(tmp_path: Path) -> None:
    runtime = LensRuntime({"c": AdapterSpec("c", f"{__name__}:CountingMemory")}, tmp_path)
    memory = runtime.slot("c").caller.adapter  # type: ignore[union-attr]
    assert runtime.stats_delta("c") == ({"searches": 0}, None)
    memory.search("a")
    memory.search("b")
    assert runtime.stats_delta("c") == ({"searches": 2}, None)
    assert runtime.stats_delta("c") == ({"searches": 0}, None)
    memory.stats = {"searches": 1}  # a counter that went down restarted: its new value is the growth
    assert runtime.stats_delta("c") == ({"searches": 1}, None)
    memory.stats = ["not", "a", "dict"]
    delta, fault = runtime.stats_delta("c")
    assert delta == {}
    assert fault is not None
    assert fault.method == "lens_stats"


def _result(adapter: str, question_id: str, stats: dict[str, int]) -> QuestionResult:
    return QuestionResult(
        adapter=adapter,
        scope_id="s",
        checkpoint=1,
        question_id=question_id,
        question_type="longitudinal",
        category="synthesis",
        budget="16k",
        agent="offline",
        prompt="p",
        answer="a [e1]",
        cited_refs=["e1"],
        returned_refs=["e1"],
        required_refs=["e1"],
        tool_calls=[],
        result_tokens=1,
        turns=1,
        agent_tokens=0,
        violations=[],
        metrics={"evidence_grounding": 1.0},
        composite=1.0,
        gated=False,
        adapter_stats=stats,
    )


def test_summaries_sum_counters_and_the_report_prints_them() -> None:
    results = [
        _result("hybrid", "q1", {"embed_cache_hits": 800, "embed_cache_misses": 70}),
        _result("hybrid", "q2", {"embed_cache_hits": 1, "embed_cache_misses": 0}),
        _result("bm25", "q1", {}),
    ]
    summaries = summarize(results, DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert summaries["hybrid"].adapter_stats == {"embed_cache_hits": 801, "embed_cache_misses": 70}
    assert summaries["bm25"].adapter_stats == {}
    lines = LensReport(summaries).lines
    assert "adapter counters:" in lines
    assert "  hybrid: embed_cache_hits=801, embed_cache_misses=70" in lines
    assert not any(line.startswith("  bm25:") for line in lines)


def test_no_counters_no_lines() -> None:
    summaries = summarize([_result("bm25", "q1", {})], DEFAULT_WEIGHTS, DEFAULT_GATES)
    assert "adapter counters:" not in LensReport(summaries).lines
