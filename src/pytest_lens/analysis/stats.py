"""Statistics over plain numbers: the two-stage bootstrap, Wilcoxon signed-rank, effect size, Holm, Kendall's W.

Intervals, paired tests, bounds and minimum detectable effects are Student-t inference on a
jackknife standard error (:mod:`pytest_lens.analysis.inference`); this module holds what is beside
them. Every test comes from scipy and every resampling from numpy (each imported on first use, so
loading the plugin never pays for them, and a run that needs no signed-rank test never imports
scipy); this module chooses their options, documents the choices, and shapes the results. Nothing
here knows about questions or adapters.

Choices, stated once:

- **Bootstrap** (``--lens-bootstrap=two-stage`` only): with ``clusters`` (one label per observation:
  the scope) each resample draws as many clusters as there are, with replacement, and keeps each
  drawn cluster's observations; with ``two_stage`` the observations of each drawn cluster are
  resampled too, with replacement. That counts the within-cluster variance twice (once in the spread
  of the drawn clusters' means, once more in the second stage), so its standard error is larger than
  it need be, by up to ``sqrt(2)`` when scopes hardly differ: the deliberately cautious mode. Its
  standard error, rescaled by ``sqrt(G / (G - 1))`` (the plug-in bootstrap variance is ``(G - 1) / G``
  of the unbiased one), takes the jackknife's place with the same t(G - 1) reference. Seeded with
  ``numpy.random.default_rng(seed)``. Rows of a clustered resample differ in length: they are padded
  with the index ``n`` (one past the last observation), which a statistic given clusters must ignore.
- **Wilcoxon signed-rank** (``scipy.stats.wilcoxon``) on paired differences, reported beside the
  gate's test as a second line: it answers how many questions moved which way, not by how much, so
  it is never the test of a mean difference (a change that lowers a few questions a lot and raises
  many a little lowers the mean while most signed ranks rise). Zero differences are dropped
  (Wilcoxon's own convention, scipy's ``zero_method="wilcox"``). Scores of a deterministic agent tie
  a lot, and with ties scipy's exact distribution no longer applies, so tied samples of up to 50
  changes get a seeded permutation test over sign flips (``scipy.stats.permutation_test`` with a
  vectorised rank-sum statistic: the same p-values as ``wilcoxon(method=PermutationMethod(...))``,
  about fifty times faster; exhaustive, hence exact, up to 13 changes); larger samples use scipy's
  tie-corrected normal approximation. With *n* changed questions the smallest attainable one-sided
  p-value is ``2**-n`` (:attr:`SignedRankResult.min_p`).
- **Rank-biserial correlation** (matched pairs, Kerby's simple difference formula):
  ``(R+ - R-) / (R+ + R-)`` over the ranks of the nonzero absolute differences, from
  ``scipy.stats.rankdata``; +1 means every change went up.
- **Holm** step-down adjustment (scipy has none; its ``false_discovery_control`` is
  Benjamini-Hochberg), checked in the tests against statsmodels' ``multipletests``. It holds the
  family-wise error at alpha whatever the tests' dependence, given tests that hold their own level.
- **Kendall's W** with the tie correction, through ``scipy.stats.rankdata``; its
  significance is Friedman's chi-square ``m (n - 1) W`` with ``n - 1`` degrees of freedom.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_lens.analysis.inference import Alternative

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "Alternative",
    "Bootstrap",
    "Concordance",
    "Interval",
    "SignedRankResult",
    "bootstrap",
    "holm",
    "kendalls_w",
    "rank_biserial",
    "signed_rank_test",
]

#: Bootstrap resamples (``--lens-bootstrap=two-stage``): the Monte Carlo error of its standard error is then about 1.6%.
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
#: Index cells one batch of clustered resamples holds (rows x their padded width): about 32 MB of indices.
_BATCH_CELLS = 1 << 22
#: Above this many changed questions scipy's normal approximation is used even with ties.
_PERMUTATION_MAX_N = 50
_PERMUTATION_RESAMPLES = 9999


@dataclass(frozen=True)
class Interval:
    """A confidence interval."""

    low: float
    high: float

    def contains(self, value: float, tolerance: float = 1e-9) -> bool:
        """``low <= value <= high`` up to floating-point noise."""
        return self.low - tolerance <= value <= self.high + tolerance


@dataclass(frozen=True)
class Bootstrap:
    """The resampled values of a statistic (one per resample)."""

    values: NDArray[np.float64]

    @property
    def se(self) -> float:
        """The bootstrap standard error (the resampled values' standard deviation)."""
        return float(self.values.std(ddof=1)) if self.values.size > 1 else 0.0


def bootstrap(
    n: int,
    statistic: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    *,
    clusters: Sequence[Hashable],
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    batch: int | None = None,
    two_stage: bool = False,
) -> Bootstrap | None:
    """The statistic over resamples of whole ``clusters`` (``two_stage``: then of their observations too; see the notes).

    ``statistic`` receives rows of resampled observation indices, padded with ``n``, and returns one
    value per row. ``None`` when ``n < 2``.
    """
    if n < 2:
        return None
    return Bootstrap(_clustered_values(n, statistic, clusters, seed=seed, resamples=resamples, batch=batch, two_stage=two_stage))


def _clustered_values(
    n: int,
    statistic: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    clusters: Sequence[Hashable],
    *,
    seed: int,
    resamples: int,
    batch: int | None,
    two_stage: bool,
) -> NDArray[np.float64]:
    import numpy as np

    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} observations")
    order = {label: i for i, label in enumerate(dict.fromkeys(clusters))}
    codes = np.array([order[label] for label in clusters])
    sizes = np.bincount(codes, minlength=len(order))
    members = np.split(np.argsort(codes, kind="stable"), np.cumsum(sizes)[:-1])  # each cluster's indices, ascending
    width = int(sizes.max()) * len(members)
    rng = np.random.default_rng(seed)
    # Rows of resampled indices are built a batch at a time, so a run of 10^5 questions holds a few of them, not 2,000.
    step = batch or max(1, min(resamples, _BATCH_CELLS // max(width, 1)))
    values = []
    # Each cluster's members in a row of their own, padded with n: stage one takes whole rows of it.
    table = np.full((len(members), int(sizes.max())), n, dtype=np.intp)
    for code, member in enumerate(members):
        table[code, : member.size] = member
    within = np.arange(table.shape[1])
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        chosen = rng.integers(0, len(members), size=(rows, len(members)))
        # The drawn clusters' places in the row, in the order drawn, packed from the left; the rest is padding.
        drawn = sizes[chosen]
        starts = np.cumsum(drawn, axis=1) - drawn
        keep = within[None, None, :] < drawn[:, :, None]
        row_of = np.broadcast_to(np.arange(rows)[:, None, None], keep.shape)[keep]
        columns = (starts[:, :, None] + within[None, None, :])[keep]
        if two_stage:  # each place a draw with replacement from its cluster's own observations
            codes = np.broadcast_to(chosen[:, :, None], keep.shape)[keep]
            picked = table[codes, rng.integers(0, sizes[codes])]
        else:  # the drawn cluster's observations themselves
            picked = table[chosen][keep]
        indices = np.full((rows, width), n, dtype=np.intp)
        indices[row_of, columns] = picked
        values.append(np.asarray(statistic(indices), dtype=np.float64))
    return np.concatenate(values)


@dataclass(frozen=True)
class SignedRankResult:
    """A Wilcoxon signed-rank test of paired differences."""

    n: int
    n_changed: int
    n_up: int
    n_down: int
    statistic: float | None
    p_value: float
    effect_size: float
    method: str
    alternative: Alternative

    @property
    def min_p(self) -> float:
        """Smallest p-value this many changed pairs could give (exact test, one-sided; doubled if two-sided)."""
        if self.n_changed == 0:
            return 1.0
        one_sided = 0.5**self.n_changed
        return min(1.0, 2 * one_sided) if self.alternative == "two-sided" else one_sided


def rank_biserial(differences: Sequence[float]) -> float:
    """Matched-pairs rank-biserial correlation of nonzero ``differences`` (0.0 when there are none)."""
    import numpy as np
    from scipy import stats

    d = np.asarray(differences, dtype=np.float64)
    d = d[d != 0]
    if d.size == 0:
        return 0.0
    ranks = stats.rankdata(np.abs(d))
    up, down = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    return (up - down) / (up + down)


def signed_rank_test(differences: Sequence[float], *, alternative: Alternative = "two-sided", seed: int = 42) -> SignedRankResult:
    """Wilcoxon signed-rank test that the differences are centred on zero (see the module notes).

    ``alternative="less"`` asks whether the differences are shifted below zero (a regression when
    the differences are ``new - old``). No changed pair gives ``p = 1``.
    """
    import numpy as np
    from scipy import stats

    d = np.asarray(differences, dtype=np.float64)
    if not np.all(np.isfinite(d)):
        raise ValueError("differences must be finite numbers")
    changed = d[d != 0]
    n_up, n_down = int((changed > 0).sum()), int((changed < 0).sum())
    if changed.size == 0:
        return SignedRankResult(int(d.size), 0, 0, 0, None, 1.0, 0.0, "no change", alternative)
    ties = np.unique(np.abs(changed)).size < changed.size
    if ties and changed.size <= _PERMUTATION_MAX_N:
        statistic, p_value = _sign_flip_test(changed, alternative, seed)
        label = "exact (sign flips)" if 2**changed.size <= _PERMUTATION_RESAMPLES else f"permutation ({_PERMUTATION_RESAMPLES} sign flips)"
    else:
        result = stats.wilcoxon(changed, alternative=alternative, method="auto")
        statistic, p_value = float(result.statistic), float(result.pvalue)
        label = "exact" if changed.size <= _PERMUTATION_MAX_N else "normal approximation"
    return SignedRankResult(
        n=int(d.size),
        n_changed=int(changed.size),
        n_up=n_up,
        n_down=n_down,
        statistic=statistic,
        p_value=min(1.0, p_value),
        effect_size=rank_biserial(changed),
        method=label,
        alternative=alternative,
    )


def _sign_flip_test(changed: NDArray[np.float64], alternative: Alternative, seed: int) -> tuple[float, float]:
    """Signed-rank test by ``scipy.stats.permutation_test`` over sign flips (exhaustive when 2**n fits the budget).

    The statistic is R+, the rank sum of the positive differences, with tie-averaged ranks of
    ``|d|`` (sign flips leave them unchanged). Returns scipy's wilcoxon statistic convention:
    R+ for one-sided tests, min(R+, R-) for two-sided.
    """
    import numpy as np
    from scipy import stats

    ranks = stats.rankdata(np.abs(changed))

    def positive_rank_sum(sample: NDArray[np.float64], axis: int = -1) -> NDArray[np.float64]:
        total: NDArray[np.float64] = ((sample > 0) * ranks).sum(axis=axis)
        return total

    result = stats.permutation_test(
        (changed,),
        positive_rank_sum,
        permutation_type="samples",
        vectorized=True,
        n_resamples=_PERMUTATION_RESAMPLES,
        alternative=alternative,
        rng=np.random.default_rng(seed),
    )
    r_plus = float(result.statistic)
    statistic = min(r_plus, float(ranks.sum()) - r_plus) if alternative == "two-sided" else r_plus
    return statistic, float(result.pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (never below the raw ones, never above 1)."""
    import numpy as np

    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return []
    if np.any((p < 0) | (p > 1) | np.isnan(p)):
        raise ValueError("p-values must lie in [0, 1]")
    order = np.argsort(p, kind="stable")
    # Step down: the k-th smallest p is multiplied by (m - k), then made monotone.
    scaled = (p.size - np.arange(p.size)) * p[order]
    adjusted = np.minimum(1.0, np.maximum.accumulate(scaled))
    out = np.empty_like(p)
    out[order] = adjusted
    return [float(value) for value in out]


@dataclass(frozen=True)
class Concordance:
    """Kendall's coefficient of concordance of several raters (scopes) ranking the same objects (adapters)."""

    w: float
    chi_square: float
    p_value: float
    raters: int
    objects: int


def kendalls_w(scores: Sequence[Sequence[float]]) -> Concordance | None:
    """Kendall's W (tie-corrected) of a raters x objects score matrix; ``None`` when undefined.

    Undefined with fewer than two raters or two objects, or when every rater ties every object.
    """
    import numpy as np
    from scipy import stats

    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 2:
        return None
    m, n = matrix.shape
    ranks = stats.rankdata(matrix, axis=1)
    rank_sums = ranks.sum(axis=0)
    spread = float(((rank_sums - rank_sums.mean()) ** 2).sum())
    ties = 0.0
    for row in ranks:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts**3 - counts).sum())
    denominator = m**2 * (n**3 - n) - m * ties
    if denominator <= 0:
        return None
    w = 12.0 * spread / denominator
    chi_square = m * (n - 1) * w
    return Concordance(w=w, chi_square=chi_square, p_value=float(stats.chi2.sf(chi_square, n - 1)), raters=m, objects=n)
