"""The floor and the ceiling: where each adapter stands between a random memory and the oracle.

The ``random`` control (``null`` when random did not run, or the adapter labelled ``random`` or
``null`` without ``--lens-controls``) is the floor a memory must clear; the
``oracle`` control, which hands the agent each question's required evidence first, is the ceiling
the run's agent and answer key allow. On the questions all three scored, an adapter reaches
``share = (adapter - floor) / (oracle - floor)`` of the achievable range (the means of the
section's headline), with the run's Student-t interval (:mod:`pytest_lens.analysis.inference`:
the delete-one-unit jackknife standard error of the ratio, the three means recomputed together,
over the run's units: questions, or scopes when the run's statistics cluster them).

A question is *failed* when its headline is below :data:`FAILS_BELOW`. The questions the oracle
fails are agent or answer-key suspects: the memory was perfect and the question was lost anyway.
They are listed apart, and an adapter's *memory losses* count only the questions it fails that the
oracle passes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_lens.analysis.inference import jackknife
from pytest_lens.analysis.summary import summary_key
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.statistics import Ceiling, CeilingRow, Estimate, SuspectQuestion

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["FAILS_BELOW", "ceiling"]

#: A question scored below this is failed (0/1 scores: a fail; a token F1: a wrong answer; a retrieval score: the
#: required evidence not at the top).
FAILS_BELOW = 0.5

Key = tuple[str, str]
Score = Callable[[QuestionResult], "float | None"]


def ceiling(
    results: Sequence[QuestionResult],
    score: Score,
    *,
    metric: str,
    units: Callable[[QuestionResult], Hashable] | None = None,
    confidence: float = 0.95,
) -> Ceiling | None:
    """Each adapter between the floor and the oracle (``None`` without an oracle); ``score`` gives a question's headline.

    ``units`` labels each question's independent unit (its scope, when the run's statistics cluster; default: itself).
    """
    groups: dict[tuple[str, str], dict[Key, tuple[QuestionResult, float]]] = defaultdict(dict)
    for result in results:
        if result.measured and (value := score(result)) is not None:
            groups[(result.adapter, result.budget)][(result.scope_id, result.question_id)] = (result, value)
    roles = {label: first.control.kind for label, first in _firsts(groups).items() if first.control is not None}
    oracle = next((label for label, kind in roles.items() if kind == "oracle"), None)
    if oracle is None:
        return None
    # The floor: the random control, else the null one, else an adapter the user labelled so (``--lens-adapter=random``).
    labels = {adapter for adapter, _ in groups}
    floor = next((label for kind in ("random", "null") for label, found in roles.items() if found == kind), None)
    floor = floor or next((kind for kind in ("random", "null") if kind in labels), None)
    several_budgets = len({budget for _, budget in groups}) > 1
    found = Ceiling(metric=metric, oracle=oracle, floor=floor, fails_below=FAILS_BELOW)
    for budget in dict.fromkeys(budget for _, budget in groups):
        ceiling_scores = {key: value for key, (_, value) in groups.get((oracle, budget), {}).items()}
        if not ceiling_scores:
            continue
        floor_scores = {key: value for key, (_, value) in groups.get((floor, budget), {}).items()} if floor else None
        found.oracle_scores[budget] = round(_mean(ceiling_scores.values()), 6)
        found.floor_scores[budget] = round(_mean(floor_scores.values()), 6) if floor_scores else 0.0
        found.oracle_questions[budget] = len(ceiling_scores)
        found.suspects.extend(
            SuspectQuestion(scope_id=r.scope_id, question_id=r.question_id, question_type=r.question_type, budget=budget, score=round(v, 6))
            for r, v in groups[(oracle, budget)].values()
            if v < FAILS_BELOW
        )
        for (adapter, b), members in groups.items():
            if b != budget or adapter in (oracle, floor):  # the floor's share is 0 by definition
                continue
            scores = {key: value for key, (_, value) in members.items()}
            unit_of = {key: units(result) for key, (result, _) in members.items()} if units is not None else None
            row = _row(scores, ceiling_scores, floor_scores, unit_of, confidence=confidence)
            if row is not None:
                found.rows.append(row.model_copy(update={"adapter": summary_key(adapter, budget, several_budgets), "budget": budget}))
    return found


def _firsts(groups: Mapping[tuple[str, str], Mapping[Key, tuple[QuestionResult, float]]]) -> dict[str, QuestionResult]:
    firsts: dict[str, QuestionResult] = {}
    for (adapter, _), members in groups.items():
        for result, _ in members.values():
            firsts.setdefault(adapter, result)
            break
    return firsts


def _mean(values: Iterable[float]) -> float:
    found = list(values)
    return sum(found) / len(found) if found else 0.0


def _row(
    scores: Mapping[Key, float],
    oracle: Mapping[Key, float],
    floor: Mapping[Key, float] | None,
    labels: Mapping[Key, Hashable] | None,
    *,
    confidence: float,
) -> CeilingRow | None:
    """One adapter on the questions it shares with the oracle (and the floor); its share of the range with a CI."""
    import numpy as np

    keys = [key for key in scores if key in oracle and (floor is None or key in floor)]
    if not keys:
        return None
    n = len(keys)
    # One padding row of zeros at index n: jackknife rows are padded with n, which the statistic must ignore.
    table = np.array([[scores[k], oracle[k], floor[k] if floor is not None else 0.0] for k in keys] + [[0.0] * 3], dtype=np.float64)
    losses = sum(1 for k in keys if scores[k] < FAILS_BELOW <= oracle[k])

    def statistic(rows: NDArray[np.intp]) -> NDArray[np.float64]:
        kept = (rows < n)[..., None]
        means = (table[rows] * kept).sum(axis=1) / kept.sum(axis=1)
        span = means[:, 1] - means[:, 2]
        safe = np.where(np.abs(span) > 1e-12, span, np.nan)
        values: NDArray[np.float64] = (means[:, 0] - means[:, 2]) / safe
        return values

    estimate = None
    share = float(statistic(np.arange(n, dtype=np.intp)[None, :])[0])
    if np.isfinite(share):
        found = jackknife(n, statistic, units=[labels[k] for k in keys] if labels is not None else None)
        low, high = (None, None) if found is None else (round(v, 6) for v in found.interval(confidence))
        estimate = Estimate(value=round(share, 6), low=low, high=high, n=n, se=None if found is None else round(found.se, 6))
    return CeilingRow(adapter="", budget="", n=n, score=round(float(table[:n, 0].mean()), 6), share=estimate, memory_losses=losses)
