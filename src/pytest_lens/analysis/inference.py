"""Student-t inference for a statistic of independent units: jackknife standard error, t(G - 1) reference.

Every interval, paired test, non-inferiority bound and minimum detectable effect of a run is read
from one :class:`StudentT`: an estimate, its standard error, and the degrees of freedom of the
Student-t distribution it is referred to. The *units* are what is independent: the questions
(``--lens-bootstrap=plain``) or the scopes (``clustered``: the questions of one scope share a stream,
so their scores move together). With ``G`` units:

- **Standard error**: the delete-one-unit jackknife (Quenouille, Tukey; with scopes as units, the
  "CV3" cluster-robust variance of MacKinnon, Nielsen and Webb 2023), ``(G - 1) / G * sum((t_(g) -
  mean)^2)`` over the statistic recomputed without each unit. For a mean it is exactly the textbook
  standard error (so a plain paired test is the paired t-test, and a clustered one with scopes of
  equal size is the one-sample t-test of the scopes' mean differences); for the composite, a
  weighted mean of metric means, it is its linearisation. It is deterministic: a verdict does not
  depend on ``--lens-seed``. With ``strata`` (fixed groups, such as MEME's six tasks), the stratified
  jackknife ("JKn": each stratum's units deleted in turn, ``(G_h - 1) / G_h`` per stratum).
- **Reference**: Student's t with ``G - 1`` degrees of freedom (``G - H`` with ``H`` strata). With
  few clusters the normal reference, and a cluster bootstrap's percentiles, call too much
  significant: at 6 scopes a 5% test rejected a true null 9.5% of the time and 95% intervals
  covered 85-89% (``benchmarks/clustered_coverage.py``); the t(G - 1) reference with a
  cluster-robust standard error is the small-sample rule of Cameron and Miller (2015), Bell and
  McCaffrey (2002) and MacKinnon, Nielsen and Webb (2023), and keeps both at their level there.
- **Zero spread**: when every unit moved the statistic alike (the jackknife SE is 0) the t statistic
  is undefined; the p-value is then the exact sign-flip one, ``2**-G`` one-sided (all ``G`` units
  moved the same way), and no difference at all gives ``p = 1``.
- **Minimum detectable effect** (Bloom 1995; Miller 2024 with a normal reference):
  ``(t_(1-alpha) + t_power) * SE`` one-sided, ``t_(1-alpha/2)`` two-sided, both with the test's
  degrees of freedom: the true change the same test detects with probability ``power``.

The t distribution is computed here (the regularised incomplete beta function by Lentz's continued
fraction), not imported from scipy: a run that needs only intervals then never imports scipy
(importing ``scipy.special`` alone costs more than a one-scope run's statistics). A test compares it
with ``scipy.special.stdtr`` and ``stdtrit``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "DEFAULT_POWER",
    "Alternative",
    "Mean",
    "StudentT",
    "jackknife",
    "minimum_detectable_effect",
    "t_cdf",
    "t_quantile",
    "unit_count",
]

Alternative = Literal["two-sided", "less", "greater"]

#: The power every minimum detectable effect is stated at.
DEFAULT_POWER = 0.8
#: A standard error this small relative to the estimate is floating-point noise, not spread.
_NOISE = 1e-12


@dataclass(frozen=True)
class StudentT:
    """An estimate with its standard error, referred to Student's t with ``df`` degrees of freedom."""

    estimate: float
    se: float
    df: int
    #: Independent units behind the standard error (questions or scopes).
    units: int

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided ``confidence`` interval ``estimate -+ t_(df, (1 + confidence) / 2) * se``."""
        half = t_quantile((1 + confidence) / 2, self.df) * self.se
        return self.estimate - half, self.estimate + half

    def lower_bound(self, alpha: float) -> float:
        """The one-sided ``1 - alpha`` lower confidence bound of the estimate."""
        return self.estimate - t_quantile(1 - alpha, self.df) * self.se

    def p_value(self, alternative: Alternative) -> float:
        """The p-value of the estimate against 0 (``less``: is it below 0?)."""
        if self.se <= 0:
            return self._zero_spread_p(alternative)
        t = self.estimate / self.se
        if alternative == "less":
            return t_cdf(t, self.df)
        if alternative == "greater":
            return t_cdf(-t, self.df)
        return min(1.0, 2 * t_cdf(-abs(t), self.df))

    def _zero_spread_p(self, alternative: Alternative) -> float:
        """Every unit moved alike: the exact sign-flip p-value (all ``units`` signs agree)."""
        if self.estimate == 0:
            return 1.0
        one_sided = 0.5**self.units
        if alternative == "two-sided":
            return min(1.0, 2 * one_sided)
        agrees = self.estimate < 0 if alternative == "less" else self.estimate > 0
        return one_sided if agrees else 1.0

    def mde(self, alpha: float, power: float = DEFAULT_POWER, *, two_sided: bool = False) -> float:
        """The smallest true change this test detects at ``alpha`` with probability ``power`` (see the module notes)."""
        return minimum_detectable_effect(self.se, alpha=alpha, power=power, two_sided=two_sided, df=self.df)


class Mean:
    """The mean of ``values`` as a :func:`jackknife` statistic: over rows of indices padded with ``len(values)``, or without units."""

    def __init__(self, values: Sequence[float]) -> None:
        import numpy as np

        self.values = np.asarray(values, dtype=np.float64)
        self._data = np.append(self.values, 0.0)
        self._real = np.append(np.ones(self.values.size), 0.0)

    def __call__(self, indices: NDArray[np.intp]) -> NDArray[np.float64]:
        """The mean of each row (the padding ignored)."""
        import numpy as np

        with np.errstate(invalid="ignore", divide="ignore"):
            found: NDArray[np.float64] = self._data[indices].sum(axis=-1) / self._real[indices].sum(axis=-1)
        return found

    def without(self, units: NDArray[np.intp], deleted: NDArray[np.intp]) -> NDArray[np.float64]:
        """The mean without each unit of ``deleted`` in turn."""
        import numpy as np

        sums = np.zeros(int(units.max()) + 1, dtype=np.longdouble)  # extended precision: see CompositeResampler.without
        np.add.at(sums, units, self.values.astype(np.longdouble))
        counts = np.bincount(units)
        with np.errstate(invalid="ignore", divide="ignore"):
            left = (sums.sum() - sums[deleted]).astype(np.float64)
            found: NDArray[np.float64] = left / (self.values.size - counts[deleted])
        return found


def minimum_detectable_effect(
    se: float, *, alpha: float, power: float = DEFAULT_POWER, two_sided: bool = False, df: int | None = None
) -> float:
    """``(q_(1-alpha) + q_power) * se``, ``q`` Student's t with ``df`` degrees of freedom (the normal when ``df`` is None)."""
    level = 1 - alpha / 2 if two_sided else 1 - alpha
    if df is None:
        z = NormalDist().inv_cdf
        return (z(level) + z(power)) * se
    return (t_quantile(level, df) + t_quantile(power, df)) * se


def unit_count(units: Sequence[Hashable]) -> int:
    """How many distinct units ``units`` labels."""
    return len(set(units))


def jackknife(
    n: int,
    statistic: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    *,
    units: Sequence[Hashable] | None = None,
    strata: Sequence[Hashable] | None = None,
    batch: int | None = None,
    without: Callable[[NDArray[np.intp], NDArray[np.intp]], NDArray[np.float64]] | None = None,
) -> StudentT | None:
    """The statistic of ``n`` observations with its delete-one-unit jackknife SE (see the module notes).

    ``statistic`` gets rows of observation indices (shape ``(rows, width)``) and returns one value per
    row; rows are padded with the index ``n``, which it must ignore. ``units`` labels each observation's
    unit (default: each observation is one); ``strata`` each observation's stratum (a unit lies in one).
    ``without(codes, deleted)``, when given, is the statistic without each unit of ``deleted`` in turn
    (``codes``: each observation's unit code) computed directly, in place of a row of indices per unit: the
    run's statistics are sums over questions, so it costs one pass instead of one per question.
    ``None`` with fewer than two units (or no degree of freedom), or when deleting a unit leaves the
    statistic undefined.
    """
    import numpy as np

    codes = _codes(units, n, "unit")
    count = int(codes.max()) + 1 if n else 0
    stratum_of_unit = _unit_strata(codes, count, strata, n)
    groups = int(stratum_of_unit.max()) + 1 if count else 0
    if count - groups < 1:
        return None
    estimate = float(np.asarray(statistic(np.arange(n, dtype=np.intp)[None, :]), dtype=np.float64)[0])
    sizes = np.bincount(stratum_of_unit, minlength=groups)
    deleted = np.flatnonzero(sizes[stratum_of_unit] > 1)  # a stratum of one unit says nothing about its spread
    values = (
        np.asarray(without(codes, deleted), dtype=np.float64)
        if without is not None
        else _leave_one_out(n, statistic, codes, deleted, batch)
    )
    if not np.all(np.isfinite(values)) or not math.isfinite(estimate):
        return None
    variance = 0.0
    for stratum in range(groups):
        own = values[stratum_of_unit[deleted] == stratum]
        if own.size > 1:
            variance += (own.size - 1) / own.size * float(((own - own.mean()) ** 2).sum())
    se = math.sqrt(variance)
    # Leave-one-out values equal up to rounding (every unit moved alike) are no spread: not a t of 10^15.
    return StudentT(estimate=estimate, se=0.0 if se <= _NOISE * max(1.0, abs(estimate)) else se, df=count - groups, units=count)


def _codes(labels: Sequence[Hashable] | None, n: int, what: str) -> NDArray[np.intp]:
    """Each observation's label as a code 0, 1, ... in first-seen order (each observation its own when ``None``)."""
    import numpy as np

    if labels is None:
        return np.arange(n, dtype=np.intp)
    if len(labels) != n:
        raise ValueError(f"{len(labels)} {what} labels for {n} observations")
    order = {label: i for i, label in enumerate(dict.fromkeys(labels))}
    return np.array([order[label] for label in labels], dtype=np.intp)


def _unit_strata(codes: NDArray[np.intp], count: int, strata: Sequence[Hashable] | None, n: int) -> NDArray[np.intp]:
    """The stratum code of each unit; ValueError when a unit's observations lie in several strata."""
    import numpy as np

    if strata is None:
        return np.zeros(count, dtype=np.intp)
    observed = _codes(strata, n, "strata")
    found = np.full(count, -1, dtype=np.intp)
    found[codes] = observed
    if np.any(found[codes] != observed):
        raise ValueError("every unit must lie in one stratum")
    return found


def _leave_one_out(
    n: int,
    statistic: Callable[[NDArray[np.intp]], NDArray[np.float64]],
    codes: NDArray[np.intp],
    deleted: NDArray[np.intp],
    batch: int | None,
) -> NDArray[np.float64]:
    """The statistic without each unit of ``deleted`` in turn: one row of the other observations each, padded with ``n``."""
    import numpy as np

    sizes = np.bincount(codes)
    width = n - int(sizes[deleted].min()) if deleted.size else n
    step = max(1, batch or deleted.size or 1)
    values = []
    positions = np.arange(n, dtype=np.intp)
    for start in range(0, deleted.size, step):
        chunk = deleted[start : start + step]
        # Kept observations keep their index, deleted ones become the padding n; sorting packs the kept ones left.
        rows = np.where(codes[None, :] == chunk[:, None], n, positions[None, :])
        rows.sort(axis=1)
        values.append(np.asarray(statistic(rows[:, :width]), dtype=np.float64))
    return np.concatenate(values) if values else np.empty(0)


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``scipy.special.stdtrit``)."""
    if not 0 < p < 1:
        raise ValueError(f"a quantile needs 0 < p < 1, got {p}")
    if df <= 0:
        raise ValueError(f"Student's t needs df > 0, got {df}")
    if p == 0.5:
        return 0.0
    tail = min(p, 1 - p)  # solved on the tail (t > 0, then signed): it keeps its precision there

    def above(t: float) -> float:
        return 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))

    low, high = 0.0, 1.0
    while above(high) > tail:
        low, high = high, high * 2
    t = min(max(NormalDist().inv_cdf(p), low), high)
    for _ in range(200):
        # Newton steps, kept inside the bracket [low, high] (bisection when a step would leave it).
        error = tail - above(t)  # increases with t
        if error == 0:
            break
        if error < 0:
            low = t
        else:
            high = t
        candidate = t - error / _t_pdf(t, df)
        if abs(candidate - t) <= 1e-15 * max(1.0, abs(t)):
            t = candidate
            break
        t = candidate if low < candidate < high else (low + high) / 2
    return t if p > 0.5 else -t


def t_cdf(t: float, df: float) -> float:
    """``P(T <= t)`` for Student's t with ``df`` degrees of freedom (``scipy.special.stdtr``)."""
    if math.isinf(t):
        return 0.0 if t < 0 else 1.0
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))
    return tail if t < 0 else 1.0 - tail


def _t_pdf(t: float, df: float) -> float:
    log_density = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_density - (df + 1) / 2 * math.log1p(t * t / df))


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` (Press et al., Numerical Recipes, 6.4)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function, by the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)), -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h
