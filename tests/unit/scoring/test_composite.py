from __future__ import annotations

import pytest

from pytest_lens.scoring.composite import DEFAULT_WEIGHTS, HardGate, composite, parse_weights


def test_weights_renormalise_over_the_metrics_present() -> None:
    metrics = {"evidence_grounding": 1.0, "evidence_coverage": 0.5, "budget_compliance": 1.0, "citation_coverage": 0.25, "fact_recall": 0.0}
    score = composite(metrics, DEFAULT_WEIGHTS)
    expected = (0.08 * 1.0 + 0.08 * 0.5 + 0.07 * 1.0 + 0.10 * 0.25) / (0.08 + 0.08 + 0.07 + 0.10)
    assert score.value == pytest.approx(expected) and not score.gated


def test_the_grounding_gate_zeroes_the_composite_and_says_why() -> None:
    score = composite({"evidence_grounding": 0.4, "budget_compliance": 1.0}, DEFAULT_WEIGHTS)
    assert score.value == 0.0 and score.ungated > 0
    assert score.gate_reasons == ("evidence_grounding 0.400 < 0.5",)


def test_optional_budget_gate() -> None:
    gates = (HardGate("evidence_grounding"), HardGate("budget_compliance"))
    score = composite({"evidence_grounding": 1.0, "budget_compliance": 0.2}, DEFAULT_WEIGHTS, gates)
    assert score.gate_reasons == ("budget_compliance 0.200 < 0.5",)


def test_no_weighted_metric_gives_zero_not_a_division_error() -> None:
    assert composite({"fact_recall": 1.0}, DEFAULT_WEIGHTS, ()).value == 0.0


def test_parse_weights() -> None:
    weights = parse_weights(["fact_recall=0.1, evidence_coverage=0.3", "my_metric=1"])
    assert weights["fact_recall"] == 0.1 and weights["evidence_coverage"] == 0.3 and weights["my_metric"] == 1.0
    with pytest.raises(ValueError, match="is not METRIC=NUMBER"):
        parse_weights(["fact_recall"])
    with pytest.raises(ValueError, match="must be a number"):
        parse_weights(["fact_recall=lots"])
    with pytest.raises(ValueError, match="must not be negative"):
        parse_weights(["fact_recall=-1"])
