from __future__ import annotations

import pytest

from pytest_lens.analysis import stats
from pytest_lens.analysis.run import analyze_run, pair_results, question_state
from pytest_lens.analysis.summary import summarize
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
from tests.unit.analysis.factory import result, tier1

TYPES = ["longitudinal", "temporal", "negative"]


def run_of(adapter: str, coverages: list[float], scope_id: str = "s1") -> list:
    return [
        result(f"q{i:02d}", tier1(1.0, c), adapter=adapter, scope_id=scope_id, question_type=TYPES[i % 3]) for i, c in enumerate(coverages)
    ]


def test_adapter_estimates_are_the_summary_numbers_with_intervals_around_them() -> None:
    results = run_of("bm25", [0.0, 0.5, 1.0, 0.5, 0.0, 1.0, 0.5, 0.5, 0.0, 1.0])
    analysis = analyze_run(results, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=3)
    summary = summarize(results, DEFAULT_WEIGHTS, DEFAULT_GATES)["bm25"]
    adapter = analysis.adapters["bm25"]
    assert adapter.composite.value == pytest.approx(summary.composite)
    assert adapter.composite.n == 10 and adapter.composite.low is not None and adapter.composite.high is not None
    assert adapter.composite.low < adapter.composite.value < adapter.composite.high
    assert adapter.metrics["evidence_coverage"].value == pytest.approx(summary.metrics["evidence_coverage"])
    assert adapter.metrics["evidence_grounding"].low == adapter.metrics["evidence_grounding"].high == 1.0
    assert set(adapter.by_type) == set(TYPES)
    for qtype, estimate in adapter.by_type.items():
        assert estimate.value == pytest.approx(summary.by_type[qtype].composite)
    assert analysis == analyze_run(results, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=3)  # seeded: reproducible


def test_every_pair_of_adapters_is_tested_and_holm_corrected() -> None:
    good = run_of("good", [1.0] * 12)
    mixed = run_of("mixed", [1.0, 0.0] * 6)
    bad = run_of("bad", [0.0] * 12)
    analysis = analyze_run(good + mixed + bad, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=1)
    assert [(p.first, p.second) for p in analysis.pairs] == [("good", "mixed"), ("good", "bad"), ("mixed", "bad")]
    raw = [p.composite.p_value for p in analysis.pairs]
    assert [p.composite.p_adjusted for p in analysis.pairs] == pytest.approx(stats.holm(raw))
    good_bad = analysis.pairs[1].composite
    assert (good_bad.n_pairs, good_bad.n_down, good_bad.n_up, good_bad.effect_size) == (12, 12, 0, -1.0)
    assert good_bad.p_value == pytest.approx(2 * 0.5**12)  # exact two-sided: all twelve went down
    assert good_bad.delta.value == pytest.approx(good_bad.second - good_bad.first)
    assert good_bad.delta.low is not None and good_bad.delta.high is not None
    assert good_bad.delta.low <= good_bad.delta.value <= good_bad.delta.high
    coverage = next(t for t in analysis.pairs[1].metrics if t.metric == "evidence_coverage")
    assert coverage.delta.value == pytest.approx(-1.0)
    assert analysis.concordance == []  # one scope only


def test_kendalls_w_ranks_adapters_within_each_scope() -> None:
    results = []
    for scope in ("s1", "s2", "s3"):
        results += run_of("good", [1.0] * 4, scope) + run_of("mixed", [1.0, 0.0] * 2, scope) + run_of("bad", [0.0] * 4, scope)
    analysis = analyze_run(results, DEFAULT_WEIGHTS, DEFAULT_GATES)
    [found] = analysis.concordance
    assert found.scopes == ["s1", "s2", "s3"] and found.adapters == ["good", "mixed", "bad"]
    assert found.w == pytest.approx(1.0)
    assert found.p_value == pytest.approx(stats.kendalls_w([[3, 2, 1]] * 3).p_value)  # type: ignore[union-attr]


def test_pairs_are_matched_by_scope_and_question_not_position() -> None:
    first = [result("a", tier1(1, 1)), result("b", tier1(1, 0)), result("c", tier1(1, 1))]
    second = [result("c", tier1(1, 0), adapter="x"), result("a", tier1(1, 1), adapter="x")]
    pairs = pair_results(first, second)
    assert [(a.question_id, b.question_id) for a, b in pairs] == [("a", "a"), ("c", "c")]


def test_question_state() -> None:
    assert question_state(result("q", tier1(1, 1)), DEFAULT_GATES) == "ok"
    assert question_state(result("q", tier1(0.2, 1)), DEFAULT_GATES) == "gated"
    assert question_state(result("q", tier1(1, 1), failed=True), DEFAULT_GATES) == "failed"
