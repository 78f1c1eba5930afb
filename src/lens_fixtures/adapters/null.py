"""The no-memory control: stores nothing, finds nothing (LENS paper §3.8)."""

from __future__ import annotations

from typing import Any

from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult

__all__ = ["NullAdapter"]


class NullAdapter(MemoryAdapter):
    """Any system scoring below this one is actively harmful."""

    # Stores nothing: any number of instances and threads is safe.
    lens_thread_safe = True
    lens_isolated_instances = True

    def reset(self, scope_id: str) -> None:
        """Nothing to forget."""

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Discard the episode."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Always empty."""
        return []

    def retrieve(self, ref_id: str) -> Document | None:
        """Always unknown."""
        return None

    def get_capabilities(self) -> CapabilityManifest:
        """Plain search only."""
        return CapabilityManifest(search_modes=["none"])
