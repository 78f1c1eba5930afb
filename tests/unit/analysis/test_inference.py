"""Student-t inference against scipy: the t distribution, the jackknife's standard errors, the MDE, the zero-spread rule."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from pytest_lens.analysis.inference import StudentT, jackknife, minimum_detectable_effect, t_cdf, t_quantile


def mean_of(values: np.ndarray):  # type: ignore[no-untyped-def]
    """The mean over rows of indices padded with len(values), the padding ignored (as every run statistic is)."""
    data, real = np.append(values, 0.0), np.append(np.ones(len(values)), 0.0)
    return lambda indices: data[indices].sum(axis=-1) / real[indices].sum(axis=-1)


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 23, 143, 719, 5000, 2.5])
def test_the_t_distribution_is_scipys(df: float) -> None:
    for t in (-60.0, -8.0, -3.1, -1.0, -0.2, 0.0, 0.3, 1.7, 2.5, 9.0, 40.0):
        expected = special.stdtr(df, t)
        assert t_cdf(t, df) == pytest.approx(expected, rel=1e-10, abs=1e-15)
    for p in (1e-12, 1e-6, 0.001, 0.025, 0.05, 0.2, 0.5, 0.8, 0.95, 0.975, 0.999, 1 - 1e-9):
        assert t_quantile(p, df) == pytest.approx(special.stdtrit(df, p), rel=1e-10)


def test_a_quantile_needs_a_probability_and_degrees_of_freedom() -> None:
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 5)
    with pytest.raises(ValueError, match="df > 0"):
        t_quantile(0.9, 0)


def test_the_jackknife_of_a_mean_is_the_textbook_standard_error() -> None:
    values = np.random.default_rng(1).random(30)
    found = jackknife(30, mean_of(values))
    assert found is not None and (found.df, found.units) == (29, 30)
    assert found.estimate == pytest.approx(values.mean())
    assert found.se == pytest.approx(stats.sem(values), rel=1e-12)
    assert found.interval(0.95) == pytest.approx(stats.t.interval(0.95, 29, values.mean(), stats.sem(values)), rel=1e-9)


def test_the_jackknife_over_equal_scopes_is_the_standard_error_of_their_means() -> None:
    values = np.random.default_rng(2).random(36)
    labels = [i // 6 for i in range(36)]
    found = jackknife(36, mean_of(values), units=labels)
    per_scope = values.reshape(6, 6).mean(axis=1)
    assert found is not None and (found.df, found.units) == (5, 6)
    assert found.se == pytest.approx(stats.sem(per_scope), rel=1e-12)
    assert found.p_value("two-sided") == pytest.approx(stats.ttest_1samp(per_scope, 0.0).pvalue, rel=1e-9)


def test_unequal_scopes_give_the_jackknife_ratio_variance() -> None:
    # CV3 of a ratio of totals: (G - 1) / G * sum((leave-one-out - their mean)^2), computed by hand.
    values = np.array([0.1, 0.4, 0.9, 0.2, 0.3, 0.8, 0.5, 0.6])
    labels = ["a", "a", "a", "b", "c", "c", "d", "d"]
    found = jackknife(8, mean_of(values), units=labels)
    leave_out = [values[[i for i, lab in enumerate(labels) if lab != g]].mean() for g in "abcd"]
    expected = np.sqrt(3 / 4 * np.sum((np.array(leave_out) - np.mean(leave_out)) ** 2))
    assert found is not None and found.se == pytest.approx(expected) and found.df == 3


def test_strata_give_the_stratified_jackknife() -> None:
    # A mean of two stratum means: JKn sums (n_h - 1) / n_h times each stratum's spread of leave-one-out values,
    # which for a stratum mean is its own standard error; df = units - strata.
    values = np.array([0.0, 1.0, 1.0, 0.2, 0.4, 0.6, 0.8])
    strata = ["x"] * 3 + ["y"] * 4

    def macro(indices: np.ndarray) -> np.ndarray:
        data = np.append(values, np.nan)[indices]
        x = np.nanmean(np.where(np.isin(indices, [0, 1, 2]), data, np.nan), axis=-1)
        y = np.nanmean(np.where(np.isin(indices, [3, 4, 5, 6]), data, np.nan), axis=-1)
        return (x + y) / 2

    found = jackknife(7, macro, strata=strata)
    expected = np.sqrt((stats.sem(values[:3]) ** 2 + stats.sem(values[3:]) ** 2) / 4)
    assert found is not None and found.df == 5 and found.se == pytest.approx(expected)
    with pytest.raises(ValueError, match="every unit must lie in one stratum"):
        jackknife(7, macro, units=[0, 0, 0, 0, 1, 1, 1], strata=strata)


def test_too_few_units_or_an_undefined_statistic_give_no_inference() -> None:
    assert jackknife(1, mean_of(np.array([0.5]))) is None
    assert jackknife(4, mean_of(np.array([0.1, 0.2, 0.3, 0.4])), units=["a"] * 4) is None
    assert jackknife(3, lambda indices: np.where((indices == 0).any(axis=-1), 1.0, np.nan)) is None
    with pytest.raises(ValueError, match="3 unit labels for 2 observations"):
        jackknife(2, mean_of(np.array([0.1, 0.2])), units=[1, 2, 3])


def test_no_spread_gives_the_exact_sign_flip_p_value() -> None:
    # Every unit fell by the same amount: no t statistic, and P(all G signs negative) = 2**-G.
    drop = jackknife(6, mean_of(np.full(6, -0.25)))
    assert drop is not None and drop.se == 0.0
    assert drop.p_value("less") == 0.5**6 and drop.p_value("greater") == 1.0 and drop.p_value("two-sided") == 2 * 0.5**6
    nothing = StudentT(estimate=0.0, se=0.0, df=5, units=6)
    assert nothing.p_value("less") == nothing.p_value("two-sided") == 1.0


def test_the_mde_is_blooms_t_multiplier_and_millers_normal_one_without_df() -> None:
    assert minimum_detectable_effect(0.01, alpha=0.05, df=5) == pytest.approx((stats.t.ppf(0.95, 5) + stats.t.ppf(0.8, 5)) * 0.01)
    assert minimum_detectable_effect(0.01, alpha=0.05, two_sided=True, df=9) == pytest.approx(
        (stats.t.ppf(0.975, 9) + stats.t.ppf(0.8, 9)) * 0.01
    )
    assert minimum_detectable_effect(0.02, alpha=0.01, power=0.9) == pytest.approx((stats.norm.ppf(0.99) + stats.norm.ppf(0.9)) * 0.02)
    found = StudentT(estimate=-0.1, se=0.02, df=11, units=12)
    assert found.mde(0.05) == pytest.approx(minimum_detectable_effect(0.02, alpha=0.05, df=11))
    assert found.lower_bound(0.05) == pytest.approx(-0.1 - stats.t.ppf(0.95, 11) * 0.02)
