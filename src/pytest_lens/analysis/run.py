"""Statistics of one run: per-adapter CIs, paired tests between adapters, Kendall's W across scopes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Literal

from pytest_lens.analysis import stats
from pytest_lens.analysis.resample import CompositeResampler
from pytest_lens.analysis.summary import metric_means, summary_key
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.statistics import AdapterPair, AdapterStatistics, Estimate, PairedTest, RunStatistics, ScopeConcordance
from pytest_lens.scoring.composite import HardGate, composite
from pytest_lens.scoring.scorer import GroupMetric

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "MIN_CLUSTERS",
    "ScopeClusters",
    "adapter_statistics",
    "analyze_run",
    "apply_holm",
    "bootstrap_mode",
    "clusters_for",
    "pair_results",
    "paired_test_name",
    "paired_tests",
    "question_composite",
    "question_state",
    "scope_of",
    "scope_then_question",
    "use_clusters",
]

_DIGITS = 6


def question_composite(result: QuestionResult, weights: Mapping[str, float], gates: Sequence[HardGate]) -> float:
    """A question's composite under ``weights`` and ``gates`` (both runs of a comparison are rescored alike)."""
    return composite(result.metrics, weights, gates).value


def question_state(result: QuestionResult, gates: Sequence[HardGate]) -> str:
    """``failed`` (adapter or agent fault), ``gated`` (a hard gate zeroed it) or ``ok``."""
    if result.failed:
        return "failed"
    return "gated" if any(gate.fails(result.metrics) for gate in gates) else "ok"


def _estimate(value: float, interval: stats.Interval | None, n: int, se: float | None = None) -> Estimate:
    if interval is None:
        return Estimate(value=round(value, _DIGITS), n=n)
    return Estimate(
        value=round(value, _DIGITS),
        low=round(interval.low, _DIGITS),
        high=round(interval.high, _DIGITS),
        n=n,
        se=None if se is None else round(se, _DIGITS),
    )


#: Fewest clusters (scopes) for which ``--lens-bootstrap=auto`` resamples clusters: below it a cluster
#: bootstrap has too few distinct resamples to estimate between-scope spread (six scopes give 462).
MIN_CLUSTERS = 5


def use_clusters(results: Sequence[QuestionResult], mode: str = "auto") -> bool:
    """Whether ``--lens-bootstrap=mode`` resamples scopes for these results.

    ``clustered``/``two-stage``/``plain`` say so; ``auto`` clusters when there are at least :data:`MIN_CLUSTERS`
    scopes and some scope holds more than one question (otherwise clusters are questions and nothing changes).
    """
    scopes = [r.scope_id for r in results]
    distinct = len(set(scopes))
    if mode != "auto":
        # One scope is one cluster: resampling it says nothing, so even a forced clustering falls back to plain.
        return mode in ("clustered", "two-stage") and distinct > 1
    return distinct >= MIN_CLUSTERS and distinct < len(scopes)


class ScopeClusters:
    """The cluster of a question: its scope (a LoCoMo conversation is a scope too); called per question.

    ``two_stage``: the questions of each drawn scope are resampled as well (see :mod:`pytest_lens.analysis.stats`).
    """

    def __init__(self, two_stage: bool = False) -> None:
        self.two_stage = two_stage

    def __call__(self, result: QuestionResult) -> Hashable:
        """The question's scope id."""
        return result.scope_id


#: Scopes resampled whole (``--lens-bootstrap=clustered``), and scopes then their questions (``two-stage``).
scope_of = ScopeClusters()
scope_then_question = ScopeClusters(two_stage=True)


def clusters_for(results: Sequence[QuestionResult], mode: str = "auto") -> ScopeClusters | None:
    """The clustering ``--lens-bootstrap=mode`` gives these results (``None``: plain)."""
    if not use_clusters(results, mode):
        return None
    return scope_then_question if mode == "two-stage" else scope_of


def _two_stage(clusters: Callable[[QuestionResult], Hashable] | None) -> bool:
    return isinstance(clusters, ScopeClusters) and clusters.two_stage


def bootstrap_mode(clusters: Callable[[QuestionResult], Hashable] | None) -> Literal["plain", "clustered", "two-stage"]:
    """How ``clusters`` resamples, as records name it."""
    return "plain" if clusters is None else "two-stage" if _two_stage(clusters) else "clustered"


def paired_test_name(mode: str, scopes: int) -> str:
    """The paired test of a run resampling by ``mode`` over ``scopes`` scopes, as its records and comparability card name it."""
    if mode == "two-stage":
        return f"two-stage bootstrap ({scopes} scopes, then questions)"
    if mode == "clustered":
        return f"cluster bootstrap ({scopes} scopes)"
    return "Wilcoxon signed-rank"


def adapter_statistics(
    results: Sequence[QuestionResult],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    *,
    seed: int,
    resamples: int = stats.DEFAULT_RESAMPLES,
    confidence: float = stats.DEFAULT_CONFIDENCE,
    group_metrics: Sequence[GroupMetric] = (),
    question_weights: Mapping[str, float] | None = None,
    strata: Callable[[QuestionResult], Hashable] | None = None,
    clusters: Callable[[QuestionResult], Hashable] | None = None,
) -> AdapterStatistics:
    """Composite, metric means and question-type composites of one (adapter, budget), each with a bootstrap CI.

    The question-type composites use ``question_weights`` (default ``weights``): a sibling suite's
    headline may be a run-level metric that means nothing for one type.
    """
    first = results[0]
    resampler = CompositeResampler(results, weights, gates, group_metrics)
    labels = None if clusters is None else [clusters(r) for r in results]
    composite_boot = stats.bootstrap(
        resampler.n,
        resampler.composites,
        seed=seed,
        resamples=resamples,
        batch=resampler.batch,
        strata=None if strata is None else [strata(r) for r in results],
        clusters=labels,
        two_stage=_two_stage(clusters),
    )
    metric_estimates: dict[str, Estimate] = {}
    for name in resampler.names:
        present = [r for r in results if name in r.metrics]
        values = [r.metrics[name] for r in present]
        found = stats.mean_bootstrap(
            values,
            seed=seed,
            resamples=resamples,
            clusters=None if clusters is None else [clusters(r) for r in present],
            two_stage=_two_stage(clusters),
        )
        interval = None if found is None else found.interval(confidence)
        metric_estimates[name] = _estimate(sum(values) / len(values), interval, len(values), None if found is None else found.se)
    by_type: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in results:
        by_type[result.question_type].append(result)
    type_estimates: dict[str, Estimate] = {}
    for qtype, members in sorted(by_type.items()):
        # Like AdapterSummary.by_type: the composite of the type's metric means, without run-level metrics.
        sub = CompositeResampler(members, weights if question_weights is None else question_weights, gates)
        interval = stats.bootstrap_interval(sub.n, sub.composites, seed=seed, resamples=resamples, confidence=confidence, batch=sub.batch)
        type_estimates[qtype] = _estimate(sub.point(), interval, sub.n)
    return AdapterStatistics(
        adapter=first.adapter,
        budget=first.budget,
        composite=_estimate(
            resampler.point(),
            None if composite_boot is None else composite_boot.interval(confidence),
            resampler.n,
            None if composite_boot is None else composite_boot.se,
        ),
        metrics=metric_estimates,
        by_type=type_estimates,
    )


def pair_results(
    first: Sequence[QuestionResult],
    second: Sequence[QuestionResult],
    key: Callable[[QuestionResult], Hashable] = lambda r: (r.scope_id, r.question_id),
) -> list[tuple[QuestionResult, QuestionResult]]:
    """Results of ``first`` and ``second`` with the same key, in ``first``'s order."""
    by_key = {key(result): result for result in second}
    return [(result, by_key[key(result)]) for result in first if key(result) in by_key]


def paired_tests(
    pairs: Sequence[tuple[QuestionResult, QuestionResult]],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    *,
    alternative: stats.Alternative = "two-sided",
    seed: int,
    resamples: int = stats.DEFAULT_RESAMPLES,
    confidence: float = stats.DEFAULT_CONFIDENCE,
    group_metrics: Sequence[GroupMetric] = (),
    question_weights: Mapping[str, float] | None = None,
    strata: Callable[[QuestionResult], Hashable] | None = None,
    metric_alternative: stats.Alternative = "two-sided",
    clusters: Callable[[QuestionResult], Hashable] | None = None,
    alpha: float = 0.05,
) -> tuple[PairedTest, list[PairedTest]]:
    """Composite and per-metric signed-rank tests of ``second - first`` (``p_adjusted`` still equals ``p_value``).

    The signed-rank test is on per-question composites under ``question_weights`` (default
    ``weights``); the delta and its CI are of the group composite (``weights`` and ``group_metrics``).
    """
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    per_question = weights if question_weights is None else question_weights
    diffs = [question_composite(b, per_question, gates) - question_composite(a, per_question, gates) for a, b in pairs]
    test = stats.signed_rank_test(diffs, alternative=alternative, seed=seed)
    before = CompositeResampler(firsts, weights, gates, group_metrics)
    after = CompositeResampler(seconds, weights, gates, group_metrics)

    def difference(indices: NDArray[np.intp]) -> NDArray[np.float64]:
        return after.composites(indices) - before.composites(indices)

    labels = None if clusters is None else [clusters(a) for a in firsts]
    resampled = stats.bootstrap(
        len(pairs),
        difference,
        seed=seed,
        resamples=resamples,
        batch=max(1, min(before.batch, after.batch) // 2),
        strata=None if strata is None else [strata(a) for a in firsts],
        clusters=labels,
        two_stage=_two_stage(clusters),
    )
    observed = after.point() - before.point()
    interval = None if resampled is None else resampled.interval(confidence)
    se = None if resampled is None else resampled.se
    composite_test = _paired_test("composite", test, before.point(), after.point(), _estimate(observed, interval, len(pairs), se))
    if resampled is not None:
        spread = resampled.se
        if spread == 0:
            # The paired differences do not vary (nothing changed, or everything alike): size the detectable change
            # from the run's own per-question variance instead, as before a baseline (two independent runs).
            own = stats.bootstrap(
                len(pairs),
                after.composites,
                seed=seed,
                resamples=resamples,
                batch=after.batch,
                clusters=labels,
                two_stage=_two_stage(clusters),
            )
            spread = 0.0 if own is None else 2**0.5 * own.se
        update: dict[str, object] = {
            "alpha": alpha,
            "mde": round(stats.minimum_detectable_effect(spread, alpha=alpha, two_sided=alternative == "two-sided"), _DIGITS),
            "drop_bound": round(-resampled.lower_bound(alpha), _DIGITS) + 0.0,  # + 0.0: never -0.0
        }
        if labels is not None:
            p_value = stats.bootstrap_p(resampled, observed, alternative)
            update |= {
                "bootstrap": "two-stage" if _two_stage(clusters) else "clustered",
                "p_value": p_value,
                "p_adjusted": p_value,
                "statistic": None,
                "min_p": 1 / (resampled.values.size + 1),
                "method": paired_test_name(bootstrap_mode(clusters), stats.cluster_count(labels)),
            }
        composite_test = composite_test.model_copy(update=update)

    metric_tests: list[PairedTest] = []
    names = sorted({name for a, b in pairs for name in a.metrics.keys() & b.metrics.keys()})
    for name in names:
        both = [(a.metrics[name], b.metrics[name]) for a, b in pairs if name in a.metrics and name in b.metrics]
        metric_diffs = [y - x for x, y in both]
        mean_diff = sum(metric_diffs) / len(metric_diffs)
        metric_clusters = None if clusters is None else [clusters(a) for a, b in pairs if name in a.metrics and name in b.metrics]
        metric_interval = stats.mean_interval(
            metric_diffs, seed=seed, resamples=resamples, confidence=confidence, clusters=metric_clusters, two_stage=_two_stage(clusters)
        )
        metric_tests.append(
            _paired_test(
                name,
                stats.signed_rank_test(metric_diffs, alternative=metric_alternative, seed=seed),
                sum(x for x, _ in both) / len(both),
                sum(y for _, y in both) / len(both),
                _estimate(mean_diff, metric_interval, len(both)),
            )
        )
    return composite_test, metric_tests


def _paired_test(metric: str, test: stats.SignedRankResult, first: float, second: float, delta: Estimate) -> PairedTest:
    return PairedTest(
        metric=metric,
        n_pairs=test.n,
        n_changed=test.n_changed,
        n_up=test.n_up,
        n_down=test.n_down,
        first=round(first, _DIGITS),
        second=round(second, _DIGITS),
        delta=delta,
        alternative=test.alternative,
        statistic=test.statistic,
        p_value=test.p_value,
        p_adjusted=test.p_value,
        effect_size=round(test.effect_size, _DIGITS),
        method=test.method,
        min_p=test.min_p,
    )


def apply_holm(tests: Sequence[PairedTest]) -> list[PairedTest]:
    """The same tests with ``p_adjusted`` Holm-corrected over them as one family."""
    adjusted = stats.holm([test.p_value for test in tests])
    return [test.model_copy(update={"p_adjusted": p}) for test, p in zip(tests, adjusted, strict=True)]


def analyze_run(
    results: Sequence[QuestionResult],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    *,
    seed: int = 42,
    resamples: int = stats.DEFAULT_RESAMPLES,
    confidence: float = stats.DEFAULT_CONFIDENCE,
    group_metrics: Sequence[GroupMetric] = (),
    question_weights: Mapping[str, float] | None = None,
    strata: Callable[[QuestionResult], Hashable] | None = None,
    score: str = "composite",
    clusters: Callable[[QuestionResult], Hashable] | None = None,
    alpha: float = 0.05,
) -> RunStatistics:
    """Statistics of a run (``score`` names the weighted score they are about).

    CIs per (adapter, budget); every pair of adapters at each budget (two-sided, Holm over all
    pairs; the metric tests form a second family); Kendall's W of the scopes' adapter rankings.
    Controls (``--lens-controls``) get CIs but take part in no pair and no ranking: they are
    compared with the user's adapters by :mod:`pytest_lens.analysis.sensitivity`.
    """
    groups: dict[tuple[str, str], list[QuestionResult]] = defaultdict(list)
    for result in results:
        groups[(result.adapter, result.budget)].append(result)
    several_budgets = len({budget for _, budget in groups}) > 1
    adapters = {
        summary_key(adapter, budget, several_budgets): adapter_statistics(
            members,
            weights,
            gates,
            seed=seed,
            resamples=resamples,
            confidence=confidence,
            group_metrics=group_metrics,
            question_weights=question_weights,
            strata=strata,
            clusters=clusters,
        )
        for (adapter, budget), members in groups.items()
    }

    budgets = list(dict.fromkeys(budget for _, budget in groups))
    raw_pairs: list[tuple[str, str, str, PairedTest, list[PairedTest]]] = []
    concordance: list[ScopeConcordance] = []
    for budget in budgets:
        names = [adapter for (adapter, b), members in groups.items() if b == budget and members[0].control is None]
        for first, second in combinations(names, 2):
            pairs = pair_results(groups[(first, budget)], groups[(second, budget)])
            if not pairs:
                continue
            composite_test, metric_tests = paired_tests(
                pairs,
                weights,
                gates,
                seed=seed,
                resamples=resamples,
                confidence=confidence,
                group_metrics=group_metrics,
                question_weights=question_weights,
                strata=strata,
                clusters=clusters,
                alpha=alpha,
            )
            raw_pairs.append((budget, first, second, composite_test, metric_tests))
        if (found := _concordance(budget, names, groups, weights, gates, group_metrics)) is not None:
            concordance.append(found)

    composites = apply_holm([entry[3] for entry in raw_pairs])
    metric_family = apply_holm([test for entry in raw_pairs for test in entry[4]])
    pairs_out: list[AdapterPair] = []
    offset = 0
    for (budget, first, second, _, metric_tests), composite_test in zip(raw_pairs, composites, strict=True):
        pairs_out.append(
            AdapterPair(
                budget=budget,
                first=first,
                second=second,
                composite=composite_test,
                metrics=metric_family[offset : offset + len(metric_tests)],
            )
        )
        offset += len(metric_tests)
    return RunStatistics(
        seed=seed,
        resamples=resamples,
        confidence=confidence,
        bootstrap=bootstrap_mode(clusters),
        clusters=None if clusters is None else stats.cluster_count([clusters(r) for r in results]),
        score=score,
        adapters=adapters,
        pairs=pairs_out,
        concordance=concordance,
    )


def _concordance(
    budget: str,
    adapters: Sequence[str],
    groups: Mapping[tuple[str, str], Sequence[QuestionResult]],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    group_metrics: Sequence[GroupMetric],
) -> ScopeConcordance | None:
    if len(adapters) < 2:
        return None
    per_scope: dict[str, dict[str, list[QuestionResult]]] = defaultdict(lambda: defaultdict(list))
    for adapter in adapters:
        for result in groups[(adapter, budget)]:
            per_scope[result.scope_id][adapter].append(result)
    scopes = [scope for scope, by_adapter in per_scope.items() if all(by_adapter.get(a) for a in adapters)]
    if len(scopes) < 2:
        return None
    matrix = []
    for scope in scopes:
        row = []
        for adapter in adapters:
            members = per_scope[scope][adapter]
            means = metric_means(members)
            for group_metric in group_metrics:
                means.update(group_metric(members))
            row.append(composite(means, weights, gates).value)
        matrix.append(row)
    found = stats.kendalls_w(matrix)
    if found is None:
        return None
    return ScopeConcordance(
        budget=budget,
        adapters=list(adapters),
        scopes=scopes,
        w=round(found.w, _DIGITS),
        chi_square=round(found.chi_square, _DIGITS),
        p_value=found.p_value,
    )
