"""Repeated answers (``--lens-repeat``): per-question means for every statistic, and how much of the variance is repetition.

Repetitions of a question are not independent questions: counting them as such would shrink every
confidence interval by about the square root of the number of repetitions and let a single noisy question
look like several. So each question's repetitions are first merged into one result whose metrics are
their means (:func:`collapse_repetitions`); summaries, intervals, paired tests and baseline comparisons
then work on those, so a question with all of its answers is one unit (the jackknife leaves it out whole).
A question's composite is the composite of its metric means, as the adapter composite is the composite of
the run's metric means. :func:`repetition_variance` says how much of the
spread of per-answer scores lies within questions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_lens.analysis.format import METRIC_LABELS, format_table
from pytest_lens.analysis.summary import summarize
from pytest_lens.records.results import AdapterSummary, QuestionResult
from pytest_lens.records.statistics import RepetitionVariance, VarianceSplit
from pytest_lens.scoring.composite import HardGate, composite
from pytest_lens.scoring.scorer import GroupMetric

if TYPE_CHECKING:
    from pytest_lens.scoring.headline import Headline

__all__ = ["RepetitionSection", "collapse_repetitions", "repetition_variance", "summarize_repeated", "variance_split"]

_DIGITS = 6


def collapse_repetitions(
    results: Sequence[QuestionResult], weights: Mapping[str, float], gates: Sequence[HardGate]
) -> list[QuestionResult]:
    """One result per question (in first-seen order): its repetitions merged, metrics averaged where present.

    The merged result is its first repetition's record with: the mean of each metric over the repetitions
    that have it, the composite (and gate) of those means, mean token and turn counts, every repetition's
    violations, faults and scoring failures, summed adapter counters and durations. Answers that could not
    be measured (the model could not be had) are left out of the merge, so a question is not measured only
    when none of its answers was; the not-measured gate counts answers, before this merge. Results without
    repetitions come back unchanged.
    """
    groups: dict[tuple[str, str, str, str], list[QuestionResult]] = defaultdict(list)
    for result in results:
        groups[result.key].append(result)
    if all(len(members) == 1 for members in groups.values()):
        return list(results)
    return [_merged(sorted(members, key=lambda r: r.repetition), weights, gates) for members in groups.values()]


def _merged(members: list[QuestionResult], weights: Mapping[str, float], gates: Sequence[HardGate]) -> QuestionResult:
    members = [m for m in members if m.measured] or members[:1]
    first = members[0]
    if len(members) == 1:
        return first
    values: dict[str, list[float]] = defaultdict(list)
    for member in members:
        for name, value in member.metrics.items():
            values[name].append(value)
    metrics = {name: sum(found) / len(found) for name, found in values.items()}
    score = composite(metrics, weights, gates)
    stats: dict[str, int] = defaultdict(int)
    for member in members:
        for name, count in member.adapter_stats.items():
            stats[name] += count
    count = len(members)
    return first.model_copy(
        update={
            "metrics": metrics,
            "composite": round(score.value, _DIGITS),
            "gated": score.gated,
            "result_tokens": round(sum(m.result_tokens for m in members) / count),
            "turns": round(sum(m.turns for m in members) / count),
            "agent_tokens": round(sum(m.agent_tokens for m in members) / count),
            "violations": [v for m in members for v in m.violations],
            "faults": [f for m in members for f in m.faults],
            "agent_error": next((m.agent_error for m in members if m.agent_error is not None), None),
            "scoring_failures": [f for m in members for f in m.scoring_failures],
            "adapter_stats": dict(stats),
            "duration_s": round(sum(m.duration_s for m in members), 4),
        }
    )


def summarize_repeated(
    results: Sequence[QuestionResult],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    group_metrics: Sequence[GroupMetric] = (),
    headline: Headline | None = None,
) -> dict[str, AdapterSummary]:
    """:func:`~pytest_lens.analysis.summary.summarize` over per-question means, with per-answer token and call means.

    ``n_questions`` counts questions; composite, metrics and gates are over their means; ``res.tok/q`` and
    ``calls/q`` are means over every answer; ``repetitions`` is the most answers any question got.
    """
    summaries = summarize(collapse_repetitions(results, weights, gates), weights, gates, group_metrics, headline)
    answers: dict[tuple[str, str], list[QuestionResult]] = defaultdict(list)
    for result in results:
        if result.measured:
            answers[(result.adapter, result.budget)].append(result)
    for summary in summaries.values():
        members = answers.get((summary.adapter, summary.budget), [])
        if not members:
            continue
        per_question: dict[tuple[str, str, str, str], int] = defaultdict(int)
        for member in members:
            per_question[member.key] += 1
        summary.repetitions = max(per_question.values())
        summary.result_tokens_mean = round(sum(r.result_tokens for r in members) / len(members), 2)
        summary.tool_calls_mean = round(sum(r.tool_call_count for r in members) / len(members), 2)
    return summaries


def variance_split(groups: Sequence[Sequence[float]]) -> VarianceSplit:
    """Within- and between-group variance of ``groups`` (one list of per-answer scores per question).

    ``share`` = within-question sum of squares / total sum of squares; the two parts add up exactly to
    the total (one-way analysis of variance).
    """
    groups = [list(group) for group in groups if group]
    answers = sum(len(group) for group in groups)
    if not groups:
        return VarianceSplit()
    grand = sum(sum(group) for group in groups) / answers
    means = [sum(group) / len(group) for group in groups]
    ss_within = sum((value - mean) ** 2 for group, mean in zip(groups, means, strict=True) for value in group)
    ss_between = sum(len(group) * (mean - grand) ** 2 for group, mean in zip(groups, means, strict=True))
    total = ss_within + ss_between
    within = ss_within / (answers - len(groups)) if answers > len(groups) else None
    between = None
    if len(groups) > 1:
        centre = sum(means) / len(means)
        between = sum((mean - centre) ** 2 for mean in means) / (len(means) - 1)
    share = ss_within / total if total > 1e-12 else None
    return VarianceSplit(
        within=None if within is None else round(within, _DIGITS),
        between=None if between is None else round(between, _DIGITS),
        share=None if share is None else round(share, _DIGITS),
    )


def repetition_variance(
    results: Sequence[QuestionResult], weights: Mapping[str, float], gates: Sequence[HardGate]
) -> list[RepetitionVariance]:
    """Per (adapter, budget) with repeated questions: the variance split of per-answer composites and of each metric."""
    by_group: dict[tuple[str, str], dict[tuple[str, str, str, str], list[QuestionResult]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        if result.measured:  # an answer never given has no score to vary
            by_group[(result.adapter, result.budget)][result.key].append(result)
    found: list[RepetitionVariance] = []
    for (adapter, budget), questions in by_group.items():
        repetitions = max(len(answers) for answers in questions.values())
        if repetitions < 2:
            continue
        composites = [[composite(r.metrics, weights, gates).value for r in answers] for answers in questions.values()]
        names = sorted({name for answers in questions.values() for r in answers for name in r.metrics})
        found.append(
            RepetitionVariance(
                adapter=adapter,
                budget=budget,
                repetitions=repetitions,
                questions=len(questions),
                answers=sum(len(answers) for answers in questions.values()),
                composite=variance_split(composites),
                metrics={
                    name: variance_split([[r.metrics[name] for r in answers if name in r.metrics] for answers in questions.values()])
                    for name in names
                },
            )
        )
    return found


@dataclass(frozen=True)
class RepetitionSection:
    """The summary block that says how the repetitions were used and how much they varied."""

    variances: Sequence[RepetitionVariance]

    @property
    def lines(self) -> list[str]:
        """A table per (adapter, budget) of the composite's variance split, then each metric's share."""
        if not self.variances:
            return []
        several_budgets = len({v.budget for v in self.variances}) > 1
        out = [
            f"repetitions: each question answered up to {max(v.repetitions for v in self.variances)} times (distinct seeds); "
            "scores, CIs and paired tests use per-question means (the bootstrap resamples questions with all their answers)",
        ]
        rows = []
        for v in self.variances:
            key = f"{v.adapter}@{v.budget}" if several_budgets else v.adapter
            rows.append(
                [
                    key,
                    str(v.questions),
                    str(v.answers),
                    _number(v.composite.within),
                    _number(v.composite.between),
                    _share(v.composite.share),
                ]
            )
        out.extend(
            format_table(
                ["adapter", "questions", "answers", "within-question var", "between-question var", "share from repetition"],
                rows,
                right=[False, True, True, True, True, True],
            )
        )
        for v in self.variances:
            key = f"{v.adapter}@{v.budget}" if several_budgets else v.adapter
            shares = ", ".join(f"{METRIC_LABELS.get(name, name)} {_share(split.share)}" for name, split in v.metrics.items())
            out.append(f"  {key}: share of each metric's variance from repetition: {shares}")
        return out


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _share(value: float | None) -> str:
    return "- (no variance)" if value is None else f"{value:.0%}"
