"""Statistics over plain numbers: bootstrap intervals, Wilcoxon signed-rank, effect size, Holm, Kendall's W.

Every test comes from scipy and every resampling from numpy (each imported on first
use, so loading the plugin never pays for them, and a run that needs no test never
imports scipy); this module chooses their options, documents the choices, and shapes
the results. Nothing here knows about questions or adapters.

Choices, stated once:

- **Bootstrap**: the percentile method (the LENS paper's scripts use the percentile
  interval too; BCa is undefined for the degenerate, all-equal samples a deterministic
  agent often produces), seeded with ``numpy.random.default_rng(seed)``. It is
  ``scipy.stats.bootstrap(..., method="percentile", vectorized=True)`` done with numpy
  alone: the same resampled indices drawn in the same order from the same generator,
  and scipy's ``quantile`` (Hyndman and Fan's type 7) evaluated with the same
  arithmetic, so the intervals are scipy's to the last bit (a test compares them)
  while a run that only needs intervals never imports scipy (importing scipy.stats
  was most of a one-scope run's statistics phase: see ``benchmarks/overhead.py``). Fewer than two observations have no interval.
- **Wilcoxon signed-rank** (``scipy.stats.wilcoxon``) on paired differences. Zero
  differences are dropped (Wilcoxon's own convention, scipy's ``zero_method="wilcox"``):
  a question that scored the same in both runs says nothing about the direction of a
  change. Scores of a deterministic agent tie a lot, and with ties scipy's exact
  distribution no longer applies, so tied samples of up to 50 changes get a seeded
  permutation test over sign flips (``scipy.stats.permutation_test`` with a vectorised
  rank-sum statistic: the same p-values as ``wilcoxon(method=PermutationMethod(...))``,
  about fifty times faster; exhaustive, hence exact, up to 13 changes); larger samples
  use scipy's tie-corrected normal approximation. With *n* changed questions
  the smallest attainable one-sided p-value is ``2**-n``: fewer than five changes can
  never reach p < 0.05, which :attr:`SignedRankResult.min_p` makes visible.
- **Rank-biserial correlation** (matched pairs, Kerby's simple difference formula):
  ``(R+ - R-) / (R+ + R-)`` over the ranks of the nonzero absolute differences, from
  ``scipy.stats.rankdata``; +1 means every change went up.
- **Cluster bootstrap**: with ``clusters`` (one label per observation: the scope, or the
  conversation) each resample draws as many clusters as there are, with replacement, and
  keeps each drawn cluster's observations. Questions of one scope share a stream and its
  checkpoints, so their scores move together; resampling questions as if independent then
  makes intervals too narrow (``benchmarks/clustered_coverage.py`` measures it). With
  ``two_stage`` the observations of each drawn cluster are resampled too, with replacement:
  that counts the within-cluster variance twice (once in the spread of the drawn clusters'
  means, once more in the second stage), so its intervals are wider than they need be,
  by up to ``sqrt(2)`` when scopes hardly differ (the bundled scopes: 1.43 times). Rows of a clustered resample differ in
  length: they are padded with the index ``n`` (one past the last observation), which a
  statistic given clusters must ignore (:data:`PAD_NOTE`). Its paired test is the bootstrap's
  own: the share of resampled deltas, shifted to the null, at least as extreme as the one
  observed (:func:`bootstrap_p`).
- **Minimum detectable effect** (Miller 2024, "Adding Error Bars to Evals"): the smallest
  true change a test at level alpha detects with probability ``power``,
  ``(z_(1-alpha) + z_power) * SE`` one-sided (``z_(1-alpha/2)`` two-sided), with ``SE`` the
  bootstrap standard error of the delta (so clustered where the resampling is).
- **Holm** step-down adjustment (scipy has none; its ``false_discovery_control`` is
  Benjamini-Hochberg), checked in the tests against statsmodels' ``multipletests``.
- **Kendall's W** with the tie correction, through ``scipy.stats.rankdata``; its
  significance is Friedman's chi-square ``m (n - 1) W`` with ``n - 1`` degrees of freedom.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

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
    "bootstrap_interval",
    "bootstrap_p",
    "holm",
    "kendalls_w",
    "mean_bootstrap",
    "mean_interval",
    "minimum_detectable_effect",
    "rank_biserial",
    "signed_rank_test",
]

#: Bootstrap resamples. 2,000 keeps a 720-question run's statistics well under a second;
#: the Monte Carlo error of a 95% percentile bound is then about a tenth of the CI half-width.
DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
#: Above this many changed questions scipy's normal approximation is used even with ties.
_PERMUTATION_MAX_N = 50
_PERMUTATION_RESAMPLES = 9999

Alternative = Literal["two-sided", "less", "greater"]


#: How a statistic given ``clusters`` must treat its indices.
PAD_NOTE = "rows are padded with the index n (one past the last observation), which the statistic ignores"
#: The power every minimum detectable effect is stated at.
DEFAULT_POWER = 0.8


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
    """The resampled values of a statistic (one per resample), with what interval, SE and tests are read from them."""

    values: NDArray[np.float64]

    def interval(self, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
        """The two-sided percentile interval."""
        import numpy as np

        tail = (1 - confidence) / 2
        low, high = _linear_quantiles(self.values, np.asarray([tail, 1 - tail], dtype=np.float64))
        return Interval(float(low), float(high))

    def lower_bound(self, alpha: float) -> float:
        """The one-sided ``1 - alpha`` lower percentile bound (the ``alpha`` quantile)."""
        import numpy as np

        return float(_linear_quantiles(self.values, np.asarray([alpha], dtype=np.float64))[0])

    @property
    def se(self) -> float:
        """The bootstrap standard error (the resampled values' standard deviation)."""
        return float(self.values.std(ddof=1)) if self.values.size > 1 else 0.0


def bootstrap(
    n: int,
    statistic: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    batch: int | None = None,
    strata: Sequence[Hashable] | None = None,
    clusters: Sequence[Hashable] | None = None,
    two_stage: bool = False,
) -> Bootstrap | None:
    """The resampled values behind :func:`bootstrap_interval` (same arguments; ``clusters``: see the module notes)."""
    if n < 2:
        return None
    import numpy as np

    if clusters is not None:
        return Bootstrap(_clustered_values(n, statistic, clusters, seed=seed, resamples=resamples, batch=batch, two_stage=two_stage))
    if strata is not None:
        return Bootstrap(_stratified_values(n, statistic, strata, seed=seed, resamples=resamples, batch=batch))
    rng = np.random.default_rng(seed)
    step = batch or resamples
    values = []
    for start in range(0, resamples, step):
        # One draw of (rows, n) per batch, in order: scipy.stats.bootstrap's stream (a different
        # batching would draw the same numbers into different rows).
        indices = rng.integers(0, n, size=(min(step, resamples - start), n), dtype=np.int64)
        values.append(np.asarray(statistic(indices.astype(np.intp, copy=False)), dtype=np.float64))
    return Bootstrap(np.concatenate(values))


def cluster_count(clusters: Sequence[Hashable]) -> int:
    """How many distinct clusters ``clusters`` labels."""
    return len(set(clusters))


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
    step = batch or resamples
    values = []
    # Each cluster's members in a row of their own, padded with n: stage one takes whole rows of it.
    table = np.full((len(members), int(sizes.max())), n, dtype=np.intp)
    for code, member in enumerate(members):
        table[code, : member.size] = member
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        chosen = rng.integers(0, len(members), size=(rows, len(members)))
        indices = np.full((rows, width), n, dtype=np.intp)
        if not two_stage:
            # The drawn clusters' questions in the order drawn, packed from the left (as stage two's loop writes them).
            drawn = sizes[chosen]
            starts = np.cumsum(drawn, axis=1) - drawn
            within = np.arange(table.shape[1])
            keep = within[None, None, :] < drawn[:, :, None]
            row_of = np.broadcast_to(np.arange(rows)[:, None, None], keep.shape)
            indices[row_of[keep], (starts[:, :, None] + within[None, None, :])[keep]] = table[chosen][keep]
            values.append(np.asarray(statistic(indices), dtype=np.float64))
            continue
        # Stage two: each drawn cluster's own size of draws with replacement, written into the row from the left;
        # the rest of the row stays padding. (The draws' order is the random stream's: kept as it was.)
        offsets = np.zeros(rows, dtype=np.intp)
        for slot in range(len(members)):
            for code in range(len(members)):
                picked = np.flatnonzero(chosen[:, slot] == code)
                if picked.size == 0:
                    continue
                size = int(sizes[code])
                draws = members[code][rng.integers(0, size, size=(picked.size, size))]
                columns = offsets[picked][:, None] + np.arange(size)[None, :]
                indices[picked[:, None], columns] = draws
                offsets[picked] += size
        values.append(np.asarray(statistic(indices), dtype=np.float64))
    return np.concatenate(values)


def bootstrap_p(resampled: Bootstrap, observed: float, alternative: Alternative) -> float:
    """Bootstrap p-value of ``observed`` (a delta) against zero: the resampled deltas shifted to the null.

    One-sided ``less``: the share of ``resampled - observed`` at or below ``observed``, with the usual
    ``(count + 1) / (resamples + 1)``; ``two-sided`` doubles the smaller tail. A delta of zero gives 1.
    """
    import numpy as np

    null = resampled.values - observed
    size = null.size
    below = (int(np.sum(null <= observed + 1e-12)) + 1) / (size + 1)
    above = (int(np.sum(null >= observed - 1e-12)) + 1) / (size + 1)
    if alternative == "less":
        return min(1.0, below)
    if alternative == "greater":
        return min(1.0, above)
    return min(1.0, 2 * min(below, above))


def minimum_detectable_effect(se: float, *, alpha: float, power: float = DEFAULT_POWER, two_sided: bool = False) -> float:
    """The smallest true change a level-``alpha`` test detects with probability ``power``, given the delta's standard error."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf
    return (z(1 - alpha / 2 if two_sided else 1 - alpha) + z(power)) * se


def bootstrap_interval(
    n: int,
    statistic: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    batch: int | None = None,
    strata: Sequence[Hashable] | None = None,
    clusters: Sequence[Hashable] | None = None,
    two_stage: bool = False,
) -> Interval | None:
    """Percentile bootstrap interval of a statistic of ``n`` observations, resampled with replacement.

    ``statistic`` receives resampled *indices* with shape ``(batch, n)`` and returns one value per
    row, so any statistic of the observations (a composite recomputed from metric means, a paired
    difference of two composites) is resampled as a whole. ``None`` when ``n < 2``.

    With ``strata`` (one label per observation) each stratum is resampled within itself and keeps
    its size: the right scheme for a mean over fixed groups (MEME's six tasks, MemoryAgentBench's
    four competencies), where a plain resample could drop a whole group and change the denominator.
    With ``clusters`` whole clusters are resampled (``two_stage``: then their observations too; see the module notes).
    """
    found = bootstrap(n, statistic, seed=seed, resamples=resamples, batch=batch, strata=strata, clusters=clusters, two_stage=two_stage)
    return None if found is None else found.interval(confidence)


def _linear_quantiles(values: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Type-7 quantiles of ``values`` at probabilities ``p``, computed as ``scipy.stats.quantile`` does.

    ``numpy.quantile`` is the same estimator but interpolates with other arithmetic, which can
    differ in the last bit; this keeps the intervals identical to those of ``scipy.stats.bootstrap``.
    Any NaN among the values makes every quantile NaN (scipy's ``nan_policy="propagate"``).
    """
    import numpy as np

    if np.isnan(values).any():
        return np.full(p.shape, np.nan)
    y = np.sort(values)
    n = np.float64(y.size)
    jg = p * n + (1 - p)
    j = jg // 1 - 1
    g = jg % 1
    g = np.where(j < 0, 0.0, g)
    low = np.clip(j, 0.0, n - 1).astype(np.int64)
    high = np.clip(j + 1, 0.0, n - 1).astype(np.int64)
    quantiles: NDArray[np.float64] = (1 - g) * y[low] + g * y[high]
    return quantiles


def _stratified_values(
    n: int,
    statistic: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    strata: Sequence[Hashable],
    *,
    seed: int,
    resamples: int,
    batch: int | None,
) -> NDArray[np.float64]:
    import numpy as np

    if len(strata) != n:
        raise ValueError(f"{len(strata)} strata labels for {n} observations")
    order = {label: i for i, label in enumerate(dict.fromkeys(strata))}
    codes = np.array([order[label] for label in strata])
    groups = [np.flatnonzero(codes == code) for code in range(len(order))]
    rng = np.random.default_rng(seed)
    step = batch or resamples
    values = []
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        indices = np.empty((rows, n), dtype=np.intp)
        for members in groups:
            indices[:, members] = members[rng.integers(0, len(members), size=(rows, len(members)))]
        values.append(np.asarray(statistic(indices), dtype=np.float64))
    return np.concatenate(values)


def mean_interval(
    values: Sequence[float],
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    clusters: Sequence[Hashable] | None = None,
    two_stage: bool = False,
) -> Interval | None:
    """Percentile bootstrap interval of the mean of ``values`` (``None`` for fewer than two; ``clusters``: see the notes)."""
    found = mean_bootstrap(values, seed=seed, resamples=resamples, clusters=clusters, two_stage=two_stage)
    return None if found is None else found.interval(confidence)


def mean_bootstrap(
    values: Sequence[float],
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
    clusters: Sequence[Hashable] | None = None,
    two_stage: bool = False,
) -> Bootstrap | None:
    """The resampled means of ``values`` (``clusters``: resampled by cluster, padding ignored)."""
    import numpy as np

    data = np.append(np.asarray(values, dtype=np.float64), 0.0)
    real = np.ones(data.size)
    real[-1] = 0.0

    def mean_of(indices: NDArray[np.intp]) -> NDArray[np.float64]:
        if clusters is None:
            plain: NDArray[np.float64] = data[indices].mean(axis=-1)
            return plain
        means: NDArray[np.float64] = data[indices].sum(axis=-1) / real[indices].sum(axis=-1)
        return means

    return bootstrap(len(data) - 1, mean_of, seed=seed, resamples=resamples, clusters=clusters, two_stage=two_stage)


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
