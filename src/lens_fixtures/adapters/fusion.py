"""Fusing rankings: reciprocal rank fusion (Cormack et al., 2009), plain and weighted, and score fusion.

Rank fusion keeps only each leg's order; score fusion keeps how far apart the leg put its items: a
keyword leg whose best match stands far above the rest says more than one whose top ten score alike.
The training-free recipe that beats BM25 on LoCoMo (Lysenstøen 2026, arXiv 2606.04194: BM25 fused
with a dense score taken at each session's best turn) fuses z-scored leg scores with one weight;
:func:`score_fusion` is that, over every item either leg scored.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["NORMALISATIONS", "FusedItem", "reciprocal_rank_fusion", "score_fusion"]

#: How :func:`score_fusion` puts each leg's scores on one scale.
NORMALISATIONS = ("zscore", "minmax")

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class FusedItem(Generic[K]):
    """An item's fused score and its 1-based rank in each input ranking that holds it."""

    key: K
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[K]],
    *,
    k: float = 60,
    weights: Mapping[str, float] | None = None,
    missing_rank: Mapping[str, int] | None = None,
    scale: float = 1.0,
) -> list[FusedItem[K]]:
    """Fuse named rankings (best first): ``score(d) = sum_r w_r * scale / (k + rank_r(d))``.

    - plain RRF (the LENS paper's hybrid): ``k=60``, weights 1, an item absent from a ranking gets nothing from it;
    - Cognis: ``k=10``, weights ``{"vector": 0.7, "bm25": 0.3}``, ``scale=k+1`` (a top-1 item scores its weight),
      and ``missing_rank`` gives absent items a rank (``limit + 1``) instead of nothing.

    Ties keep the order of first appearance (rankings in mapping order), so results are deterministic.
    A duplicate key within one ranking counts at its best rank.
    """
    if k <= 0:
        raise ValueError(f"RRF k must be positive, got {k}")
    weights = weights or {}
    unknown = set(weights) - set(rankings)
    if unknown:
        raise ValueError(f"weights name rankings that are not given: {sorted(unknown)}")
    ranks: dict[K, dict[str, int]] = {}
    for name, ranking in rankings.items():
        for position, key in enumerate(ranking, start=1):
            ranks.setdefault(key, {}).setdefault(name, position)
    fused = []
    for key, held in ranks.items():
        score = 0.0
        for name in rankings:
            rank = held.get(name)
            if rank is None and missing_rank is not None and name in missing_rank:
                rank = missing_rank[name]
            if rank is not None:
                score += weights.get(name, 1.0) * scale / (k + rank)
        fused.append(FusedItem(key, score, dict(held)))
    order = {key: index for index, key in enumerate(ranks)}
    fused.sort(key=lambda item: (-item.score, order[item.key]))
    return fused


def score_fusion(
    scores: Mapping[str, Mapping[K, float]],
    weights: Mapping[str, float],
    *,
    absent: Mapping[str, float] | None = None,
    normalisation: str = "zscore",
    confidence: bool = False,
) -> list[FusedItem[K]]:
    """Fuse named score maps (higher is better): ``score(d) = sum_r w_r * c_r * norm_r(s_r(d))``, best first.

    Every leg is normalised over the union of the items any leg scored, so each leg's scale is its own
    spread over one population: ``zscore`` subtracts the leg's mean and divides by its standard deviation
    (a leg whose scores are all equal adds nothing), ``minmax`` maps its lowest score to 0 and its highest
    to 1. An item a leg did not score gets ``absent[leg]`` (a keyword leg: 0, no term matched), by
    default the leg's lowest score. With ``confidence``, each leg also counts as much as it is sure of
    its best item for this query: ``c_r = 1 + (first - second)``, the gap between its two best normalised
    scores (a query-performance signal that needs no training: a keyword leg whose one match stands far
    above the rest outweighs a dense leg ranking ten near-equals); without it ``c_r = 1``.
    ``ranks`` are each leg's 1-based ranks of the items it scored. Ties keep the order of first
    appearance (legs in mapping order), so results are deterministic.
    """
    import numpy as np

    if normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}, got {normalisation!r}")
    unknown = (set(weights) | set(absent or {})) - set(scores)
    if unknown:
        raise ValueError(f"weights or absent values name legs that are not given: {sorted(unknown)}")
    keys = list(dict.fromkeys(key for leg in scores.values() for key in leg))
    if not keys:
        return []
    total = np.zeros(len(keys), dtype=np.float64)
    ranks: dict[K, dict[str, int]] = {key: {} for key in keys}
    for name, leg in scores.items():
        if not leg:
            continue
        fill = (absent or {}).get(name, min(leg.values()))
        values = _normalised(np.array([leg.get(key, fill) for key in keys], dtype=np.float64), normalisation)
        top = np.sort(values)[::-1][:2]
        sure = 1.0 + float(top[0] - top[1]) if confidence and top.size == 2 else 1.0
        total += weights.get(name, 1.0) * sure * values
        for rank, key in enumerate(sorted(leg, key=lambda k: -leg[k]), start=1):
            ranks[key][name] = rank
    order = np.argsort(-total, kind="stable")
    return [FusedItem(keys[i], float(total[i]), ranks[keys[i]]) for i in order]


def _normalised(values: NDArray[np.float64], normalisation: str) -> NDArray[np.float64]:
    import numpy as np

    if normalisation == "zscore":
        spread = float(values.std())
        return np.zeros_like(values) if spread <= 1e-12 else (values - values.mean()) / spread
    low, high = float(values.min()), float(values.max())
    return np.zeros_like(values) if high - low <= 1e-12 else (values - low) / (high - low)
