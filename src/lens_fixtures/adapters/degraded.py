"""A deliberately broken BM25 memory, for checking that a CI gate catches a regression.

Not registered under a short name (nobody should pick it by accident); use it under the
label of the run it is compared with, e.g.::

    pytest --lens-adapter=bm25=lens_fixtures.adapters.degraded:DropsBestBM25Adapter --lens-baseline=main --lens-compare-fail
"""

from __future__ import annotations

from typing import Any

from lens_fixtures.adapters.bm25 import BM25Adapter
from pytest_lens import SearchResult

__all__ = ["DropsBestBM25Adapter"]


class DropsBestBM25Adapter(BM25Adapter):
    """:class:`BM25Adapter` whose search loses its ``drop_best`` best results (an off-by-one in ranking)."""

    def __init__(self, storage_dir: str | None = None, drop_best: int = 1, **options: Any) -> None:
        if drop_best < 0:
            raise ValueError(f"drop_best must be >= 0, got {drop_best}")
        super().__init__(storage_dir, **options)
        self._drop_best = drop_best

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """BM25's ranking without its best ``drop_best`` results (still at most ``limit`` results)."""
        wanted = max(1, min(limit or 10, self._max_results))
        return super().search(query, filters, wanted + self._drop_best)[self._drop_best : self._drop_best + wanted]
