"""The statistics core against scipy/numpy (and statsmodels' Holm) on fixed inputs, plus property tests."""

from __future__ import annotations

import itertools
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from pytest_lens.analysis import stats

PROPERTIES = settings(max_examples=40, deadline=None, derandomize=bool(os.environ.get("CI")))
scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def test_mean_interval_is_scipys_percentile_bootstrap_with_the_same_seed() -> None:
    values = [0.758, 0.879, 1.0, 0.758, 0.919, 0.838, 0.758, 0.879]
    ours = stats.mean_interval(values, seed=7, resamples=999)
    reference = sps.bootstrap(
        (np.array(values),), np.mean, n_resamples=999, method="percentile", rng=np.random.default_rng(7)
    ).confidence_interval
    assert ours is not None
    assert (ours.low, ours.high) == pytest.approx((reference.low, reference.high))


def _scipy_interval(n: int, statistic, *, seed: int, resamples: int, batch: int | None) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """What stats.bootstrap_interval computed through scipy.stats.bootstrap before it went numpy-only."""
    result = sps.bootstrap(
        (np.arange(n, dtype=np.float64),),
        lambda sample, axis=-1: statistic(np.asarray(sample, dtype=np.intp)),
        vectorized=True,
        n_resamples=resamples,
        batch=batch,
        confidence_level=0.95,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@pytest.mark.parametrize(
    ("n", "seed", "resamples", "batch"),
    [
        (24, 42, 2000, None),
        (3, 42, 2000, None),
        (2, 7, 2000, None),
        (24, 42, 2000, 333),
        (57, 3, 999, 250),
        (11, 0, 2000, 1),
        (120, 42, 2000, 2000),
    ],
)
def test_the_numpy_bootstrap_is_scipys_percentile_bootstrap_to_the_last_bit(n: int, seed: int, resamples: int, batch: int | None) -> None:
    # Scores on the grid a deterministic agent produces (many ties) and continuous ones; a mean and a
    # nonlinear statistic (a gated ratio, like the composite).
    rng = np.random.default_rng(n + seed)
    for data in (rng.choice([0.0, 0.25, 0.758, 0.879, 1.0], n), rng.random(n)):

        def mean(indices, data=data):  # type: ignore[no-untyped-def]
            return data[indices].mean(axis=-1)

        def gated_ratio(indices, data=data):  # type: ignore[no-untyped-def]
            m = data[indices].mean(axis=-1)
            return np.where(m < 0.4, 0.0, m**2 / (m + 0.5))

        for statistic in (mean, gated_ratio):
            ours = stats.bootstrap_interval(n, statistic, seed=seed, resamples=resamples, batch=batch)
            assert ours is not None
            assert (ours.low, ours.high) == _scipy_interval(n, statistic, seed=seed, resamples=resamples, batch=batch)


def test_a_nan_statistic_gives_a_nan_interval_as_scipy_does() -> None:
    ours = stats.bootstrap_interval(5, lambda indices: np.where(indices[:, 0] == 0, np.nan, 1.0), seed=1)
    assert ours is not None and np.isnan(ours.low) and np.isnan(ours.high)


def test_a_run_that_only_needs_intervals_never_imports_scipy(pytester: pytest.Pytester) -> None:
    script = pytester.makepyfile(
        check="""
        import sys
        from pytest_lens.analysis import stats
        interval = stats.mean_interval([0.2, 0.9, 0.4, 0.7], seed=42)
        assert interval is not None and interval.low < interval.high
        assert stats.holm([0.01, 0.2]) == [0.02, 0.2]
        print("scipy" in sys.modules, "scipy.stats" in sys.modules)
        """
    )
    result = pytester.run(sys.executable, str(script))
    assert result.ret == 0, result.stderr.str()
    assert result.outlines[-1] == "False False"


def test_bootstrap_is_reproducible_and_seed_dependent() -> None:
    values = list(np.random.default_rng(0).random(30))
    assert stats.mean_interval(values, seed=1) == stats.mean_interval(values, seed=1)
    assert stats.mean_interval(values, seed=1) != stats.mean_interval(values, seed=2)


def test_fewer_than_two_observations_have_no_interval() -> None:
    assert stats.mean_interval([0.5], seed=1) is None
    assert stats.mean_interval([0.5, 0.5], seed=1) == stats.Interval(0.5, 0.5)


def test_signed_rank_without_ties_is_scipys_exact_wilcoxon() -> None:
    diffs = [0.12, -0.03, 0.25, 0.07, 0.31, -0.11, 0.18, 0.02]
    for alternative in ("two-sided", "less", "greater"):
        ours = stats.signed_rank_test(diffs, alternative=alternative)
        reference = sps.wilcoxon(diffs, alternative=alternative, method="exact")
        assert ours.p_value == pytest.approx(reference.pvalue)
        assert ours.statistic == reference.statistic
        assert ours.method == "exact"


def _exhaustive_p_less(diffs: list[float]) -> float:
    """Reference: P(R+ <= observed R+) over all 2^n sign flips of the tie-averaged ranks."""
    d = np.array(diffs)
    ranks = sps.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    flips = np.array(list(itertools.product([0, 1], repeat=len(d))))
    r_plus = flips @ ranks
    return float(np.mean(r_plus <= observed + 1e-9))


def test_tied_differences_get_the_exact_sign_flip_distribution() -> None:
    diffs = [-0.121, -0.121, -0.061, -0.061, 0.061, -0.242, -0.121, 0.0, 0.0]
    result = stats.signed_rank_test(diffs, alternative="less")
    changed = [d for d in diffs if d != 0]
    assert result.n == 9 and result.n_changed == 7 and result.n_down == 6 and result.n_up == 1
    assert result.method == "exact (sign flips)"
    assert result.p_value == pytest.approx(_exhaustive_p_less(changed))


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_many_tied_differences_match_scipys_permutation_wilcoxon(alternative: str) -> None:
    diffs = np.random.default_rng(1).choice([-0.25, -0.121, 0.0, 0.121, 0.25], 40)
    changed = diffs[diffs != 0]
    ours = stats.signed_rank_test(list(diffs), alternative=alternative, seed=42)  # type: ignore[arg-type]
    method = sps.PermutationMethod(n_resamples=9999, rng=np.random.default_rng(42))
    reference = sps.wilcoxon(changed, alternative=alternative, method=method)
    assert ours.method == "permutation (9999 sign flips)"
    assert (ours.statistic, ours.p_value) == pytest.approx((reference.statistic, reference.pvalue))


def test_all_equal_differences_are_no_change_with_p_one() -> None:
    result = stats.signed_rank_test([0.0, 0.0, 0.0], alternative="less")
    assert (result.p_value, result.n_changed, result.effect_size, result.method) == (1.0, 0, 0.0, "no change")
    assert result.min_p == 1.0


def test_min_p_shows_when_a_sample_is_too_small_to_be_significant() -> None:
    four = stats.signed_rank_test([-0.1, -0.2, -0.3, -0.4], alternative="less")
    assert four.p_value == pytest.approx(1 / 16) == four.min_p
    five = stats.signed_rank_test([-0.1, -0.2, -0.3, -0.4, -0.5], alternative="less")
    assert five.p_value == pytest.approx(1 / 32)
    assert five.p_value < 0.05
    assert stats.signed_rank_test([-0.1, -0.2, -0.3], alternative="two-sided").min_p == pytest.approx(0.25)


def test_rank_biserial_matches_the_wilcoxon_rank_sum() -> None:
    diffs = [0.12, -0.03, 0.25, 0.07, 0.31, -0.11, 0.18, 0.02, 0.0]
    nonzero = [d for d in diffs if d]
    r_plus = sps.wilcoxon(nonzero, alternative="greater").statistic  # scipy's one-sided statistic is R+
    total = len(nonzero) * (len(nonzero) + 1) / 2
    assert stats.rank_biserial(diffs) == pytest.approx(2 * r_plus / total - 1)
    assert stats.rank_biserial([0.1, 0.2]) == 1.0
    assert stats.rank_biserial([-0.1, -0.2]) == -1.0
    assert stats.rank_biserial([0.0]) == 0.0


def test_non_finite_differences_are_rejected() -> None:
    with pytest.raises(ValueError, match="finite"):
        stats.signed_rank_test([0.1, float("nan")])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # Reference values from statsmodels 0.15.0: multipletests(raw, method="holm")[1].
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        ([0.2, 0.01, 0.01, 0.04, 0.5, 0.03], [0.4, 0.06, 0.06, 0.12, 0.5, 0.12]),
        ([0.9, 0.001, 0.02, 0.02, 0.3], [0.9, 0.005, 0.08, 0.08, 0.6]),
        ([0.5], [0.5]),
        ([], []),
    ],
)
def test_holm_matches_statsmodels(raw: list[float], expected: list[float]) -> None:
    assert stats.holm(raw) == pytest.approx(expected)


def test_holm_rejects_values_that_are_not_p_values() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        stats.holm([0.1, 1.5])


@PROPERTIES
@given(st.lists(scores, min_size=1, max_size=30))
def test_holm_never_lowers_a_p_value_nor_exceeds_one_nor_reorders(raw: list[float]) -> None:
    adjusted = stats.holm(raw)
    assert all(a >= p and a <= 1.0 for a, p in zip(adjusted, raw, strict=True))
    for (p1, a1), (p2, a2) in itertools.combinations(zip(raw, adjusted, strict=True), 2):
        if p1 < p2:
            assert a1 <= a2


@PROPERTIES
@given(st.lists(scores, min_size=2, max_size=40), st.integers(0, 2**32 - 1))
def test_the_bootstrap_interval_contains_the_mean(values: list[float], seed: int) -> None:
    interval = stats.mean_interval(values, seed=seed, resamples=500)
    assert interval is not None
    assert interval.contains(float(np.mean(values)))


@PROPERTIES
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=30))
def test_identical_scores_never_regress(values: list[float]) -> None:
    differences = [v - v for v in values]
    for alternative in ("less", "two-sided"):
        assert stats.signed_rank_test(differences, alternative=alternative).p_value == 1.0


def test_kendalls_w_equals_friedmans_chi_square_over_m_n_minus_one() -> None:
    # 4 scopes (raters) x 3 adapters (objects), with a tie in the last scope.
    matrix = [[0.81, 0.62, 0.10], [0.79, 0.70, 0.12], [0.60, 0.75, 0.05], [0.50, 0.50, 0.20]]
    found = stats.kendalls_w(matrix)
    friedman = sps.friedmanchisquare(*np.array(matrix).T)
    assert found is not None
    assert found.chi_square == pytest.approx(friedman.statistic)
    assert found.p_value == pytest.approx(friedman.pvalue)
    assert found.w == pytest.approx(friedman.statistic / (4 * (3 - 1)))


def test_kendalls_w_is_one_for_perfect_agreement_and_undefined_when_degenerate() -> None:
    agreement = stats.kendalls_w([[0.9, 0.5], [0.8, 0.1], [0.7, 0.3]])
    assert agreement is not None and agreement.w == pytest.approx(1.0)
    assert stats.kendalls_w([[0.9, 0.5]]) is None  # one scope
    assert stats.kendalls_w([[0.9], [0.8]]) is None  # one adapter
    assert stats.kendalls_w([[0.5, 0.5], [0.3, 0.3]]) is None  # every scope ties every adapter


def test_a_stratified_bootstrap_resamples_within_each_stratum_and_keeps_its_size() -> None:
    strata = ["a", "a", "b", "b", "b", "c"]
    members = {label: {i for i, s in enumerate(strata) if s == label} for label in set(strata)}
    seen: list[np.ndarray] = []

    def macro_mean(indices: np.ndarray) -> np.ndarray:
        seen.append(indices)
        values = np.array([0.0, 1.0, 0.0, 0.0, 1.0, 1.0])[indices]
        return np.stack([values[:, [i for i, s in enumerate(strata) if s == label]].mean(axis=1) for label in "abc"]).mean(axis=0)

    interval = stats.bootstrap_interval(len(strata), macro_mean, seed=3, resamples=500, strata=strata, batch=64)
    assert interval is not None
    rows = np.concatenate(seen)
    assert rows.shape == (500, 6)
    for position, label in enumerate(strata):  # every position draws from its own stratum only
        assert set(rows[:, position].tolist()) <= members[label]
    assert set(rows[:, 0].tolist()) == members["a"]  # and does resample it
    assert (rows[:, 5] == 5).all()  # a stratum of one is always itself
    # Same seed, same interval; the scheme is a percentile bootstrap of the statistic.
    assert stats.bootstrap_interval(len(strata), macro_mean, seed=3, resamples=500, strata=strata) == interval
    values = macro_mean(rows)
    assert interval == stats.Interval(*np.percentile(values, [2.5, 97.5]))


def test_a_stratified_bootstrap_of_groups_that_never_vary_has_no_width() -> None:
    # A mean over fixed groups where each group is all-pass or all-fail: a plain bootstrap can
    # drop a group and move the mean; within-stratum resampling cannot.
    strata = ["er"] * 4 + ["cas"] * 8 + ["abs"] * 3
    values = np.array([1.0] * 4 + [0.0] * 8 + [0.0] * 3)

    def macro_mean(indices: np.ndarray) -> np.ndarray:
        sample, labels = values[indices], np.array(strata)[indices]
        return np.array(
            [np.mean([row[lab == g].mean() for g in set(strata) if (lab == g).any()]) for row, lab in zip(sample, labels, strict=True)]
        )

    assert stats.bootstrap_interval(len(strata), macro_mean, seed=1, strata=strata) == stats.Interval(1 / 3, 1 / 3)
    plain = stats.bootstrap_interval(len(strata), macro_mean, seed=1)
    assert plain is not None and plain.high > 1 / 3


def test_strata_must_label_every_observation() -> None:
    with pytest.raises(ValueError, match="2 strata labels for 3 observations"):
        stats.bootstrap_interval(3, lambda i: i.mean(axis=-1), seed=0, strata=["a", "b"])


def _clustered_sample(rng: np.random.Generator, clusters: int = 8, size: int = 20, spread: float = 0.3) -> tuple[np.ndarray, list[int]]:
    """Scores whose scopes move together: a shared scope effect plus a little noise per question."""
    effects = rng.normal(0.0, spread, clusters)
    values = np.concatenate([0.5 + effect + rng.normal(0.0, 0.05, size) for effect in effects])
    return values, [c for c in range(clusters) for _ in range(size)]


def test_clustered_interval_is_wider_when_scopes_move_together() -> None:
    values, labels = _clustered_sample(np.random.default_rng(3))
    plain = stats.mean_interval(values, seed=1)
    clustered = stats.mean_interval(values, seed=1, clusters=labels)
    assert plain is not None and clustered is not None
    assert clustered.high - clustered.low > 3 * (plain.high - plain.low)
    assert clustered.contains(float(values.mean()))


def test_two_stage_counts_the_within_scope_variance_twice() -> None:
    # Scopes that do not differ at all: resampling whole scopes gives about the plain width, resampling their
    # questions again gives about sqrt(2) times it (the within-scope variance counted twice).
    rng = np.random.default_rng(5)
    values, labels = rng.random(240), [c for c in range(12) for _ in range(20)]
    plain = stats.mean_bootstrap(values, seed=1)
    whole = stats.mean_bootstrap(values, seed=1, clusters=labels)
    staged = stats.mean_bootstrap(values, seed=1, clusters=labels, two_stage=True)
    assert plain is not None and whole is not None and staged is not None
    assert 0.7 < whole.se / plain.se < 1.3
    assert 1.25 < staged.se / plain.se < 1.6


def test_clustered_resamples_ignore_their_padding_with_unequal_scopes() -> None:
    # Scope a holds one question scoring 1.0, scope b nine scoring 0.0: every resampled mean is a mean of real
    # questions (0, 0.1, 0.5, 1 ... never below 0 or above 1, and the padding index never counts as a 0).
    values, labels = [1.0, *[0.0] * 9], ["a", *["b"] * 9]
    found = stats.mean_bootstrap(values, seed=0, resamples=500, clusters=labels)
    assert found is not None
    assert set(np.round(found.values, 6)) == {0.0, 0.1, 1.0}


def test_cluster_labels_must_match_the_observations() -> None:
    with pytest.raises(ValueError, match="3 cluster labels for 2 observations"):
        stats.mean_interval([0.1, 0.2], seed=0, clusters=[1, 2, 3])


def test_bootstrap_p_of_a_drop_and_of_no_change() -> None:
    drop = stats.mean_bootstrap([-0.1] * 15 + [0.05] * 5, seed=0)
    assert drop is not None
    assert stats.bootstrap_p(drop, float(np.mean([-0.1] * 15 + [0.05] * 5)), "less") < 0.01
    assert stats.bootstrap_p(drop, float(np.mean([-0.1] * 15 + [0.05] * 5)), "greater") > 0.99
    nothing = stats.mean_bootstrap([0.0] * 10, seed=0)
    assert nothing is not None and stats.bootstrap_p(nothing, 0.0, "less") == 1.0


def test_minimum_detectable_effect_is_millers_formula() -> None:
    z = sps.norm.ppf
    assert stats.minimum_detectable_effect(0.01, alpha=0.05) == pytest.approx((z(0.95) + z(0.8)) * 0.01)
    assert stats.minimum_detectable_effect(0.01, alpha=0.05, two_sided=True) == pytest.approx((z(0.975) + z(0.8)) * 0.01)
    assert stats.minimum_detectable_effect(0.02, alpha=0.01, power=0.9) == pytest.approx((z(0.99) + z(0.9)) * 0.02)


def test_plain_interval_is_unchanged_by_the_bootstrap_refactor() -> None:
    # The values scipy.stats.bootstrap gives (percentile, same seed): bootstrap() keeps its stream.
    data = np.array([0.758, 0.879, 1.0, 0.758, 0.919, 0.838, 0.758, 0.879])
    ours = stats.mean_interval(data, seed=7, resamples=999)
    theirs = sps.bootstrap((data,), np.mean, method="percentile", n_resamples=999, rng=np.random.default_rng(7), vectorized=True)
    assert ours == stats.Interval(float(theirs.confidence_interval.low), float(theirs.confidence_interval.high))
