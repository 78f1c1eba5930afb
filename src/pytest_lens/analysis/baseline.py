"""Comparing a run with a saved run: paired by (adapter, scope, budget, question), one-sided for regressions.

Both runs are rescored with *this* run's weights and gates from their stored per-question
metrics, so a change of weights cannot pass for a change of the memory (a warning says
when they differ).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from functools import partial

from pytest_lens.analysis import stats
from pytest_lens.analysis.inference import t_cdf
from pytest_lens.analysis.repetitions import collapse_repetitions
from pytest_lens.analysis.run import apply_holm, bootstrap_mode, pair_results, paired_tests, question_composite, question_state
from pytest_lens.analysis.summary import summary_key
from pytest_lens.records.card import ComparabilityCard, differences, refusing
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import LENS, QuestionResult, RunArtifact, scored_results
from pytest_lens.records.statistics import (
    BaselineAdapterComparison,
    BaselineComparison,
    BaselineInfo,
    ChangeStatus,
    FlippedQuestion,
    PairedTest,
    QuestionDelta,
)
from pytest_lens.scoring.composite import HardGate
from pytest_lens.scoring.scorer import GroupMetric

__all__ = ["compare_with_baseline", "compatibility_warnings"]

#: How many of the largest per-question drops a comparison lists.
LARGEST_DROPS = 3


def compatibility_warnings(
    current: ComparabilityCard, baseline: ComparabilityCard, *, rescored: bool = False, accepted: Collection[str] = ()
) -> list[str]:
    """One line per field in which the two runs' comparability cards differ, and one when their composites' weights differ.

    A refusing field (:data:`~pytest_lens.records.card.REFUSING`) that differs is said to be ``accepted`` when it is in
    ``accepted`` (``lens compare`` and ``--lens-baseline`` refuse the comparison otherwise, before it is made);
    ``rescored``: the composite weights or hard gates differ (both runs are rescored with this run's).
    """
    warnings = []
    for difference in differences(current, baseline):
        line = difference.line()
        if difference.refuses:
            line += " - compared only because this difference was accepted" if difference.field in accepted else " - not comparable"
        warnings.append(line)
    if rescored:
        warnings.append("composite weights or hard gates differ from the baseline's; both runs are rescored with this run's")
    return warnings


def compare_with_baseline(
    results: Sequence[QuestionResult],
    run: RunIdentity,
    baseline: RunArtifact,
    info: BaselineInfo,
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    *,
    alpha: float = 0.05,
    max_drop: float | None = None,
    seed: int = 42,
    resamples: int = stats.DEFAULT_RESAMPLES,
    confidence: float = stats.DEFAULT_CONFIDENCE,
    group_metrics: Sequence[GroupMetric] = (),
    suite: str | None = LENS,
    question_weights: Mapping[str, float] | None = None,
    prepare: Callable[[Sequence[QuestionResult]], list[QuestionResult]] | None = None,
    strata: Callable[[QuestionResult], Hashable] | None = None,
    score: str = "composite",
    clusters: Callable[[QuestionResult], Hashable] | None = None,
    margin: float | None = None,
    accepted: Collection[str] = (),
) -> BaselineComparison:
    """Compare ``results`` (this run, identity ``run``) with ``baseline``, per (adapter, budget).

    Only questions of ``suite`` take part (sibling suites score with their own metrics); ``None`` keeps all.
    Controls (``--lens-controls``) of either run never take part: they are no one's baseline.
    ``prepare`` turns each side's questions into what is compared (a sibling suite's credited
    probes); ``question_weights`` (default ``weights``) score one question for the signed-rank
    test, the flips and the drops, ``weights`` and ``group_metrics`` the compared composites.
    """
    current, previous = _compared_groups(results, baseline, weights, gates, suite, prepare)
    per_question = weights if question_weights is None else question_weights
    several_budgets = len({budget for _, budget in current}) > 1
    regression_tests = partial(
        paired_tests, weights=weights, gates=gates, alternative="less", seed=seed, resamples=resamples, confidence=confidence,
        group_metrics=group_metrics, question_weights=question_weights, strata=strata, clusters=clusters, alpha=alpha,
    )  # fmt: skip
    entries: list[_Entry] = []
    for (adapter, budget), members in current.items():
        before = previous.get((adapter, budget), [])
        # A question one side could not score (none of the weighted metrics: e.g. a baseline saved before
        # they existed) is not compared, rather than counted as a fall from or to 0.
        pairs = [(old, new) for new, old in pair_results(members, before) if _scored(old, per_question) and _scored(new, per_question)]
        entry = BaselineAdapterComparison(
            key=summary_key(adapter, budget, several_budgets),
            adapter=adapter,
            budget=budget,
            baseline_only=len(before) - len(pairs),
            run_only=len(members) - len(pairs),
        )
        entries.append(_compare_pairs(entry, pairs, regression_tests, per_question, gates) if pairs else (entry, None, None, []))
    out = _decide(entries, alpha=alpha, max_drop=max_drop, margin=margin)

    baseline_several = len({budget for _, budget in previous}) > 1
    missing = [summary_key(adapter, budget, baseline_several) for adapter, budget in previous if (adapter, budget) not in current]
    ours = run.card if run.card is not None else run.derived_card(results)
    rescored = run.weights != baseline.run.weights or run.gates != baseline.run.gates
    return BaselineComparison(
        baseline=info,
        alpha=alpha,
        max_drop=max_drop,
        margin=margin,
        bootstrap=bootstrap_mode(clusters),
        score=score,
        warnings=[
            *(f"baseline {info.name} is an incomplete run ({line}): questions it lacks are not compared" for line in baseline.incomplete),
            *compatibility_warnings(ours, baseline.card, rescored=rescored, accepted=accepted),
        ],
        accepted_unlike=[d.line() for d in refusing(ours, baseline.card) if d.field in accepted],
        adapters=out,
        missing=missing,
    )


#: One (adapter, budget)'s comparison before the family's decisions: the entry, its regression test, the Holm-free
#: p-value of an improvement, and its per-metric tests (``None`` and empty when no question pairs).
_Entry = tuple[BaselineAdapterComparison, PairedTest | None, float | None, list[PairedTest]]


def _compared_groups(
    results: Sequence[QuestionResult],
    baseline: RunArtifact,
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    suite: str | None,
    prepare: Callable[[Sequence[QuestionResult]], list[QuestionResult]] | None,
) -> tuple[dict[tuple[str, str], list[QuestionResult]], dict[tuple[str, str], list[QuestionResult]]]:
    """Both sides' questions of ``suite`` by (adapter, budget): controls left out, repeated answers as per-question means."""

    def side(rows: Iterable[QuestionResult]) -> list[QuestionResult]:
        kept = [r for r in rows if (suite is None or r.suite == suite) and r.control is None]
        return collapse_repetitions(kept, weights, gates)

    current, previous = side(results), side(scored_results(baseline.results))
    if prepare is not None:
        current, previous = prepare(current), prepare(previous)
    return _groups(current), _groups(previous)


def _compare_pairs(
    entry: BaselineAdapterComparison,
    pairs: list[tuple[QuestionResult, QuestionResult]],
    regression_tests: Callable[..., tuple[PairedTest, list[PairedTest]]],
    per_question: Mapping[str, float],
    gates: Sequence[HardGate],
) -> _Entry:
    """One (adapter, budget)'s tests over its (baseline, run) ``pairs``, its flipped questions and largest drops."""
    regression, metric_tests = regression_tests(pairs)
    deltas = [(old, new, question_composite(new, per_question, gates) - question_composite(old, per_question, gates)) for old, new in pairs]
    entry.flipped = [
        FlippedQuestion(
            scope_id=new.scope_id,
            question_id=new.question_id,
            before=question_state(old, gates),
            after=question_state(new, gates),
            baseline_composite=round(question_composite(old, per_question, gates), 6),
            composite=round(question_composite(new, per_question, gates), 6),
        )
        for old, new, _ in deltas
        if question_state(old, gates) != question_state(new, gates)
    ]
    drops = sorted((d for d in deltas if d[2] < 0), key=lambda item: item[2])[:LARGEST_DROPS]
    entry.largest_drops = [QuestionDelta(scope_id=new.scope_id, question_id=new.question_id, delta=round(d, 6)) for _, new, d in drops]
    return entry, regression, rise_p(regression), metric_tests


def _decide(entries: list[_Entry], *, alpha: float, max_drop: float | None, margin: float | None) -> list[BaselineAdapterComparison]:
    """Each compared entry's status, Holm-adjusted across the run's (adapter, budget) pairs and across its metrics."""
    compared = [(i, e) for i, e in enumerate(entries) if e[1] is not None]
    regressions = apply_holm([e[1] for _, e in compared if e[1] is not None])
    improvements = stats.holm([e[2] for _, e in compared if e[2] is not None])
    metric_family = apply_holm([test for _, e in compared for test in e[3]])
    offset = 0
    out: list[BaselineAdapterComparison] = [e[0] for e in entries]
    for (index, (entry, _, _, metric_tests)), regression, improvement in zip(compared, regressions, improvements, strict=True):
        status: ChangeStatus = "no significant change"
        # The t statistic has the delta's sign, so these never contradict the delta's interval; said anyway.
        if regression.p_adjusted < alpha and regression.delta.value < 0:
            status = "regression"
        elif improvement < alpha and regression.delta.value > 0:
            status = "improvement"
        out[index] = entry.model_copy(
            update={
                "regression": regression,
                "improvement_p": improvement,
                "metrics": metric_family[offset : offset + len(metric_tests)],
                "status": status,
                "dropped": max_drop is not None and regression.delta.value < -max_drop,
                # Non-inferiority is shown only by a bound within the margin: no bound (one unit) shows nothing.
                "inferior": margin is not None and (regression.drop_bound is None or regression.drop_bound > margin),
            }
        )
        offset += len(metric_tests)
    return out


def rise_p(test: PairedTest) -> float:
    """The one-sided p-value of a rise, from a test for a drop: the same t statistic's other tail."""
    if test.units is None or test.df is None or test.delta.value == 0:
        return 1.0
    if test.statistic is None:  # no spread: every unit rose or fell alike (the exact sign-flip p)
        return 0.5**test.units if test.delta.value > 0 else 1.0
    return t_cdf(-test.statistic, test.df)


def _scored(result: QuestionResult, weights: Mapping[str, float]) -> bool:
    """Whether any metric with a positive weight was measured on ``result``."""
    return any(weight > 0 and name in result.metrics for name, weight in weights.items())


def _groups(results: Sequence[QuestionResult]) -> dict[tuple[str, str], list[QuestionResult]]:
    groups: dict[tuple[str, str], list[QuestionResult]] = defaultdict(list)
    for result in results:
        groups[(result.adapter, result.budget)].append(result)
    return dict(groups)
