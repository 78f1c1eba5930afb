"""The composite score: a weighted mean over the metrics present, renormalised, with hard gates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_lens.records.identity import HardGate

__all__ = [
    "DEFAULT_GATES",
    "DEFAULT_WEIGHTS",
    "SCORING_PRESETS",
    "V2_WEIGHTS",
    "CompositeScore",
    "HardGate",
    "composite",
    "parse_weights",
    "preset_weights",
]

#: The LENS paper's v3.3 weights (Phase 5). Metrics absent from a run drop out and the rest renormalise.
DEFAULT_WEIGHTS: dict[str, float] = {
    "evidence_grounding": 0.08,
    "fact_recall": 0.0,
    "evidence_coverage": 0.08,
    "budget_compliance": 0.07,
    "citation_coverage": 0.10,
    "answer_quality": 0.17,
    "insight_depth": 0.15,
    "reasoning_quality": 0.10,
    "naive_baseline_advantage": 0.17,
    "longitudinal_advantage": 0.0,
    "action_quality": 0.08,
}


#: LENS V2's composite weights (``--lens-scoring=v2``; the metrics are scored by :mod:`pytest_lens.judging.v2`).
V2_WEIGHTS: dict[str, float] = {"fact_recall_judged": 0.5, "evidence_support": 0.3, "citation_validity": 0.2}

#: ``--lens-scoring`` values.
SCORING_PRESETS = ("paper", "v2")


def preset_weights(preset: str) -> dict[str, float]:
    """The base weights of a ``--lens-scoring`` preset (``--lens-weights`` overrides apply on top)."""
    if preset == "paper":
        return dict(DEFAULT_WEIGHTS)
    if preset == "v2":
        # The paper's metrics stay computed and shown, weighted 0, so the V2 composite is V2's alone.
        return {**{name: 0.0 for name in DEFAULT_WEIGHTS}, **V2_WEIGHTS}
    raise ValueError(f"unknown scoring preset {preset!r}: use {' or '.join(SCORING_PRESETS)}")


DEFAULT_GATES: tuple[HardGate, ...] = (HardGate("evidence_grounding", 0.5),)


@dataclass(frozen=True)
class CompositeScore:
    """A composite and, when a gate zeroed it, why."""

    value: float
    ungated: float
    gate_reasons: tuple[str, ...]

    @property
    def gated(self) -> bool:
        """A hard gate zeroed this composite."""
        return bool(self.gate_reasons)


def composite(metrics: Mapping[str, float], weights: Mapping[str, float], gates: Sequence[HardGate] = DEFAULT_GATES) -> CompositeScore:
    """Weighted mean over the metrics present with a positive weight; any failing gate gives 0."""
    used = {name: weight for name, weight in weights.items() if weight > 0 and name in metrics}
    total = sum(used.values())
    ungated = sum(weights[name] * metrics[name] for name in used) / total if total else 0.0
    reasons = tuple(reason for gate in gates if (reason := gate.fails(metrics)) is not None)
    return CompositeScore(value=0.0 if reasons else ungated, ungated=ungated, gate_reasons=reasons)


def parse_weights(entries: Sequence[str], base: Mapping[str, float] = DEFAULT_WEIGHTS) -> dict[str, float]:
    """Apply ``metric=weight`` overrides (comma- or line-separated) to ``base``; :class:`ValueError` if malformed."""
    weights = dict(base)
    for entry in entries:
        for part in entry.split(","):
            if not part.strip():
                continue
            name, sep, raw = part.partition("=")
            name = name.strip()
            if not sep or not name:
                raise ValueError(f"weight {part.strip()!r} is not METRIC=NUMBER")
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"weight for {name!r} must be a number, got {raw.strip()!r}") from None
            if value < 0:
                raise ValueError(f"weight for {name!r} must not be negative")
            weights[name] = value
    return weights
