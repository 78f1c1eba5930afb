"""The in-memory episode store the control memories share (``random``, ``oracle``).

A control differs from another only in how it ranks: each keeps the live scope's episodes as
``{id: (timestamp, text)}``, returns them verbatim from ``retrieve`` and offers
``batch_retrieve``, so an agent meets the same tools whichever control it reads.
"""

from __future__ import annotations

from typing import Any

from lens_fixtures.adapters.batch import BATCH_RETRIEVE, batch_payload, batch_ref_ids
from pytest_lens import Document, MemoryAdapter

__all__ = ["EpisodeListMemory"]


class EpisodeListMemory(MemoryAdapter):
    """Stored episodes by id (timestamp, text), ``retrieve`` verbatim and ``batch_retrieve``; subclasses rank searches."""

    def __init__(self, max_results: int = 20, snippet_chars: int = 300) -> None:
        if max_results < 1:
            raise ValueError(f"max_results must be >= 1, got {max_results}")
        self._max_results = max_results
        self._snippet_chars = snippet_chars
        self._episodes: dict[str, tuple[str, str]] = {}

    def retrieve(self, ref_id: str) -> Document | None:
        """The stored episode text, verbatim."""
        stored = self._episodes.get(ref_id)
        if stored is None:
            return None
        return Document(ref_id=ref_id, text=stored[1], metadata={"timestamp": stored[0]})

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """``batch_retrieve``: ``{"documents": [{ref_id, text}], "count": n}`` for the ids found; invalid arguments raise."""
        if name != BATCH_RETRIEVE.name:
            return super().call_extended_tool(name, args)
        return batch_payload(batch_ref_ids(args), self.retrieve)
