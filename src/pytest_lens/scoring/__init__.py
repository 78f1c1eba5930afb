"""Scoring: mechanical metrics and the composite."""

from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, CompositeScore, HardGate, composite, parse_weights
from pytest_lens.scoring.metrics import MECHANICAL_METRICS, AnswerEvidence, fact_matched, mechanical_metrics

__all__ = [
    "DEFAULT_GATES",
    "DEFAULT_WEIGHTS",
    "MECHANICAL_METRICS",
    "AnswerEvidence",
    "CompositeScore",
    "HardGate",
    "composite",
    "fact_matched",
    "mechanical_metrics",
    "parse_weights",
]
