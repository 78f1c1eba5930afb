"""The headline: the one number per adapter that gates, CIs, paired tests and baseline comparisons are about.

Two headlines, both weighted means of per-question metrics (renormalised over the metrics
present, like the paper's composite), so every statistic treats them alike:

- ``retrieval_score`` (the default when no judge is configured):
  ``0.5 * first_search_ndcg@10_above_chance + 0.5 * session_recall_above_chance``. It measures
  what the memory's searches surface, above what a memory returning as many stored episodes
  at random would surface: 0 means no better than random stored episodes (and a memory that
  returns nothing scores 0), 1 is out of reach (chance is never 0). Ranking quality (nDCG@10
  of the first search, the question as asked) and coverage within the budget (evidence any
  search surfaced) weigh the same; no hard gate applies (they judge answers, not searches).
  Without a judge, the paper's composite is made of tier-1 metrics that every memory
  returning *something* scores near 1 on (grounding, citation coverage, budget compliance),
  so its size says little; it is still computed and shown, labelled "tier-1 only".
- ``composite`` (the default with ``--lens-judge``): the paper's composite, exactly as it was
  (``--lens-weights``, hard gates).

``--lens-headline=retrieval|composite`` picks one explicitly.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pytest_lens.scoring.composite import HardGate

if TYPE_CHECKING:
    from pytest_lens.summary import GroupMetric

__all__ = [
    "HEADLINE_CHOICES",
    "RETRIEVAL_SCORE_WEIGHTS",
    "Headline",
    "choose_headline",
    "composite_headline",
    "composite_label",
    "retrieval_headline",
]

HeadlineKind = Literal["auto", "retrieval", "composite"]
HEADLINE_CHOICES: tuple[HeadlineKind, ...] = ("auto", "retrieval", "composite")

#: The retrieval score's weights over per-question metrics (see the module docstring).
RETRIEVAL_SCORE_WEIGHTS: dict[str, float] = {
    "first_search_ndcg@10_above_chance": 0.5,
    "session_recall_above_chance": 0.5,
}

#: Metrics of tiers 2 and 3 (judge-based and differential): the composite without them is "tier-1 only".
_JUDGE_TIERS = frozenset(
    {"answer_quality", "insight_depth", "reasoning_quality", "naive_baseline_advantage", "longitudinal_advantage", "action_quality"}
)


@dataclass(frozen=True)
class Headline:
    """A named score: weights over per-question metrics, hard gates, and run-level metrics it needs."""

    name: str
    #: Column heading in the summary.
    label: str
    weights: Mapping[str, float]
    gates: tuple[HardGate, ...] = ()
    group_metrics: Sequence[GroupMetric] = field(default=(), compare=False)
    #: What the number is, for the summary header.
    description: str = ""

    @property
    def is_composite(self) -> bool:
        """Whether this headline is the paper's composite."""
        return self.name == "composite"

    def identity(self) -> dict[str, object]:
        """How the run artifact records the headline (baseline comparisons check it)."""
        return {"name": self.name, "weights": dict(self.weights), "gates": [f"{g.metric} < {g.threshold:g}" for g in self.gates]}


def retrieval_headline() -> Headline:
    """The retrieval score (no gates)."""
    return Headline(
        name="retrieval_score",
        label="retrieval score",
        weights=dict(RETRIEVAL_SCORE_WEIGHTS),
        description=(
            "retrieval score = 0.5 x first-search nDCG@10 above chance + 0.5 x session recall above chance "
            "(chance: as many stored episodes drawn at random; 0 = no better than random, higher is better)"
        ),
    )


def composite_headline(weights: Mapping[str, float], gates: Sequence[HardGate], group_metrics: Sequence[GroupMetric] = ()) -> Headline:
    """The paper's composite with the run's weights, gates and run-level metrics."""
    return Headline(
        name="composite",
        label="composite",
        weights=dict(weights),
        gates=tuple(gates),
        group_metrics=tuple(group_metrics),
        description="composite = the LENS paper's weighted mean of the metrics present (renormalised), zeroed by the hard gates",
    )


def choose_headline(
    kind: str, *, judged: bool, weights: Mapping[str, float], gates: Sequence[HardGate], group_metrics: Sequence[GroupMetric] = ()
) -> Headline:
    """``auto``: the composite when a judge scores tiers 2-3, else the retrieval score; :class:`ValueError` for another ``kind``."""
    if kind not in HEADLINE_CHOICES:
        raise ValueError(f"headline must be one of {', '.join(HEADLINE_CHOICES)}, got {kind!r}")
    if kind == "composite" or (kind == "auto" and judged):
        return composite_headline(weights, gates, group_metrics)
    return retrieval_headline()


def composite_label(metrics: Collection[str]) -> str:
    """``composite (tier-1 only)`` when no judge-based metric is among ``metrics``, else ``composite``."""
    return "composite" if _JUDGE_TIERS & set(metrics) else "composite (tier-1 only)"
