"""The scorer contract: what a question scorer returns, what it is given, and how a run scores its answers.

Judges, LENS V2 scoring and the sibling suites implement :class:`QuestionScorer`; the engine calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pytest_lens.records.results import QuestionResult
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, HardGate

if TYPE_CHECKING:
    from pytest_lens.records.cases import LensCase

__all__ = ["CitedSources", "GroupMetric", "QuestionScorer", "ScorerOutput", "Scoring"]

#: Computes run-level metrics (e.g. synthesis-minus-control differences) from one group's results.
GroupMetric = Callable[[Sequence[QuestionResult]], dict[str, float]]


@dataclass(frozen=True)
class ScorerOutput:
    """What a question scorer adds: metrics, inspectable details, and failures (metrics then stay absent)."""

    metrics: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


class QuestionScorer(Protocol):
    """Adds metrics to a question beyond the mechanical ones (judges, suite-specific scorers)."""

    name: str

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float]) -> ScorerOutput:
        """Score ``answer`` to ``case``; ``metrics`` holds what is already known (tier 1)."""
        ...


@dataclass(frozen=True)
class Scoring:
    """How answers become scores."""

    weights: Mapping[str, float]
    gates: Sequence[HardGate]
    scorers: Sequence[QuestionScorer] = ()

    @classmethod
    def default(cls) -> Scoring:
        """The paper's weights and the grounding gate."""
        return cls(DEFAULT_WEIGHTS, DEFAULT_GATES)


@dataclass(frozen=True)
class CitedSources:
    """The refs an answer cites (stored ids, aliases resolved), those that resolve, and the texts the judge may read."""

    cited: Sequence[str]
    valid: Sequence[str]
    texts: Mapping[str, str] = field(default_factory=dict)
