"""The sensitivity table: whether this run could tell each user adapter from its controls and mutants.

Every control of ``--lens-controls`` answered the same questions as the user's adapters.
For each user adapter and each control beside it (``null``, ``random``, the adapter's own
mutants, and its empty-extraction control when its memory is model-built) at each budget,
the questions are paired and the headline compared exactly as ``--lens-compare-fail`` compares
a run with its baseline: a one-sided paired t-test of the headline's mean drop (control minus
adapter), with the headline delta and its t interval.
A row is *detected* when that p-value is below ``--lens-alpha``. Every per-question metric gets
the same one-sided test, Holm-corrected over the row's metrics: the table then also says which
measurements see a degradation the headline misses.

The p-values are not corrected across rows: each row stands for one pull request that a CI
job would test alone (against its own baseline), which is the question the table answers.

An empty-extraction row that is not detected is flagged :data:`INSENSITIVE_TO_THE_MODEL`: the
adapter scores (about) as well when the model extracts nothing, so its score is not about the
memory the model built.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence

from pytest_lens.analysis import stats
from pytest_lens.analysis.run import apply_holm, pair_results, paired_tests
from pytest_lens.analysis.summary import summary_key
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.settings import ControlRole
from pytest_lens.records.statistics import INSENSITIVE_TO_THE_MODEL, Sensitivity, SensitivityRow
from pytest_lens.scoring.composite import HardGate
from pytest_lens.scoring.scorer import GroupMetric

__all__ = ["CONTROL_DESCRIPTIONS", "sensitivity"]

#: What the control memories do, as the table says it.
CONTROL_DESCRIPTIONS = {
    "null": "stores nothing (the floor)",
    "random": "random stored episodes, whatever the query",
    "empty-extraction": "memory built by an empty extractor (the model extracts nothing)",
}


def sensitivity(
    results: Sequence[QuestionResult],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    *,
    alpha: float = 0.05,
    seed: int = 42,
    resamples: int = stats.DEFAULT_RESAMPLES,
    confidence: float = stats.DEFAULT_CONFIDENCE,
    group_metrics: Sequence[GroupMetric] = (),
    metric: str = "composite",
    clusters: Callable[[QuestionResult], Hashable] | None = None,
) -> Sensitivity | None:
    """One row per (user adapter, control, budget) with paired questions; ``None`` when the run has no control."""
    from pytest_lens.controls.mutants import MUTANTS

    groups: dict[tuple[str, str], list[QuestionResult]] = defaultdict(list)
    for result in results:
        if result.skipped is None:
            groups[(result.adapter, result.budget)].append(result)
    if not any(members[0].control is not None for members in groups.values()):
        return None
    several_budgets = len({budget for _, budget in groups}) > 1
    order = {name: index for index, name in enumerate(MUTANTS)}
    rows: list[SensitivityRow] = []
    for (adapter, budget), members in groups.items():
        if members[0].control is not None:
            continue
        controls = [
            (label, role)
            for (label, b), group in groups.items()
            if b == budget and (role := group[0].control) is not None and _beside(role, adapter)
        ]
        controls.sort(key=lambda item: (item[1].kind == "mutant", order.get(item[1].mutant or "", -1)))
        for label, role in controls:
            pairs = pair_results(members, groups[(label, budget)])
            if not pairs:
                continue
            test, metric_tests = paired_tests(
                pairs,
                weights,
                gates,
                alternative="less",
                seed=seed,
                resamples=resamples,
                confidence=confidence,
                group_metrics=group_metrics,
                metric_alternative="less",
                clusters=clusters,
                alpha=alpha,
            )
            known = MUTANTS.get(role.mutant or "")
            degradation = known.description if known is not None else CONTROL_DESCRIPTIONS.get(role.kind, role.kind)
            detected = test.p_value < alpha
            rows.append(
                SensitivityRow(
                    adapter=summary_key(adapter, budget, several_budgets),
                    control=summary_key(label, budget, several_budgets),
                    budget=budget,
                    kind=role.kind,
                    mutant=role.mutant,
                    degradation=degradation,
                    test=test,
                    detected=detected,
                    metrics=apply_holm(metric_tests),
                    flag=INSENSITIVE_TO_THE_MODEL if role.kind == "empty-extraction" and not detected else None,
                )
            )
    return Sensitivity(metric=metric, alpha=alpha, rows=rows)


def _beside(role: ControlRole, adapter: str) -> bool:
    """The floors stand beside every adapter; a control of an adapter beside that one; the oracle is no degradation."""
    if role.kind == "oracle":
        return False
    return role.of is None or role.of == adapter
