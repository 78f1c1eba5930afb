from __future__ import annotations

import pytest

from pytest_lens.analysis.format import format_table
from pytest_lens.analysis.summary import summarize
from pytest_lens.datasets import LoadedScope
from pytest_lens.records.budget import parse_budget
from pytest_lens.records.cases import build_cases
from pytest_lens.records.results import QuestionResult
from pytest_lens.reports.terminal import LensReport, Verdict
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS


def test_cases_stream_each_scope_once_in_checkpoint_order(small_scope: LoadedScope) -> None:
    cases = build_cases(["a", "b"], [small_scope], [parse_budget("8k"), parse_budget("16k")])
    assert [c.id for c in cases[:3]] == ["a-s1-cp002-8k-q1", "a-s1-cp002-16k-q1", "a-s1-cp004-8k-q2"]
    assert [c.checkpoint for c in cases if c.adapter == "a"] == [2, 2, 4, 4, 6, 6]
    assert cases[0].group == "a:s1:8k" and cases[0].key == ("a", "s1", "8k", "q1")
    single = build_cases(["a"], [small_scope], [parse_budget("16k")])
    assert single[0].id == "a-s1-cp002-q1"


def result(adapter: str, qid: str, qtype: str, metrics: dict[str, float], tokens: int = 100) -> QuestionResult:
    return QuestionResult(
        adapter=adapter,
        scope_id="s1",
        checkpoint=2,
        question_id=qid,
        question_type=qtype,
        category="synthesis",
        budget="16k",
        agent="offline",
        prompt="p",
        answer="a",
        result_tokens=tokens,
        turns=1,
        metrics=metrics,
    )


def test_summary_means_metrics_where_present_and_gates_on_the_means() -> None:
    results = [
        result("good", "q1", "longitudinal", {"evidence_grounding": 1.0, "evidence_coverage": 0.5}),
        result("good", "q2", "temporal", {"evidence_grounding": 0.5}, tokens=300),
        result("bad", "q1", "longitudinal", {"evidence_grounding": 0.0, "evidence_coverage": 0.0}),
    ]
    summaries = summarize(results, DEFAULT_WEIGHTS, DEFAULT_GATES)
    good, bad = summaries["good"], summaries["bad"]
    assert good.metrics == {"evidence_coverage": 0.5, "evidence_grounding": 0.75}
    assert good.composite == pytest.approx((0.08 * 0.75 + 0.08 * 0.5) / 0.16)
    assert good.result_tokens_mean == 200 and not good.gated
    assert bad.gated and bad.composite == 0.0 and bad.gate_reasons == ["evidence_grounding 0.000 < 0.5"]
    assert set(good.by_type) == {"longitudinal", "temporal"}
    verdict = Verdict.from_summaries(summaries)
    assert verdict.exit_code == 1 and verdict.reasons == ("bad: hard gate evidence_grounding 0.000 < 0.5",)


def test_report_lines_show_tables_and_verdict() -> None:
    summaries = summarize([result("bm25", "q1", "longitudinal", {"evidence_grounding": 1.0})], DEFAULT_WEIGHTS, DEFAULT_GATES)
    lines = LensReport(summaries, header=["agent: offline"], warnings=["w"], verdict=Verdict(0)).lines
    assert lines[0] == "agent: offline"
    assert any(line.startswith("bm25") and line.endswith("pass") for line in lines)
    assert "composite by question type:" in lines and lines[-1] == "LENS verdict: PASS"


def test_format_table_aligns_columns() -> None:
    assert format_table(["name", "n"], [["a", "10"], ["long", "2"]], [False, True]) == ["name   n", "a     10", "long   2"]


def test_repetitions_follow_their_question_at_its_checkpoint(small_scope: LoadedScope) -> None:
    cases = build_cases(["a"], [small_scope], [parse_budget("16k")], repetitions=3)
    assert [c.id for c in cases[:4]] == ["a-s1-cp002-q1-r1", "a-s1-cp002-q1-r2", "a-s1-cp002-q1-r3", "a-s1-cp004-q2-r1"]
    assert [c.checkpoint for c in cases] == sorted(c.checkpoint for c in cases)  # never back to an earlier memory state
    assert {c.key for c in cases[:3]} == {("a", "s1", "16k", "q1")} and [c.item_key[-1] for c in cases[:3]] == [0, 1, 2]
    assert {c.group for c in cases} == {"a:s1:16k"}  # one stream, one xdist group
