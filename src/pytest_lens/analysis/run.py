"""Statistics of one run: per-adapter CIs, paired tests between adapters, Kendall's W across scopes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from itertools import combinations
from typing import TYPE_CHECKING, Literal

from pytest_lens.analysis import stats
from pytest_lens.analysis.inference import Mean, StudentT, jackknife, minimum_detectable_effect, unit_count
from pytest_lens.analysis.resample import CompositeResampler
from pytest_lens.analysis.summary import metric_means, summary_key
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.statistics import (
    AdapterPair,
    AdapterStatistics,
    Estimate,
    PairedTest,
    RunStatistics,
    ScopeConcordance,
)
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


def _estimate(found: StudentT | None, value: float, n: int, confidence: float) -> Estimate:
    """``value`` with the t interval of ``found`` (none without one)."""
    if found is None:
        return Estimate(value=round(value, _DIGITS), n=n)
    low, high = found.interval(confidence)
    return Estimate(
        value=round(value, _DIGITS),
        low=round(low, _DIGITS),
        high=round(high, _DIGITS),
        n=n,
        se=round(found.se, _DIGITS),
        df=found.df,
    )


def infer(
    n: int,
    statistic: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    *,
    units: Sequence[Hashable] | None,
    strata: Sequence[Hashable] | None = None,
    two_stage: bool = False,
    seed: int,
    resamples: int = stats.DEFAULT_RESAMPLES,
    batch: int | None = None,
    without: Callable[[NDArray[np.intp], NDArray[np.intp]], NDArray[np.float64]] | None = None,
) -> StudentT | None:
    """The statistic with its standard error and t reference: the jackknife over ``units``, or the two-stage bootstrap.

    ``units`` labels each observation's scope (``None``: the observations are the units); ``strata`` (fixed groups,
    with the observations as units only) give the stratified jackknife. ``two_stage`` replaces the jackknife's
    standard error with the two-stage bootstrap's, rescaled by ``sqrt(G / (G - 1))`` (see :mod:`.stats`).
    ``without`` computes the leave-one-unit-out values directly (see :func:`~.inference.jackknife`).
    """
    import math

    import numpy as np

    if two_stage and units is not None:
        count = unit_count(units)
        found = stats.bootstrap(n, statistic, clusters=units, seed=seed, resamples=resamples, batch=batch, two_stage=True)
        if found is None or count < 2:
            return None
        point = float(np.asarray(statistic(np.arange(n, dtype=np.intp)[None, :]), dtype=np.float64)[0])
        return StudentT(estimate=point, se=found.se * math.sqrt(count / (count - 1)), df=count - 1, units=count)
    return jackknife(n, statistic, units=units, strata=strata if units is None else None, batch=batch, without=without)


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


def paired_test_name(mode: str, scopes: int, questions: int | None = None, df: int | None = None) -> str:
    """The paired test (and intervals) of a run whose units are ``mode``'s, as its records, reports and card name it.

    ``cluster t-test over 6 scopes (jackknife SE, t(5))``; plain, ``paired t-test over 144 questions (t(143))`` for
    one test of ``questions`` questions, or ``paired t-test over the questions (t(questions - 1))`` for a run (its
    adapters may have answered different numbers). ``df`` defaults to the units less one (fewer with strata).
    """
    if mode in ("clustered", "two-stage"):
        freedom = scopes - 1 if df is None else df
        spread = "jackknife SE" if mode == "clustered" else "two-stage bootstrap SE"
        return f"{'cluster ' if mode == 'clustered' else ''}t-test over {scopes} scopes ({spread}, t({freedom}))"
    if questions is None:
        return "paired t-test over the questions (t(questions - 1))"
    return f"paired t-test over {questions} questions (t({questions - 1 if df is None else df}))"


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
    """Composite, metric means and question-type composites of one (adapter, budget), each with a t interval.

    Every interval has the same units (the questions, or their scopes with ``clusters``: see :func:`infer`).
    The question-type composites use ``question_weights`` (default ``weights``): a sibling suite's
    headline may be a run-level metric that means nothing for one type.
    """
    first = results[0]
    two_stage = _two_stage(clusters)

    def units_of(members: Sequence[QuestionResult]) -> list[Hashable] | None:
        return None if clusters is None else [clusters(r) for r in members]

    resampler = CompositeResampler(results, weights, gates, group_metrics)
    found = infer(
        resampler.n,
        resampler.composites,
        units=units_of(results),
        strata=None if strata is None else [strata(r) for r in results],
        two_stage=two_stage,
        seed=seed,
        resamples=resamples,
        batch=resampler.batch,
        without=resampler.without,
    )
    metric_estimates: dict[str, Estimate] = {}
    for name in resampler.names:
        present = [r for r in results if name in r.metrics]
        values = [r.metrics[name] for r in present]
        mean = Mean(values)
        spread = infer(
            len(values), mean, units=units_of(present), two_stage=two_stage, seed=seed, resamples=resamples, without=mean.without
        )
        metric_estimates[name] = _estimate(spread, sum(values) / len(values), len(values), confidence)
    by_type: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in results:
        by_type[result.question_type].append(result)
    type_estimates: dict[str, Estimate] = {}
    for qtype, members in sorted(by_type.items()):
        # Like AdapterSummary.by_type: the composite of the type's metric means, without run-level metrics.
        sub = CompositeResampler(members, weights if question_weights is None else question_weights, gates)
        spread = infer(
            sub.n, sub.composites, units=units_of(members), two_stage=two_stage, seed=seed, resamples=resamples, batch=sub.batch,
            without=sub.without,
        )  # fmt: skip
        type_estimates[qtype] = _estimate(spread, sub.point(), sub.n, confidence)
    return AdapterStatistics(
        adapter=first.adapter,
        budget=first.budget,
        composite=_estimate(found, resampler.point(), resampler.n, confidence),
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
    """Paired t-tests of ``second - first``: the composite's, then each metric's (``p_adjusted`` still equals ``p_value``).

    The composite's test is of the delta it reports, the difference of the two group composites (``weights``,
    ``group_metrics``) over the paired questions, with the units of :func:`infer`; a metric's is of its mean
    paired difference, with the same units. The per-question composites under ``question_weights`` (default
    ``weights``) count the questions that moved and give the signed-rank second line.
    """
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    per_question = weights if question_weights is None else question_weights
    diffs = [question_composite(b, per_question, gates) - question_composite(a, per_question, gates) for a, b in pairs]
    before = CompositeResampler(firsts, weights, gates, group_metrics)
    after = CompositeResampler(seconds, weights, gates, group_metrics)

    def difference(indices: NDArray[np.intp]) -> NDArray[np.float64]:
        return after.composites(indices) - before.composites(indices)

    units = None if clusters is None else [clusters(a) for a in firsts]
    fit = partial(infer, seed=seed, resamples=resamples, two_stage=_two_stage(clusters))
    labels = None if strata is None else [strata(a) for a in firsts]

    def difference_without(codes: NDArray[np.intp], deleted: NDArray[np.intp]) -> NDArray[np.float64]:
        return after.without(codes, deleted) - before.without(codes, deleted)

    batch = max(1, min(before.batch, after.batch) // 2)
    found = fit(len(pairs), difference, units=units, strata=labels, batch=batch, without=difference_without)
    spread = None
    if found is not None and found.se == 0:
        # The paired differences do not vary (nothing changed, or everything alike): size the detectable change
        # from the run's own per-question variance instead, as before a baseline (two independent runs).
        own = fit(len(pairs), after.composites, units=units, strata=labels, batch=after.batch, without=after.without)
        spread = None if own is None else 2**0.5 * own.se
    composite_test = _paired_test(
        "composite",
        found,
        after.point() - before.point(),
        diffs,
        (before.point(), after.point()),
        alternative=alternative,
        confidence=confidence,
        mode=bootstrap_mode(clusters),
        alpha=alpha,
        power_se=spread,
        signed_rank_p=stats.signed_rank_test(diffs, alternative=alternative, seed=seed).p_value,
    )
    return composite_test, _metric_tests(pairs, clusters, fit, metric_alternative, confidence, alpha)


def _metric_tests(
    pairs: Sequence[tuple[QuestionResult, QuestionResult]],
    clusters: Callable[[QuestionResult], Hashable] | None,
    fit: Callable[..., StudentT | None],
    alternative: stats.Alternative,
    confidence: float,
    alpha: float,
) -> list[PairedTest]:
    """Each metric's paired t-test of its mean difference over the pairs where both sides have it (same units)."""
    metric_tests: list[PairedTest] = []
    names = sorted({name for a, b in pairs for name in a.metrics.keys() & b.metrics.keys()})
    for name in names:
        both = [(a, a.metrics[name], b.metrics[name]) for a, b in pairs if name in a.metrics and name in b.metrics]
        metric_diffs = [y - x for _, x, y in both]
        mean = Mean(metric_diffs)
        found = fit(len(both), mean, units=None if clusters is None else [clusters(a) for a, _, _ in both], without=mean.without)
        metric_tests.append(
            _paired_test(
                name,
                found,
                sum(metric_diffs) / len(metric_diffs),
                metric_diffs,
                (sum(x for _, x, _ in both) / len(both), sum(y for _, _, y in both) / len(both)),
                alternative=alternative,
                confidence=confidence,
                mode=bootstrap_mode(clusters),
                alpha=alpha,
            )
        )
    return metric_tests


def _paired_test(
    metric: str,
    found: StudentT | None,
    observed: float,
    differences: Sequence[float],
    means: tuple[float, float],
    *,
    alternative: stats.Alternative,
    confidence: float,
    mode: Literal["plain", "clustered", "two-stage"],
    alpha: float,
    power_se: float | None = None,
    signed_rank_p: float | None = None,
) -> PairedTest:
    """One paired test from ``found`` (``None``: fewer than two units, untestable); the composite's gets MDE and bounds.

    ``signed_rank_p`` marks the composite's test: it alone states a minimum detectable effect (from ``power_se``
    when the differences have no spread) and says whether any change the score could show is detectable (scores
    lie in [0, 1]: a drop can be at most the first score, a rise at most ``1 -`` it).
    """
    first, second = means
    changed = [d for d in differences if d != 0]
    test = PairedTest(
        metric=metric,
        n_pairs=len(differences),
        n_changed=len(changed),
        n_up=sum(1 for d in changed if d > 0),
        n_down=sum(1 for d in changed if d < 0),
        first=round(first, _DIGITS),
        second=round(second, _DIGITS),
        delta=_estimate(found, observed, len(differences), confidence),
        alternative=alternative,
        statistic=None if found is None or found.se <= 0 else round(found.estimate / found.se, _DIGITS),
        p_value=1.0 if found is None else found.p_value(alternative),
        p_adjusted=1.0 if found is None else found.p_value(alternative),
        effect_size=round(stats.rank_biserial(changed), _DIGITS),
        method="no test (fewer than two units)" if found is None else paired_test_name(mode, found.units, found.units, found.df),
        bootstrap=mode,
        units=None if found is None else found.units,
        df=None if found is None else found.df,
        signed_rank_p=signed_rank_p,
        alpha=alpha,
    )
    if signed_rank_p is None:
        return test
    if found is None:
        return test.model_copy(update={"detectable": False})
    spread = found.se if found.se > 0 else power_se
    largest = {"less": first, "greater": 1 - first}.get(alternative, max(first, 1 - first))
    mde = None if not spread else minimum_detectable_effect(spread, alpha=alpha, two_sided=alternative == "two-sided", df=found.df)
    return test.model_copy(
        update={
            "mde": None if mde is None or mde > largest else round(mde, _DIGITS),
            "detectable": mde is None or mde <= largest,
            "drop_bound": round(-found.lower_bound(alpha), _DIGITS) + 0.0,  # + 0.0: never -0.0
        }
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
        clusters=None if clusters is None else unit_count([clusters(r) for r in results]),
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
