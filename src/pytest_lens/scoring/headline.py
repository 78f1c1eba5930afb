"""The headline: the one number per adapter that gates, CIs, paired tests and baseline comparisons are about.

Two headlines, both weighted means of per-question metrics (renormalised over the metrics
present, like the paper's composite), so every statistic treats them alike:

- ``retrieval_score`` (the default when no judge is configured):
  ``0.5 * first_search_ndcg@10 + 0.5 * first_search_mrr``: how well the memory ranks the
  required evidence for the question as first asked, by two standard trec_eval measures
  (nDCG@10: the evidence in the top ten, discounted by rank; MRR: 1 / rank of the first
  required episode). 0 means no required evidence among the results (``null``, which returns
  nothing, scores exactly 0); 1 means the required evidence is ranked first. It cannot be
  raised by returning more results (past the tenth nothing counts but MRR's shrinking
  ``1 / rank``) nor by returning fewer (truncating a list can only lose evidence). A memory
  returning stored episodes at random scores its chance level, which grows as the haystack
  shrinks: ``--lens-controls`` (or ``--lens-adapter=random``) puts it in the table, and the
  metric table's ``*_above_chance`` metrics subtract it. The score is the mean over the
  questions with required evidence available; no hard gate applies (gates judge answers,
  not searches). Without a judge, the paper's composite is made of tier-1 metrics that
  every memory returning *something* scores near 1 on (grounding, citation coverage, budget
  compliance), so its size says little; it is still computed and shown, labelled "tier-1 only".

  Why not the chance-corrected metrics or session recall: subtracting chance ties ``null``
  with a memory ranking at chance (and puts it above one that was unlucky), and rewards a
  memory for returning fewer results of the same ranking (fewer results, less chance
  subtracted); raw session recall rewards returning more. Measured on real LENS scope 01
  (bm25 with ``--lens-controls``), ``0.5 x nDCG@10 above chance + 0.5 x session recall above
  chance`` detected none of the controls, ``null`` included, while this score detects
  ``null``, ``top2`` and ``cut200``.
- ``composite`` (the default with ``--lens-judge``): the paper's composite, exactly as it was
  (``--lens-weights``, hard gates).

``--lens-headline=retrieval|composite`` picks one explicitly.

Sibling suites (LoCoMo, LongMemEval, MEME, MemoryAgentBench) follow the same rule
(:func:`suite_uses_retrieval`): their own score judges answer text (token F1, SubEM, a
judge's verdict), which the offline agent's extractive answers cannot earn whatever the memory
returns (measured on LoCoMo: bm25 0.022, random 0.017). Under the offline agent and a mechanical
judge their headline is the retrieval score, their own score beside it; with an LLM agent, or an
LLM judge of the suite's answers, their own score is the headline and the retrieval score stands
beside it. ``--lens-headline=retrieval`` or ``composite`` (the suite's own score) picks for them too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pytest_lens.records.identity import RecordedHeadline, RunIdentity
from pytest_lens.records.results import LENS
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, HardGate, composite

if TYPE_CHECKING:
    from pytest_lens.records.results import QuestionResult
    from pytest_lens.scoring.scorer import GroupMetric

__all__ = [
    "HEADLINE_CHOICES",
    "RETRIEVAL_SCORE",
    "RETRIEVAL_SCORE_WEIGHTS",
    "Headline",
    "QuestionHeadlines",
    "choose_headline",
    "composite_headline",
    "composite_label",
    "gates_of",
    "recorded_headline",
    "retrieval_headline",
    "suite_uses_retrieval",
]

HeadlineKind = Literal["auto", "retrieval", "composite"]
HEADLINE_CHOICES: tuple[HeadlineKind, ...] = ("auto", "retrieval", "composite")

#: The retrieval score's name, as summaries, statistics and artifacts record it.
RETRIEVAL_SCORE = "retrieval_score"
#: The retrieval score's weights over per-question metrics (see the module docstring).
RETRIEVAL_SCORE_WEIGHTS: dict[str, float] = {
    "first_search_ndcg@10": 0.5,
    "first_search_mrr": 0.5,
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

    def identity(self) -> RecordedHeadline:
        """How the run artifact records the headline (baseline comparisons check it)."""
        return RecordedHeadline(name=self.name, weights=dict(self.weights), gates=list(self.gates))


def retrieval_headline() -> Headline:
    """The retrieval score (no gates)."""
    return Headline(
        name=RETRIEVAL_SCORE,
        label="retrieval score",
        weights=dict(RETRIEVAL_SCORE_WEIGHTS),
        description=(
            "retrieval score = 0.5 x first-search nDCG@10 + 0.5 x first-search MRR "
            "(how well the memory ranks the required evidence: 0 = none returned, 1 = ranked first; "
            "random stored episodes score their chance level)"
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


def gates_of(run: RunIdentity | RecordedHeadline) -> list[HardGate]:
    """The hard gates a run identity (or its headline) records; the defaults for runs saved before gates were recorded."""
    return list(run.gates) if run.gates is not None else list(DEFAULT_GATES)


def recorded_headline(run: RunIdentity) -> tuple[str, Mapping[str, float], Sequence[HardGate]]:
    """A run's headline as its artifact records it: name, weights and hard gates.

    Runs saved before there was a headline had the composite: the run's weights and gates.
    """
    headline = run.headline
    if headline is not None and headline.name != "composite" and headline.weights is not None:
        return headline.name, headline.weights, gates_of(headline)
    return run.headline_name, run.weights if run.weights is not None else DEFAULT_WEIGHTS, gates_of(run)


def suite_uses_retrieval(kind: str, *, answers_by_model: bool) -> bool:
    """Whether a sibling suite's headline is the retrieval score (else the suite's own score).

    ``kind`` is ``--lens-headline``; ``answers_by_model``: an LLM agent writes the answers, or an LLM judge
    judges the suite's answers. ``auto`` gives the retrieval score exactly when neither does.
    """
    if kind not in HEADLINE_CHOICES:
        raise ValueError(f"headline must be one of {', '.join(HEADLINE_CHOICES)}, got {kind!r}")
    return kind == "retrieval" or (kind == "auto" and not answers_by_model)


@dataclass(frozen=True)
class QuestionHeadlines:
    """Each question's headline score: what its section (LENS, or its sibling suite) ranks and tests it by.

    ``weights`` and ``gates`` are LENS's headline; ``retrieval_suites`` the sibling suites headed by the
    retrieval score. Another suite's question scores its own composite (the suite's per-question score).
    """

    weights: Mapping[str, float]
    gates: Sequence[HardGate] = ()
    retrieval_suites: frozenset[str] = frozenset()

    @classmethod
    def of_run(cls, run: RunIdentity) -> QuestionHeadlines:
        """As a run artifact records them (runs saved before suites recorded a headline: the suites' own scores)."""
        _, weights, gates = recorded_headline(run)
        found = run.suite_headlines or {}
        return cls(weights, tuple(gates), frozenset(name for name, h in found.items() if h.name == RETRIEVAL_SCORE))

    def __call__(self, result: QuestionResult) -> float | None:
        """The headline of ``result``'s question; ``None`` when it has none of the headline's metrics (no required evidence)."""
        if result.suite == LENS:
            weights, gates = self.weights, self.gates
        elif result.suite in self.retrieval_suites:
            weights, gates = RETRIEVAL_SCORE_WEIGHTS, ()
        else:
            return result.composite
        if not any(weight > 0 and name in result.metrics for name, weight in weights.items()):
            return None
        return composite(result.metrics, weights, gates).value
