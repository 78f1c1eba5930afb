from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_lens.analysis.resample import CompositeResampler
from pytest_lens.analysis.summary import metric_means, summarize
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, HardGate, composite
from tests.unit.analysis.factory import result

PROPERTIES = settings(max_examples=40, deadline=None, derandomize=bool(os.environ.get("CI")))
NAMES = ["evidence_grounding", "evidence_coverage", "citation_coverage", "budget_compliance", "fact_recall"]
metric_dicts = st.dictionaries(st.sampled_from(NAMES), st.sampled_from([0.0, 0.25, 0.4, 0.5, 0.75, 1.0]), min_size=0, max_size=5)


@PROPERTIES
@given(st.lists(metric_dicts, min_size=1, max_size=12), st.data())
def test_vectorised_composite_equals_the_scalar_formula_on_every_resample(metrics: list[dict[str, float]], data: st.DataObject) -> None:
    results = [result(f"q{i}", m) for i, m in enumerate(metrics)]
    gates = [*DEFAULT_GATES, HardGate("budget_compliance", 0.5)]
    resampler = CompositeResampler(results, DEFAULT_WEIGHTS, gates)
    rows = np.array(
        data.draw(
            st.lists(st.lists(st.integers(0, len(results) - 1), min_size=len(results), max_size=len(results)), min_size=1, max_size=5)
        )
    )
    expected = [composite(metric_means([results[i] for i in row]), DEFAULT_WEIGHTS, gates).value for row in rows]
    assert resampler.composites(rows) == pytest.approx(expected)


def test_point_is_the_summary_composite() -> None:
    results = [
        result("q1", {"evidence_grounding": 1.0, "evidence_coverage": 0.5}),
        result("q2", {"evidence_grounding": 0.6, "citation_coverage": 1.0}),
    ]
    summary = summarize(results, DEFAULT_WEIGHTS, DEFAULT_GATES)["bm25"]
    assert CompositeResampler(results, DEFAULT_WEIGHTS, DEFAULT_GATES).point() == pytest.approx(summary.composite, abs=1e-6)


def test_group_metrics_are_recomputed_on_each_resample() -> None:
    results = [result(f"q{i}", {"evidence_grounding": 1.0}, question_type="null_hypothesis" if i % 2 else "longitudinal") for i in range(6)]

    def share_of_controls(sample: object) -> dict[str, float]:
        members = list(sample)  # type: ignore[call-overload]
        return {"control_share": sum(r.question_type == "null_hypothesis" for r in members) / len(members)}

    weights = {"evidence_grounding": 1.0, "control_share": 1.0}
    resampler = CompositeResampler(results, weights, DEFAULT_GATES, [share_of_controls])
    all_controls = np.array([[1, 3, 5, 1, 3, 5]])
    no_controls = np.array([[0, 2, 4, 0, 2, 4]])
    assert resampler.composites(all_controls)[0] == pytest.approx(1.0)
    assert resampler.composites(no_controls)[0] == pytest.approx(0.5)
    summary = summarize(results, weights, DEFAULT_GATES, [share_of_controls])["bm25"]
    assert resampler.point() == pytest.approx(summary.composite, abs=1e-6)


@PROPERTIES
@given(st.lists(st.tuples(metric_dicts, st.integers(0, 3)), min_size=2, max_size=12))
# Found by hypothesis: grounding summed left to right averages 0.49999999999999994, from unit sums 0.5; both must gate alike.
@example([({}, 1), *(({"evidence_grounding": v}, 0) for v in (0.25, 0.4, 0.4, 1.0, 0.4, 0.4, 0.4, 0.75))])
def test_leaving_units_out_equals_the_composite_of_the_questions_left(rows: list[tuple[dict[str, float], int]]) -> None:
    # The jackknife's shortcut (unit sums subtracted from the totals) against the composite of what is left.
    results = [result(f"q{i}", m, scope_id=f"s{unit}") for i, (m, unit) in enumerate(rows)]
    gates = [*DEFAULT_GATES, HardGate("budget_compliance", 0.5)]
    units = np.array([unit for _, unit in rows])
    deleted = np.unique(units)
    for group_metrics in ((), (lambda sample: {"fact_recall": float(len(list(sample)) % 2)},)):
        resampler = CompositeResampler(results, DEFAULT_WEIGHTS, gates, group_metrics)
        found = resampler.without(units, deleted)
        for value, unit in zip(found, deleted, strict=True):
            left = [r for r, u in zip(results, units, strict=True) if u != unit]
            means = metric_means(left) if left else {}
            for group_metric in group_metrics:
                means.update(group_metric(left))
            assert value == pytest.approx(composite(means, DEFAULT_WEIGHTS, gates).value if left else 0.0)
