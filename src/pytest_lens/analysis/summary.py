"""Aggregating question results into per-adapter verdicts."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_lens.records.results import AdapterSummary, GroupSummary, QuestionResult
from pytest_lens.scoring.composite import HardGate, composite
from pytest_lens.scoring.scorer import GroupMetric

if TYPE_CHECKING:
    from pytest_lens.scoring.headline import Headline

__all__ = ["absent_metrics", "fault_counts", "mark_not_comparable", "metric_means", "not_measured_counts", "summarize", "summary_key"]



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


def absent_metrics(results: Iterable[QuestionResult]) -> dict[str, str]:
    """Metrics the data could not support on some questions: ``metric -> "N of M questions: <most common reason>"``."""
    members = list(results)
    reasons: dict[str, Counter[str]] = defaultdict(Counter)
    for result in members:
        for name, reason in result.absent_metrics.items():
            reasons[name][reason] += 1
    return {
        name: f"absent on {sum(found.values())} of {len(members)} questions: {found.most_common(1)[0][0]}"
        for name, found in sorted(reasons.items())
    }


def summarize(
    results: Sequence[QuestionResult],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    group_metrics: Sequence[GroupMetric] = (),
    headline: Headline | None = None,
) -> dict[str, AdapterSummary]:
    """One :class:`AdapterSummary` per (adapter, budget), in first-seen order.

    The composite follows the paper: the weighted mean of the run's metric means
    (plus any run-level ``group_metrics``), zeroed when a gate fails on them. ``headline``
    (default: that composite) is the same kind of score with its own weights and gates. Questions
    that could not be measured are counted (``not_measured``) and left out of everything else; a
    group with no measured question has no summary (see :func:`not_measured_counts`).
    """
    from pytest_lens.scoring.headline import composite_label

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
        type_means = {qtype: metric_means(items) for qtype, items in by_type.items()}
        summaries[summary_key(adapter, budget, several_budgets)] = AdapterSummary(
            adapter=adapter,
            budget=budget,
            n_questions=len(members),
            composite=round(score.value, 6),
            composite_label=composite_label(means),
            headline=round(composite(means, *_score(headline, weights, gates)).value, 6),
            headline_name="composite" if headline is None else headline.name,
            metrics={name: round(value, 6) for name, value in means.items()},
            absent_metrics=absent_metrics(members),
            gated=score.gated,
            gate_reasons=list(score.gate_reasons),
            by_type={
                qtype: GroupSummary(
                    n=len(items),
                    composite=round(composite(type_means[qtype], weights, gates).value, 6),
                    headline=round(composite(type_means[qtype], *_score(headline, weights, gates)).value, 6),
                    metrics={name: round(value, 6) for name, value in type_means[qtype].items()},
                )
                for qtype, items in sorted(by_type.items())
            },
            result_tokens_mean=round(sum(r.result_tokens for r in members) / len(members), 2),
            tool_calls_mean=round(sum(r.tool_call_count for r in members) / len(members), 2),
            violations=sum(len(r.violations) for r in members),
            faults=sum(1 for r in members if r.failed),
            scoring_failures=sum(1 for r in members if r.scoring_failures),
            not_measured=not_measured[(adapter, budget)],
            adapter_stats=_summed_stats(members),
            control=members[0].control,
        )
    return summaries


def _score(
    headline: Headline | None, weights: Mapping[str, float], gates: Sequence[HardGate]
) -> tuple[Mapping[str, float], Sequence[HardGate]]:
    """The headline's weights and gates; the composite's when the headline is the composite."""
    return (weights, gates) if headline is None else (headline.weights, headline.gates)


def mark_not_comparable(summaries: Mapping[str, AdapterSummary], max_fault_rate: float) -> None:
    """Mark the summaries with faults on more than ``max_fault_rate`` of their questions: their scores measured a broken adapter."""
    for summary in summaries.values():
        if summary.n_questions and summary.faults / summary.n_questions > max_fault_rate:
            share = summary.faults / summary.n_questions
            summary.not_comparable = (
                f"faults on {summary.faults} of {summary.n_questions} questions ({share:.0%}) > --lens-max-fault-rate={max_fault_rate:g}"
            )


def not_measured_counts(results: Sequence[QuestionResult]) -> dict[str, tuple[int, int]]:
    """``(not measured, asked)`` per summary key (as :func:`summarize` keys them), for the groups with a question not measured."""
    counts = _question_counts(results, lambda result: result.not_measured is not None)
    return {key: (missed, total) for key, (missed, total) in counts.items() if missed}


def fault_counts(results: Sequence[QuestionResult]) -> dict[str, tuple[int, int]]:
    """``(faulted, asked)`` per summary key, for every group asked a question (controls left out).

    A question counts as faulted when it failed (:attr:`QuestionResult.failed`) and was measured, as summaries count
    it, and also when it could not be measured but its adapter faulted (``prepare`` raised, say): a run whose every
    question went unmeasured still owes ``--lens-max-fault-rate`` the faults its adapter raised.
    """
    faulted: dict[tuple[str, str, str, str], bool] = {}
    questions: dict[tuple[str, str, str, str], QuestionResult] = {}
    for result in results:  # one count per question, whatever --lens-repeat asked of it
        if result.control is None:
            key = (result.adapter, result.scope_id, result.budget, result.question_id)
            hit = result.failed if result.not_measured is None else bool(result.faults)
            faulted[key] = faulted.get(key, False) or hit
            questions.setdefault(key, result)
    return _question_counts(list(questions.values()), lambda r: faulted[(r.adapter, r.scope_id, r.budget, r.question_id)])


def _question_counts(results: Sequence[QuestionResult], hit: Callable[[QuestionResult], bool]) -> dict[str, tuple[int, int]]:
    """``(questions with hit, questions asked)`` per summary key, skipped questions left out."""
    asked = [r for r in results if r.skipped is None]
    several_budgets = len({r.budget for r in asked}) > 1
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for result in asked:
        entry = counts[summary_key(result.adapter, result.budget, several_budgets)]
        entry[0] += hit(result)
        entry[1] += 1
    return {key: (found, total) for key, (found, total) in counts.items()}


def _summed_stats(results: Iterable[QuestionResult]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for result in results:
        for name, value in result.adapter_stats.items():
            totals[name] += value
    return dict(sorted(totals.items()))
