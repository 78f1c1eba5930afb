from __future__ import annotations

import pytest

from pytest_lens.analysis import stats
from pytest_lens.analysis.run import (
    analyze_run,
    clusters_for,
    pair_results,
    paired_tests,
    question_state,
    scope_of,
    scope_then_question,
    use_clusters,
)
from pytest_lens.analysis.summary import summarize
from pytest_lens.records.results import QuestionResult
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


def _scoped(question: str, scope: str, coverage: float, adapter: str = "bm25") -> QuestionResult:
    return result(question, tier1(1.0, coverage), adapter=adapter, scope_id=scope)


def test_auto_clusters_with_five_scopes_of_several_questions() -> None:
    five = [_scoped(f"q{i}", f"s{i % 5}", 0.5) for i in range(10)]
    assert use_clusters(five) and not use_clusters([r for r in five if r.scope_id != "s4"])  # four scopes
    assert not use_clusters([_scoped(f"q{i}", f"s{i}", 0.5) for i in range(6)])  # one question per scope: nothing to cluster
    assert use_clusters(five[:2], "clustered") and not use_clusters(five, "plain")
    assert not use_clusters(five[:1], "clustered")  # one scope: nothing to resample
    assert clusters_for(five) is scope_of and clusters_for(five, "two-stage") is scope_then_question
    assert clusters_for(five, "plain") is None


def test_clustered_pairs_count_scopes_and_report_what_they_can_detect() -> None:
    scopes = [f"s{i}" for i in range(6)]
    first = [_scoped(f"q{j}", s, 0.8) for s in scopes for j in range(4)]
    # The second adapter is worse in three scopes and the same in the others: a drop carried by scopes.
    second = [_scoped(r.question_id, r.scope_id, 0.2 if r.scope_id in scopes[:3] else 0.8, "other") for r in first]
    pairs = pair_results(first, second)
    plain, _ = paired_tests(pairs, DEFAULT_WEIGHTS, DEFAULT_GATES, alternative="less", seed=1)
    clustered, _ = paired_tests(pairs, DEFAULT_WEIGHTS, DEFAULT_GATES, alternative="less", seed=1, clusters=scope_of)
    assert plain.bootstrap == "plain" and plain.method != clustered.method
    assert clustered.bootstrap == "clustered" and clustered.method == "cluster t-test over 6 scopes (jackknife SE, t(5))"
    assert (clustered.units, clustered.df, plain.units, plain.df) == (6, 5, 24, 23)
    assert plain.mde is not None and clustered.mde is not None and clustered.mde > plain.mde
    assert clustered.delta.low is not None and plain.delta.low is not None and clustered.delta.low < plain.delta.low
    # One-sided upper bound of the drop: above the observed drop, and what --lens-margin holds.
    assert clustered.drop_bound is not None and clustered.drop_bound > -clustered.delta.value > 0
    assert clustered.p_value < 0.05
    staged, _ = paired_tests(pairs, DEFAULT_WEIGHTS, DEFAULT_GATES, alternative="less", seed=1, clusters=scope_then_question)
    assert staged.bootstrap == "two-stage" and staged.method == "t-test over 6 scopes (two-stage bootstrap SE, t(5))"
    assert staged.df == 5 and staged.delta.se is not None and clustered.delta.se is not None
    stats_run = analyze_run([*first, *second], DEFAULT_WEIGHTS, DEFAULT_GATES, clusters=scope_of)
    assert stats_run.bootstrap == "clustered" and stats_run.clusters == 6
    assert stats_run.adapters["bm25"].composite.se is not None
