from __future__ import annotations

import math
from statistics import NormalDist, variance

import pytest
from scipy import stats as sps

from pytest_lens.analysis.power import plan_power
from pytest_lens.analysis.run import question_composite
from pytest_lens.records.results import QuestionResult
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
from tests.unit.analysis.factory import result, tier1

FACTOR = (NormalDist().inv_cdf(0.95) + NormalDist().inv_cdf(0.8)) ** 2


def answers(coverages: list[float], *, scopes: int = 1, repetition: int = 0) -> list[QuestionResult]:
    per_scope = len(coverages) // scopes
    return [
        result(f"q{i}", tier1(1.0, c), scope_id=f"s{i // per_scope}").model_copy(update={"repetition": repetition})
        for i, c in enumerate(coverages)
    ]


def test_without_a_baseline_the_questions_needed_follow_millers_formula_for_two_independent_runs() -> None:
    run = answers([0.0, 0.25, 0.5, 0.75, 1.0] * 4)
    (plan,) = plan_power(run, DEFAULT_WEIGHTS, DEFAULT_GATES, delta=0.05)
    scores = [question_composite(r, DEFAULT_WEIGHTS, DEFAULT_GATES) for r in run]
    expected = math.ceil(FACTOR * 2 * variance(scores) / 0.05**2)
    assert plan.rows[0].independent == expected and not plan.paired
    assert plan.rows[0].clustered == expected  # one scope: no design effect
    # As run, the gate's own test: one scope, so the paired t-test over the 20 questions (Bloom's t multiplier).
    multiplier = sps.t.ppf(0.95, 19) + sps.t.ppf(0.8, 19)
    assert plan.current_mde == pytest.approx(multiplier * math.sqrt(2 * variance(scores) / len(scores)), rel=1e-4)
    # A larger difference needs fewer questions, a quarter as many for twice the difference.
    (coarse,) = plan_power(run, DEFAULT_WEIGHTS, DEFAULT_GATES, delta=0.1)
    assert coarse.rows[0].independent == math.ceil(FACTOR * 2 * variance(scores) / 0.1**2) < expected


def test_repetitions_shrink_only_the_within_question_part() -> None:
    # Two answers per question that disagree: half the variance is answering again, which repetitions average out.
    first = answers([0.0, 1.0] * 10)
    second = answers([1.0, 0.0] * 10, repetition=1)
    (plan,) = plan_power([*first, *second], DEFAULT_WEIGHTS, DEFAULT_GATES, delta=0.05)
    assert plan.repetitions == 2 and plan.within is not None and plan.within > 0
    needed = {row.repetitions: row.independent for row in plan.rows}
    assert needed[1] > needed[2] > needed[4] > needed[8]


def test_scopes_that_move_together_need_more_questions_and_the_plan_counts_scopes() -> None:
    # Every question of a scope scores alike: the scopes are the sample.
    run = answers([0.0] * 6 + [1.0] * 6 + [0.5] * 6 + [0.25] * 6, scopes=4)
    (plan,) = plan_power(run, DEFAULT_WEIGHTS, DEFAULT_GATES, delta=0.05)
    assert plan.rho is not None and plan.rho > 0.9
    row = plan.rows[0]
    assert row.clustered > 5 * row.independent
    # Scopes as the gate tests them, against t(scopes - 1): the fewest that reach the drop, more than the normal
    # approximation's ceil(clustered / 6) when they are few.
    def reaches(scopes: int) -> bool:
        multiplier = sps.t.ppf(0.95, scopes - 1) + sps.t.ppf(0.8, scopes - 1)
        return multiplier**2 * row.variance * plan.design_effect / (scopes * 6) <= 0.05**2

    assert row.scopes >= math.ceil(row.clustered / 6) and reaches(row.scopes) and not reaches(row.scopes - 1)


def test_paired_with_a_baseline_uses_the_observed_differences() -> None:
    baseline = answers([0.5] * 20)
    run = answers([0.5] * 15 + [0.0] * 5)
    (plan,) = plan_power(run, DEFAULT_WEIGHTS, DEFAULT_GATES, delta=0.05, baseline=baseline)
    differences = [
        question_composite(a, DEFAULT_WEIGHTS, DEFAULT_GATES) - question_composite(b, DEFAULT_WEIGHTS, DEFAULT_GATES)
        for a, b in zip(run, baseline, strict=True)
    ]
    assert plan.paired and plan.rows[0].independent == math.ceil(FACTOR * variance(differences) / 0.05**2)


def test_a_difference_to_detect_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        plan_power(answers([0.5, 0.6]), DEFAULT_WEIGHTS, DEFAULT_GATES, delta=0.0)
