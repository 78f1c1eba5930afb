"""The adapter composite recomputed over resampled questions, so its CI is a CI of the number shown.

The composite of a group of questions is the paper's formula over the group's metric
means (:func:`pytest_lens.analysis.summary.summarize`); :class:`CompositeResampler` evaluates the
same formula for many resamples at once with numpy, and falls back to the scalar
:func:`~pytest_lens.scoring.composite.composite` per resample when run-level
``GroupMetric`` s take part (they are arbitrary Python over the resampled results).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_lens.analysis.summary import metric_means
from pytest_lens.records.results import QuestionResult
from pytest_lens.scoring.composite import HardGate, composite
from pytest_lens.scoring.scorer import GroupMetric

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["CompositeResampler"]

#: Upper bound on the floats one vectorised batch touches (resamples x questions x metrics).
_BATCH_CELLS = 4_000_000


class CompositeResampler:
    """Composite of ``results`` (a list of questions) for rows of resampled question indices."""

    def __init__(
        self,
        results: Sequence[QuestionResult],
        weights: Mapping[str, float],
        gates: Sequence[HardGate],
        group_metrics: Sequence[GroupMetric] = (),
    ) -> None:
        import numpy as np

        self.results = list(results)
        self.weights = dict(weights)
        self.gates = tuple(gates)
        self.group_metrics = tuple(group_metrics)
        self.names = sorted({name for result in self.results for name in result.metrics})
        values = np.full((len(self.results), len(self.names)), np.nan)
        column = {name: j for j, name in enumerate(self.names)}
        for i, result in enumerate(self.results):
            for name, value in result.metrics.items():
                values[i, column[name]] = value
        # One more row, absent everywhere: the padding index ``n`` of a clustered resample (it counts for nothing).
        values = np.vstack([values, np.full((1, len(self.names)), np.nan)])
        self._present = ~np.isnan(values)
        self._filled = np.where(self._present, values, 0.0)
        self._weights = np.array([max(0.0, self.weights.get(name, 0.0)) for name in self.names])
        self._gates = [(column[gate.metric], gate.threshold - gate.tolerance) for gate in self.gates if gate.metric in column]

    @property
    def n(self) -> int:
        """Number of questions."""
        return len(self.results)

    @property
    def batch(self) -> int:
        """Resamples per vectorised batch, bounding memory on large runs."""
        return max(1, _BATCH_CELLS // max(1, self.n * max(1, len(self.names))))

    def point(self) -> float:
        """The composite of all questions (equals ``AdapterSummary.composite`` before rounding)."""
        import numpy as np

        return float(self.composites(np.arange(self.n)[None, :])[0])

    def metric_means(self, indices: NDArray[np.intp]) -> NDArray[np.float64]:
        """Mean of each metric (columns: :attr:`names`) per row of ``indices``; NaN where a metric is absent."""
        import numpy as np

        sums = self._filled[indices].sum(axis=-2)
        counts = self._present[indices].sum(axis=-2)
        with np.errstate(invalid="ignore", divide="ignore"):
            means: NDArray[np.float64] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        return means

    def composites(self, indices: NDArray[np.intp]) -> NDArray[np.float64]:
        """The composite of each row of resampled question indices (shape ``(rows, n)``; the index ``n`` is padding)."""
        import numpy as np

        indices = np.atleast_2d(indices)
        if self.group_metrics:
            return np.array([self._composite_with_group_metrics(row) for row in indices])
        return self._of_means(self.metric_means(indices))

    def without(self, units: NDArray[np.intp], deleted: NDArray[np.intp]) -> NDArray[np.float64]:
        """The composite without each unit of ``deleted`` in turn (``units``: each question's unit code).

        From each unit's metric sums and counts, so leaving out every unit costs one pass over the questions
        (rows of indices would cost a pass per unit). Run-level metrics need the questions themselves: with them,
        each composite is recomputed from the questions left.
        """
        import numpy as np

        if self.group_metrics:
            keep = np.arange(self.n)
            return np.array([self._composite_with_group_metrics(keep[units != unit]) for unit in deleted])
        count = int(units.max()) + 1 if units.size else 0
        # Sums in extended precision: the total less a unit must come out as the sum of the questions left (a mean
        # of 0.25 and 0.75 is 0.5, not 0.49999999999999994, which a gate at 0.5 would zero).
        sums = np.zeros((count, len(self.names)), dtype=np.longdouble)
        present = np.zeros((count, len(self.names)))
        np.add.at(sums, units, self._filled[: self.n].astype(np.longdouble))
        np.add.at(present, units, self._present[: self.n])
        left_sums = (sums.sum(axis=0)[None, :] - sums[deleted]).astype(np.float64)
        left_counts = present.sum(axis=0)[None, :] - present[deleted]
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(left_counts > 0, left_sums / np.maximum(left_counts, 1), np.nan)
        return self._of_means(means)

    def _of_means(self, means: NDArray[np.float64]) -> NDArray[np.float64]:
        """The composite of rows of metric means (NaN: the metric is absent from that row)."""
        import numpy as np

        used = (self._weights > 0) & ~np.isnan(means)
        total = (self._weights * used).sum(axis=-1)
        weighted = (self._weights * np.where(used, means, 0.0)).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ungated = np.where(total > 0, weighted / np.where(total > 0, total, 1.0), 0.0)
        gated = np.zeros(ungated.shape, dtype=bool)
        for j, cutoff in self._gates:
            with np.errstate(invalid="ignore"):
                gated |= means[:, j] < cutoff  # NaN (metric absent) never gates; HardGate.tolerance as HardGate.fails
        values: NDArray[np.float64] = np.where(gated, 0.0, ungated)
        return values

    def _composite_with_group_metrics(self, row: NDArray[np.intp]) -> float:
        sample = [self.results[int(i)] for i in row if i < self.n]
        means = metric_means(sample)
        for group_metric in self.group_metrics:
            means.update(group_metric(sample))
        return composite(means, self.weights, self.gates).value
