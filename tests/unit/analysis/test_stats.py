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


def test_a_run_that_only_needs_intervals_never_imports_scipy(pytester: pytest.Pytester) -> None:
    script = pytester.makepyfile(
        check="""
        import sys
        from pytest_lens.analysis import stats
        from pytest_lens.analysis.run import analyze_run
        from pytest_lens.records.results import QuestionResult
        questions = [
            QuestionResult(
                adapter="bm25", scope_id="s1", checkpoint=1, question_id=f"q{i}", question_type="t", category="c",
                budget="16k", agent="offline", prompt="?", metrics={"m": v},
            )
            for i, v in enumerate([0.2, 0.9, 0.4, 0.7])
        ]
        found = analyze_run(questions, {"m": 1.0}, (), seed=42)
        interval = found.adapters["bm25"].composite
        assert interval.low is not None and interval.high is not None and interval.low < interval.high
        assert stats.holm([0.01, 0.2]) == [0.02, 0.2]
        print("scipy" in sys.modules, "scipy.stats" in sys.modules)
        """
    )
    result = pytester.run(sys.executable, str(script))
    assert result.ret == 0, result.stderr.str()
    assert result.outlines[-1] == "False False"


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


def _mean(values: np.ndarray):  # type: ignore[no-untyped-def]
    """The mean over rows of indices padded with len(values) (the padding ignored), as the run's statistics are."""
    data, real = np.append(values, 0.0), np.append(np.ones(len(values)), 0.0)
    return lambda indices: data[indices].sum(axis=-1) / real[indices].sum(axis=-1)


def test_two_stage_counts_the_within_scope_variance_twice() -> None:
    # Scopes that do not differ at all: resampling whole scopes gives about the plain standard error, resampling
    # their questions again gives about sqrt(2) times it (the within-scope variance counted twice).
    rng = np.random.default_rng(5)
    values, labels = rng.random(240), [c for c in range(12) for _ in range(20)]
    plain = values.std(ddof=1) / np.sqrt(values.size)
    whole = stats.bootstrap(240, _mean(values), seed=1, clusters=labels)
    staged = stats.bootstrap(240, _mean(values), seed=1, clusters=labels, two_stage=True)
    assert whole is not None and staged is not None
    assert 0.7 < whole.se / plain < 1.3
    assert 1.15 < staged.se / plain < 1.6 and staged.se > 1.2 * whole.se


def test_clustered_resamples_ignore_their_padding_with_unequal_scopes() -> None:
    # Scope a holds one question scoring 1.0, scope b nine scoring 0.0: every resampled mean is a mean of real
    # questions (0, 0.1, 0.5, 1 ... never below 0 or above 1, and the padding index never counts as a 0).
    values, labels = np.array([1.0, *[0.0] * 9]), ["a", *["b"] * 9]
    found = stats.bootstrap(10, _mean(values), seed=0, resamples=500, clusters=labels)
    assert found is not None
    assert set(np.round(found.values, 6)) == {0.0, 0.1, 1.0}
    staged = stats.bootstrap(10, _mean(values), seed=0, resamples=500, clusters=labels, two_stage=True)
    assert staged is not None and staged.values.min() >= 0.0 and staged.values.max() <= 1.0


def test_cluster_labels_must_match_the_observations() -> None:
    with pytest.raises(ValueError, match="3 cluster labels for 2 observations"):
        stats.bootstrap(2, _mean(np.array([0.1, 0.2])), seed=0, clusters=[1, 2, 3])
