"""The statistics' promises, each checked where it can fail: through the functions a run and ``lens compare`` call.

Level: a 5% gate rejects an A/A pair 5% of the time with six scopes, 95% intervals cover the truth, Holm keeps the
family at alpha. The mean: the gate tests the delta it prints, and no label contradicts its interval. Small samples:
a comparison too small to test says so and cannot pass a drop. Margin: the bound alone decides. Words: lines name the
test that ran. The simulations are seeded (the same outcome every run) and small; ``benchmarks/clustered_coverage.py``
measures the same rates with thousands of replicates.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats as sps

from pytest_lens.analysis.baseline import compare_with_baseline
from pytest_lens.analysis.gates import GatePolicy, compare_gate
from pytest_lens.analysis.run import adapter_statistics, analyze_run, pair_results, paired_tests, scope_of
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.records.statistics import BaselineInfo
from pytest_lens.reports.render import comparison_lines, pair_lines
from tests.unit.analysis.factory import result

#: One metric, weight 1, no gate: the composite of a group is the mean of its questions' scores.
WEIGHTS = {"m": 1.0}
INFO = BaselineInfo(name="0001_main", path=".lens/0001_main.json", created="2026-01-01T00:00:00+00:00")
TEMPLATE = result("q", {"m": 0.0})


def scored(values: Sequence[float], scopes: Sequence[int] | None = None, adapter: str = "bm25") -> list[QuestionResult]:
    """Questions q0000... with score ``values`` (scope ``s<k>`` from ``scopes``; one scope without)."""
    return [
        TEMPLATE.model_copy(
            update={
                "question_id": f"q{i:04d}",
                "metrics": {"m": float(v)},
                "adapter": adapter,
                "scope_id": f"s{0 if scopes is None else scopes[i]}",
            }
        )
        for i, v in enumerate(values)
    ]


def compare(after: list[QuestionResult], before: list[QuestionResult], **options: object):  # type: ignore[no-untyped-def]
    baseline = RunArtifact(pytest_lens_version="0", created=INFO.created, run=RunIdentity(), results=before, summary={})
    return compare_with_baseline(after, RunIdentity(), baseline, INFO, WEIGHTS, (), seed=1, **options)  # type: ignore[arg-type]


def scope_study(rng: np.random.Generator, scopes: int, per_scope: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Scores of two runs over the same questions whose scopes move together (a scope effect shared by both runs)."""
    labels = [s for s in range(scopes) for _ in range(per_scope)]
    scope_effect = rng.normal(0.0, 0.1, scopes)[labels]
    question = rng.normal(0.5, 0.15, len(labels)) + scope_effect
    # Each run's answers vary around the question's own level, by scope as well (a run can be unlucky on a scope).
    first = question + rng.normal(0.0, 0.05, scopes)[labels] + rng.normal(0.0, 0.1, len(labels))
    second = question + rng.normal(0.0, 0.05, scopes)[labels] + rng.normal(0.0, 0.1, len(labels)) + shift
    return first, second, labels


def test_the_gate_rejects_an_a_a_pair_at_its_level_with_six_scopes() -> None:
    # Two statistically identical runs over 6 scopes of 12 questions: a 5% gate may fail about 5% of them
    # (the cluster bootstrap's percentiles failed 9.5%: too few scopes for a normal reference).
    rng = np.random.default_rng(2024)
    false_alarms = 0
    for replicate in range(300):
        first, second, labels = scope_study(rng, 6, 12)
        pairs = pair_results(scored(first, labels), scored(second, labels))
        test, _ = paired_tests(pairs, WEIGHTS, (), alternative="less", seed=replicate, clusters=scope_of)
        false_alarms += test.p_value < 0.05
    assert false_alarms / 300 <= 0.065  # 5% +- 1.3% (binomial sd at 300)


def test_a_clustered_test_is_the_t_test_of_the_scopes_mean_differences() -> None:
    # Equal scopes: the jackknife over scopes is the textbook standard error of the scopes' mean differences.
    first, second, labels = scope_study(np.random.default_rng(7), 6, 10, shift=-0.04)
    pairs = pair_results(scored(first, labels), scored(second, labels))
    test, [metric] = paired_tests(pairs, WEIGHTS, (), alternative="less", seed=1, clusters=scope_of)
    per_scope = (second - first).reshape(6, 10).mean(axis=1)
    reference = sps.ttest_1samp(per_scope, 0.0, alternative="less")
    assert test.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert test.df == 5 and test.units == 6 and test.method == "cluster t-test over 6 scopes (jackknife SE, t(5))"
    low, high = reference.confidence_interval(0.95) if False else sps.t.interval(0.95, 5, per_scope.mean(), sps.sem(per_scope))
    assert (test.delta.low, test.delta.high) == pytest.approx((low, high), abs=2e-6)
    # Per-metric tests follow the run's units too (not the questions as if independent).
    assert metric.p_value == pytest.approx(sps.ttest_1samp(per_scope, 0.0).pvalue, rel=1e-9)


def test_a_plain_test_is_the_paired_t_test_of_the_questions() -> None:
    rng = np.random.default_rng(3)
    first = rng.random(40)
    second = np.clip(first + rng.normal(-0.05, 0.2, 40), 0, 1)
    test, _ = paired_tests(pair_results(scored(first), scored(second)), WEIGHTS, (), alternative="less", seed=1)
    assert test.p_value == pytest.approx(sps.ttest_rel(second, first, alternative="less").pvalue, rel=1e-9)
    assert test.method == "paired t-test over 40 questions (t(39))"


def test_95_percent_intervals_cover_the_truth_with_six_scopes() -> None:
    # Scores whose scopes move together (intra-scope correlation about 0.3); the true mean is 0.5.
    rng = np.random.default_rng(11)
    covered = 0
    for replicate in range(300):
        labels = [s for s in range(6) for _ in range(12)]
        values = 0.5 + rng.normal(0.0, 0.1, 6)[labels] + rng.normal(0.0, 0.15, len(labels))
        found = adapter_statistics(scored(values, labels), WEIGHTS, (), seed=replicate, clusters=scope_of).composite
        assert found.low is not None and found.high is not None
        covered += found.low <= 0.5 <= found.high
    assert covered / 300 >= 0.93  # the cluster bootstrap's percentiles covered 85-89%


def test_holm_keeps_three_identical_adapters_at_the_family_level() -> None:
    # Three statistically identical adapters on 6 scopes: some pair "significant" in at most about alpha of runs.
    rng = np.random.default_rng(5)
    runs_with_a_difference = 0
    for replicate in range(150):
        labels = [s for s in range(6) for _ in range(6)]
        level = 0.5 + rng.normal(0.0, 0.1, 6)[labels] + rng.normal(0.0, 0.1, len(labels))
        adapters = [
            scored(level + rng.normal(0.0, 0.05, 6)[labels] + rng.normal(0.0, 0.1, len(labels)), labels, name) for name in ("a", "b", "c")
        ]
        statistics = analyze_run([r for run in adapters for r in run], WEIGHTS, (), seed=replicate, clusters=scope_of)
        runs_with_a_difference += any(pair.composite.p_adjusted < 0.05 for pair in statistics.pairs)
    assert runs_with_a_difference / 150 <= 0.08  # 20.7% with the cluster bootstrap


def test_the_gate_tests_the_mean_not_how_many_questions_moved() -> None:
    # A change that raises most questions a little and lowers a few a lot (losing the top result does this to a
    # ranking): the mean falls, most signed ranks rise. The gate must see the fall, and never call it an improvement.
    before = scored([0.5] * 48)
    after = scored([0.52] * 40 + [0.5 - 0.45] * 8)
    comparison = compare(after, before)
    [entry] = comparison.adapters
    assert entry.regression is not None and entry.regression.delta.high is not None
    assert entry.regression.delta.value < 0 and entry.regression.delta.high < 0
    assert entry.status == "regression"
    assert not compare_gate(comparison, GatePolicy(compare_fail=True)).passed


def _skewed(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two runs where most questions rise a little and a few fall a lot (seed 0: exactly 40 rises of 0.02, 8 falls of 0.45)."""
    if seed == 0:
        return np.full(48, 0.5), np.array([0.52] * 40 + [0.05] * 8)
    rng = np.random.default_rng(seed)
    before = rng.random(30)
    return before, before + rng.choice([0.05, -0.4], 30, p=[0.8, 0.2]) + rng.normal(0, 0.02, 30)


@pytest.mark.parametrize("seed", range(6))
def test_no_label_contradicts_the_interval(seed: int) -> None:
    before, after = _skewed(seed)
    for first, second in ((before, after), (after, before)):
        [entry] = compare(scored(second), scored(first)).adapters
        delta = entry.regression.delta  # type: ignore[union-attr]
        assert delta.low is not None and delta.high is not None
        assert not (entry.status == "improvement" and delta.high < 0)
        assert not (entry.status == "regression" and delta.low > 0)


def test_the_gate_catches_a_drop_at_its_stated_mde_about_80_percent_of_the_time() -> None:
    # Each question either rises a little or falls a lot; the true mean drop is the MDE the comparisons state.
    # A question falls by 0.5 with probability 0.15, else rises by 0.04; shifted so the mean change is -MDE.
    spread = 0.54 * np.sqrt(0.15 * 0.85)
    mde = (sps.t.ppf(0.95, 59) + sps.t.ppf(0.8, 59)) * spread / np.sqrt(60)
    shift = -mde - (0.15 * -0.5 + 0.85 * 0.04)
    rng = np.random.default_rng(9)
    outcomes = []
    for replicate in range(200):
        before = rng.random(60)
        change = np.where(rng.random(60) < 0.15, -0.5, 0.04) + shift
        test, _ = paired_tests(pair_results(scored(before), scored(before + change)), WEIGHTS, (), alternative="less", seed=replicate)
        outcomes.append((test.p_value < 0.05, test.mde))
    caught = sum(hit for hit, _ in outcomes) / len(outcomes)
    mean_mde = float(np.mean([found for _, found in outcomes if found is not None]))
    assert mean_mde == pytest.approx(mde, rel=0.1)
    assert 0.7 <= caught <= 0.9  # the signed-rank test caught 0% of such changes


def test_a_four_question_run_whose_memory_was_replaced_by_null_fails() -> None:
    # The retrieval scores of BM25 on four questions of a generated scope, then of null under its name.
    before, after = scored([0.925172, 0.779254, 0.565465, 0.106423]), scored([0.0] * 4)
    comparison = compare(after, before)
    check = compare_gate(comparison, GatePolicy(compare_fail=True))
    assert not check.passed, check.line
    assert "regression p=" in check.line  # the signed-rank test could not go below 1/16 with four questions
    # Its MDE exceeds the whole score (no MDE is stated), yet this drop was found: no "cannot detect" line contradicts it.
    [entry] = comparison.adapters
    assert entry.regression is not None and not entry.regression.detectable and entry.regression.mde is None
    assert not any("cannot detect" in line for line in comparison_lines(comparison, gating=True))


def test_a_comparison_too_small_to_detect_any_drop_says_so_and_fails() -> None:
    # Two questions pulling apart: its smallest detectable drop exceeds the whole score, so no MDE is stated,
    # and the drop cannot pass for "no significant regression".
    comparison = compare(scored([0.0, 0.5]), scored([0.5, 0.5]))
    [entry] = comparison.adapters
    assert entry.regression is not None and not entry.regression.detectable and entry.regression.mde is None
    check = compare_gate(comparison, GatePolicy(compare_fail=True))
    assert not check.passed
    assert "cannot detect any drop with 2 questions" in check.line
    assert "can detect a drop of" not in check.line
    lines = "\n".join(comparison_lines(comparison, gating=True))
    assert "cannot detect any drop with 2 questions" in lines


def test_the_pair_table_states_no_mde_where_nothing_is_detectable() -> None:
    statistics = analyze_run([*scored([0.2, 0.9, 0.5], adapter="a"), *scored([0.9, 0.1, 0.6], adapter="b")], WEIGHTS, (), seed=1)
    [pair] = statistics.pairs
    assert pair.composite.mde is None and not pair.composite.detectable
    lines = pair_lines(statistics, 0.05)
    assert any("a vs b: cannot detect any difference with 3 questions" in line for line in lines)
    [row] = [line for line in lines if line.startswith("a vs b ")]
    assert re.split(r"\s{2,}", row)[5] == "-"  # the MDE column


def test_a_margin_passes_a_significant_drop_whose_bound_is_within_it() -> None:
    # Non-inferiority: the upper bound of the drop decides alone, whatever the test of a drop says.
    rng = np.random.default_rng(1)
    before = rng.random(200)
    after = before - 0.03 + rng.normal(0, 0.02, 200)
    comparison = compare(scored(after), scored(before), margin=0.05)
    [entry] = comparison.adapters
    assert entry.status == "regression" and entry.regression is not None and entry.regression.drop_bound is not None
    assert entry.regression.drop_bound <= 0.05
    check = compare_gate(comparison, GatePolicy(compare_fail=True, margin=0.05))
    assert check.passed, check.line
    assert "a significant drop" in check.line and "within the margin" in check.line
    assert not compare_gate(compare(scored(after), scored(before), margin=0.02), GatePolicy(compare_fail=True, margin=0.02)).passed


def test_the_margin_bound_is_the_one_sided_t_bound_at_its_level() -> None:
    rng = np.random.default_rng(4)
    before = rng.random(30)
    after = before + rng.normal(-0.02, 0.1, 30)
    [entry] = compare(scored(after), scored(before), margin=0.1).adapters
    d = after - before
    expected = -d.mean() + sps.t.ppf(0.95, 29) * d.std(ddof=1) / np.sqrt(30)
    assert entry.regression is not None and entry.regression.drop_bound == pytest.approx(expected, abs=2e-6)


def test_the_gate_line_names_the_test_that_ran() -> None:
    first, second, labels = scope_study(np.random.default_rng(2), 6, 10, shift=-0.2)
    comparison = compare(scored(second, labels), scored(first, labels), clusters=scope_of)
    check = compare_gate(comparison, GatePolicy(compare_fail=True))
    assert not check.passed
    assert "one-sided cluster t-test over 6 scopes (jackknife SE, t(5)), Holm" in check.line
    assert "one-sided cluster t-test over 6 scopes (jackknife SE, t(5)) of the mean drop" in "\n".join(
        comparison_lines(comparison, gating=True)
    )
