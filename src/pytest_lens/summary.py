"""Aggregating question results into per-adapter verdicts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from pytest_lens.results import AdapterSummary, GroupSummary, QuestionResult
from pytest_lens.scoring.composite import HardGate, composite

__all__ = ["GroupMetric", "metric_means", "not_measured_counts", "summarize", "summary_key"]

#: Computes run-level metrics (e.g. synthesis-minus-control differences) from one group's results.
GroupMetric = Callable[[Sequence[QuestionResult]], dict[str, float]]


def summary_key(adapter: str, budget: str, several_budgets: bool) -> str:
    """``bm25``, or ``bm25@8k`` when the run has several budgets."""
    return f"{adapter}@{budget}" if several_budgets else adapter


def metric_means(results: Iterable[QuestionResult]) -> dict[str, float]:
    """Mean of each metric over the questions where it is present."""
    values: dict[str, list[float]] = defaultdict(list)
    for result in results:
        for name, value in result.metrics.items():
            values[name].append(value)
    return {name: sum(vals) / len(vals) for name, vals in sorted(values.items())}


def summarize(
    results: Sequence[QuestionResult],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    group_metrics: Sequence[GroupMetric] = (),
) -> dict[str, AdapterSummary]:
    """One :class:`AdapterSummary` per (adapter, budget), in first-seen order.

    The composite follows the paper: the weighted mean of the run's metric means
    (plus any run-level ``group_metrics``), zeroed when a gate fails on them. Questions that
    could not be measured are counted (``not_measured``) and left out of everything else; a
    group with no measured question has no summary (see :func:`not_measured_counts`).
    """
    groups: dict[tuple[str, str], list[QuestionResult]] = defaultdict(list)
    not_measured: dict[tuple[str, str], int] = defaultdict(int)
    for result in results:
        if result.not_measured is not None:  # the model could not be reached: counted, never scored
            not_measured[(result.adapter, result.budget)] += 1
        if not result.measured:  # not asked, or nothing measured: nothing to aggregate
            continue
        groups[(result.adapter, result.budget)].append(result)
    several_budgets = len({budget for _, budget in [*groups, *not_measured]}) > 1
    summaries: dict[str, AdapterSummary] = {}
    for (adapter, budget), members in groups.items():
        means = metric_means(members)
        for group_metric in group_metrics:
            means.update(group_metric(members))
        score = composite(means, weights, gates)
        by_type: dict[str, list[QuestionResult]] = defaultdict(list)
        for result in members:
            by_type[result.question_type].append(result)
        summaries[summary_key(adapter, budget, several_budgets)] = AdapterSummary(
            adapter=adapter,
            budget=budget,
            n_questions=len(members),
            composite=round(score.value, 6),
            metrics={name: round(value, 6) for name, value in means.items()},
            gated=score.gated,
            gate_reasons=list(score.gate_reasons),
            by_type={
                qtype: GroupSummary(
                    n=len(items),
                    composite=round(composite(type_means := metric_means(items), weights, gates).value, 6),
                    metrics={name: round(value, 6) for name, value in type_means.items()},
                )
                for qtype, items in sorted(by_type.items())
            },
            result_tokens_mean=round(sum(r.result_tokens for r in members) / len(members), 2),
            tool_calls_mean=round(sum(len(r.tool_calls) for r in members) / len(members), 2),
            violations=sum(len(r.violations) for r in members),
            faults=sum(1 for r in members if r.failed),
            scoring_failures=sum(1 for r in members if r.scoring_failures),
            not_measured=not_measured[(adapter, budget)],
            adapter_stats=_summed_stats(members),
        )
    return summaries


def not_measured_counts(results: Sequence[QuestionResult]) -> dict[str, tuple[int, int]]:
    """``(not measured, asked)`` per summary key (as :func:`summarize` keys them), for the groups with a question not measured."""
    asked = [r for r in results if r.skipped is None]
    several_budgets = len({r.budget for r in asked}) > 1
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for result in asked:
        entry = counts[summary_key(result.adapter, result.budget, several_budgets)]
        entry[0] += result.not_measured is not None
        entry[1] += 1
    return {key: (missed, total) for key, (missed, total) in counts.items() if missed}


def _summed_stats(results: Iterable[QuestionResult]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for result in results:
        for name, value in result.adapter_stats.items():
            totals[name] += value
    return dict(sorted(totals.items()))
