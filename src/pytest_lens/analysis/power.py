"""``lens power``: how many questions, scopes and repetitions a run needs to detect a given drop of its headline.

The sample size of a paired comparison (Miller 2024, "Adding Error Bars to Evals"):
``n = (z_(1-alpha) + z_power)^2 * Var(d) / delta^2`` questions, one-sided as the regression gate tests, where
``d`` is a question's change of the headline. Three parts of ``Var(d)`` are read from runs:

- **Paired or not.** Given a baseline, ``Var(d)`` is the variance of the observed per-question differences.
  Without one it is twice the run's per-question variance (two independent runs): an upper bound, since a
  pull request usually leaves most questions' scores alone.
- **Repetitions** (``--lens-repeat``). A question's score is its mean over ``r`` answers, so the part of the
  variance *within* questions (answering again) shrinks as ``1/r`` and the part *between* questions does not:
  ``Var(d)(r) = Var_between + Var_within * 2 / r``. With one answer per question the split is unknown and
  the whole variance is treated as between questions (more repetitions then change nothing).
- **Scopes.** Questions of one scope move together; with intra-scope correlation ``rho`` and ``m`` questions
  per scope, ``n`` independent questions are worth ``n * (1 + (m - 1) rho)`` clustered ones (the design
  effect). Scopes are counted at the run's ``m`` questions each, and as the gate tests them: with 5 or more
  scopes its test is referred to t(scopes - 1), so the scopes needed are the fewest G with
  ``(t_(G-1, 1-alpha) + t_(G-1, power))^2 * Var(d) * deff / (G m) <= delta^2`` (a few more than the normal
  approximation's, when they are few).

The drop the run detects as it stands uses the multiplier of the gate's own test (Bloom 1995): t(scopes - 1) when
the run has 5 or more scopes of several questions, else t(questions - 1).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from pytest_lens.analysis.inference import t_quantile
from pytest_lens.analysis.repetitions import variance_split
from pytest_lens.analysis.run import MIN_CLUSTERS, question_composite
from pytest_lens.records.results import QuestionResult
from pytest_lens.scoring.composite import HardGate

__all__ = ["PowerPlan", "PowerRow", "plan_power"]

#: Answers per question the plan is printed for (the run's own count is added).
REPETITIONS = (1, 2, 4, 8)


@dataclass(frozen=True)
class PowerRow:
    """What detecting the drop takes with ``repetitions`` answers per question."""

    repetitions: int
    #: Variance of one question's difference at that many answers.
    variance: float
    #: Questions needed were they independent, and with the run's scope clustering.
    independent: int
    clustered: int
    #: Scopes of the run's size (questions per scope) that hold ``clustered`` questions.
    scopes: int


@dataclass(frozen=True)
class PowerPlan:
    """One adapter's power analysis."""

    adapter: str
    delta: float
    alpha: float
    power: float
    questions: int
    scopes: int
    repetitions: int
    #: ``True``: from paired differences against a baseline; ``False``: twice the run's own variance.
    paired: bool
    within: float | None
    between: float
    #: Intra-scope correlation of the differences (``None`` with one scope).
    rho: float | None
    #: The drop this run (its questions, scopes and repetitions) detects at ``alpha`` with ``power``.
    current_mde: float
    rows: list[PowerRow]

    @property
    def per_scope(self) -> float:
        """Questions per scope in the run."""
        return self.questions / max(1, self.scopes)

    @property
    def design_effect(self) -> float:
        """``1 + (m - 1) rho``: how many clustered questions one independent question is worth."""
        return 1.0 + (self.per_scope - 1.0) * (self.rho or 0.0)


def plan_power(
    results: Sequence[QuestionResult],
    weights: Mapping[str, float],
    gates: Sequence[HardGate],
    *,
    delta: float,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline: Sequence[QuestionResult] = (),
) -> list[PowerPlan]:
    """One plan per (adapter, budget) of ``results`` (controls left out), paired with ``baseline`` when given."""
    if delta <= 0:
        raise ValueError(f"the difference to detect must be positive, got {delta:g}")
    z = NormalDist().inv_cdf
    factor = (z(1 - alpha) + z(power)) ** 2
    plans = []
    for (adapter, budget), answers in _groups(results).items():
        before = _groups(baseline).get((adapter, budget), {})
        scores = {key: [question_composite(r, weights, gates) for r in members] for key, members in answers.items()}
        reps = max(len(values) for values in scores.values())
        split = variance_split(list(scores.values()))
        within = split.within if reps > 1 else None
        means = {key: sum(values) / len(values) for key, values in scores.items()}
        paired = bool(before)
        if paired:
            old = {key: sum(question_composite(r, weights, gates) for r in ms) / len(ms) for key, ms in before.items()}
            differences = {key: means[key] - old[key] for key in means if key in old}
        else:
            differences = means
        if len(differences) < 2:
            continue
        values = list(differences.values())
        centre = sum(values) / len(values)
        total = sum((v - centre) ** 2 for v in values) / (len(values) - 1)
        # Without a baseline, two independent runs: twice one run's variance. The within-question part of the
        # variance of a mean over `reps` answers is within / reps (twice that for a difference of two such means).
        noise = (within or 0.0) / reps
        between = max(0.0, (total - (noise if not paired else 2 * noise)))
        between = between * (1 if paired else 2)

        def variance(r: int, between: float = between, within: float = within or 0.0) -> float:
            return between + 2 * within / r

        scopes = len({key[0] for key in differences})
        rho = _intra_scope_correlation(differences) if scopes > 1 else None
        per_scope = len(differences) / scopes
        effect = 1.0 + (per_scope - 1.0) * (rho or 0.0)
        rows = []
        for r in sorted({*REPETITIONS, reps}):
            independent = max(1, math.ceil(factor * variance(r) / delta**2))
            clustered = max(1, math.ceil(independent * effect))
            needed = _scopes_needed(variance(r) * effect, per_scope, delta, alpha, power, math.ceil(clustered / per_scope))
            rows.append(PowerRow(r, round(variance(r), 6), independent, clustered, needed))
        key = adapter if len({b for _, b in _groups(results)}) == 1 else f"{adapter}@{budget}"
        plans.append(
            PowerPlan(
                adapter=key,
                delta=delta,
                alpha=alpha,
                power=power,
                questions=len(differences),
                scopes=scopes,
                repetitions=reps,
                paired=paired,
                within=within,
                between=round(between, 6),
                rho=None if rho is None else round(rho, 6),
                current_mde=_multiplier(alpha, power, scopes - 1 if scopes >= MIN_CLUSTERS and per_scope > 1 else len(differences) - 1)
                * math.sqrt(variance(reps) * effect / len(differences)),
                rows=rows,
            )
        )
    return plans


def _multiplier(alpha: float, power: float, df: int) -> float:
    """``t_(df, 1-alpha) + t_(df, power)``: the standard errors a one-sided t-test's minimum detectable effect spans."""
    return t_quantile(1 - alpha, df) + t_quantile(power, df)


def _scopes_needed(variance: float, per_scope: float, delta: float, alpha: float, power: float, start: int) -> int:
    """The fewest scopes of ``per_scope`` questions whose t(G-1) test detects ``delta`` (``variance``: per question, deff in)."""
    scopes = max(2, start)
    while _multiplier(alpha, power, scopes - 1) ** 2 * variance / (scopes * per_scope) > delta**2:
        scopes += 1
    return scopes


def _intra_scope_correlation(values: Mapping[tuple[str, str], float]) -> float:
    """One-way ANOVA estimate of the share of variance between scopes, clipped to [0, 1]."""
    by_scope: dict[str, list[float]] = defaultdict(list)
    for (scope, _), value in values.items():
        by_scope[scope].append(value)
    split = variance_split(list(by_scope.values()))
    if split.within is None or split.between is None:
        return 0.0
    size = len(values) / len(by_scope)
    between = max(0.0, split.between - split.within / size)
    total = between + split.within
    return min(1.0, between / total) if total > 0 else 0.0


def _groups(results: Sequence[QuestionResult]) -> dict[tuple[str, str], dict[tuple[str, str], list[QuestionResult]]]:
    """Per (adapter, budget): each question's answers (repetitions), keyed by (scope, question)."""
    groups: dict[tuple[str, str], dict[tuple[str, str], list[QuestionResult]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        if result.measured and result.control is None:
            groups[(result.adapter, result.budget)][(result.scope_id, result.question_id)].append(result)
    return {key: dict(value) for key, value in groups.items()}
