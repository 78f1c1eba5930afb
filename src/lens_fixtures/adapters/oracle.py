"""The oracle control: a memory that ranks the question's required evidence first, the ceiling of a run.

``random`` is the floor a memory must clear; the oracle is the most any memory can give the agent:
each search returns the required evidence of the question being answered (those of its episodes
stored so far, in the dataset's order), then the rest of the stream in the order it arrived, as
many as the search's limit. Everything after the search is the run's own: the same budget, the
same agent, the same scoring. So what the oracle loses on a question is lost by the agent or the
answer key, not by a memory: the run lists those questions as "agent or answer-key suspects"
(:mod:`pytest_lens.analysis.ceiling`).

The oracle never reads a label and the agent never sees one: the harness hands each question's
view its required refs (:meth:`OracleAdapter.lens_oracle_view`, called by the answering engine,
never by an agent), and search results look like ``random``'s (a short excerpt, a score that
decreases down the list, ``batch_retrieve`` for full texts): ids and texts as stored, no metadata
beyond the timestamp. Without a question (the conformance suite, a direct call) a search returns
the stream in order. Date filters apply to every result, the required evidence included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lens_fixtures.adapters.batch import BATCH_RETRIEVE
from lens_fixtures.adapters.episode_list import EpisodeListMemory
from lens_fixtures.adapters.snippets import excerpt
from pytest_lens import CapabilityManifest, SearchResult

__all__ = ["OracleAdapter", "OracleQuestion"]


class OracleAdapter(EpisodeListMemory):
    """Stores episodes in memory; searches through :meth:`lens_oracle_view` rank the question's required evidence first."""

    #: Each instance holds its own episodes (concurrent runs may stream several to different checkpoints).
    lens_isolated_instances = True

    def reset(self, scope_id: str) -> None:
        """Forget every stored episode (one scope is live at a time)."""
        self._episodes.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store the episode (re-ingesting an id replaces its text and moves it to the end of the stream)."""
        self._episodes.pop(episode_id, None)
        self._episodes[episode_id] = (timestamp, text)

    def lens_oracle_view(self, required: Sequence[str]) -> OracleQuestion:
        """The memory as one question sees it: its searches rank ``required`` first (called by the harness only)."""
        return OracleQuestion(self, tuple(required))

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Without a question: the stored episodes in stream order (within the date filters)."""
        return self.ranked((), filters, limit)

    def ranked(self, required: Sequence[str], filters: dict[str, Any] | None, limit: int | None) -> list[SearchResult]:
        """``required`` (those stored and within the date filters), then the stream in order, ``limit`` in all."""
        wanted = max(1, min(limit or 10, self._max_results))
        start, end = (filters or {}).get("start_date"), (filters or {}).get("end_date")
        order = [*dict.fromkeys(ref for ref in required if ref in self._episodes), *self._episodes]
        results: list[SearchResult] = []
        for ref_id in dict.fromkeys(order):
            timestamp, text = self._episodes[ref_id]
            if (start and timestamp < str(start)) or (end and timestamp > str(end) + "\uffff"):
                continue
            shown = excerpt(text, self._snippet_chars)
            results.append(SearchResult(ref_id=ref_id, text=shown, score=1.0 / (len(results) + 1), metadata={"timestamp": timestamp}))
            if len(results) == wanted:
                break
        return results

    def get_capabilities(self) -> CapabilityManifest:
        """An ``oracle`` search mode (no relevance to the query promised), a date range and ``batch_retrieve``."""
        return CapabilityManifest(
            search_modes=["oracle"], max_results_per_search=self._max_results, supports_date_range=True, extra_tools=[BATCH_RETRIEVE]
        )


class OracleQuestion:
    """One question's view of an :class:`OracleAdapter`: its searches put the question's required evidence first."""

    def __init__(self, memory: OracleAdapter, required: tuple[str, ...]) -> None:
        self._memory = memory
        self._required = required

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The question's required evidence first, then the stream in order."""
        return self._memory.ranked(self._required, filters, limit)

    def __getattr__(self, name: str) -> Any:
        # Everything else (retrieve, capabilities, extra tools, prepare, counters) is the shared memory's.
        return getattr(self._memory, name)
