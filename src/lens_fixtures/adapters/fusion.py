"""Reciprocal rank fusion (Cormack et al., 2009), plain and weighted."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["FusedItem", "reciprocal_rank_fusion"]

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
