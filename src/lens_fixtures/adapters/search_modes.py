"""What an LLM-built memory's search reads: the memory the model built, or that fused with the raw episodes.

- ``memory`` (the default of every LLM-built adapter): what the system itself retrieves for its users (facts, entities,
  relations, summaries, core memory), each item mapped back to the episodes it came from, so that citations and
  evidence metrics still name episodes. A memory the model left empty finds nothing.
- ``fused``: the same, fused by reciprocal rank with a ranking of the raw episodes (BM25, or the system's own episode
  search). It scores mostly the raw-episode half when the model extracts little, so it is never the default.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["FUSED", "MEMORY", "SearchMode", "search_mode"]

SearchMode = Literal["memory", "fused"]
MEMORY: SearchMode = "memory"
FUSED: SearchMode = "fused"


def search_mode(value: object, adapter: str) -> SearchMode:
    """``value`` as a search mode; :class:`ValueError` naming the adapter and the option otherwise."""
    if value == MEMORY:
        return MEMORY
    if value == FUSED:
        return FUSED
    raise ValueError(
        f"{adapter}: option search must be 'memory' (the memory the model built) or 'fused' (with the raw episodes), got {value!r}"
    )
