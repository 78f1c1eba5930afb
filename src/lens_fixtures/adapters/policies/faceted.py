"""policy-faceted: parallel folds for entities, relations, events and causes, merged into one briefing.

Each fold sends one request per facet at the same time (threads), each updating that
facet's notes with the fold's records; at every checkpoint a merge request turns the
four sets of notes into the block of context. Searches go to sqlite-hybrid.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.policies.base import PolicyAdapter, Record, words_for
from lens_fixtures.adapters.policies.prompts import FACET_SYSTEM_PROMPT, FACETS, MERGE_SYSTEM_PROMPT, NEW_RECORDS

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["FACETED_REF", "FacetedPolicy", "Facets"]

FACETED_REF = "faceted_memory"

#: Notes per facet, in :data:`FACETS` order.
Facets = tuple[str, ...]


class FacetedPolicy(PolicyAdapter[Facets]):
    """``policy-faceted``: four facets folded in parallel, merged at each checkpoint.

    Option ``facet_max_tokens`` (default half of ``context_max_tokens``) bounds each facet's notes.
    """

    policy_name = "policy-faceted"
    context_ref = FACETED_REF
    context_title = "faceted memory (entities, relations, events, causes)"

    def __init__(
        self, storage_dir: str | None = None, *, lens_llm: ChatClient | None = None, facet_max_tokens: int | None = None, **options: Any
    ) -> None:
        # lens_llm is named, not left in **options: the runner passes the run's client only to a constructor that names it.
        super().__init__(storage_dir, lens_llm=lens_llm, **options)
        if facet_max_tokens is None:
            facet_max_tokens = max(50, self.context_max_tokens // 2)
        if isinstance(facet_max_tokens, bool) or not isinstance(facet_max_tokens, int) or facet_max_tokens < 20:
            raise ValueError(f"option facet_max_tokens must be an integer of at least 20, got {facet_max_tokens!r}")
        self._facet_tokens = facet_max_tokens
        self._pool: ThreadPoolExecutor | None = None
        self._merged: dict[tuple[int, int], str] = {}

    def initial_state(self) -> Facets:
        """Empty notes for every facet."""
        return ("",) * len(FACETS)

    def fold(self, state: Facets, records: Sequence[Record]) -> Facets:
        """Every facet's notes updated with ``records``, the four requests at once."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=len(FACETS), thread_name_prefix="lens-facet")
        shown = self.records_text(records)
        futures = [
            self._pool.submit(self._fold_facet, name, description, notes, shown)
            for (name, description), notes in zip(FACETS.items(), state, strict=True)
        ]
        return tuple(future.result() for future in futures)

    def _fold_facet(self, name: str, description: str, notes: str, records: str) -> str:
        limit = self._facet_tokens
        user = (
            f"Facet: {name}: {description}\n\nNotes so far (at most {words_for(limit)} words):\n{notes or '(empty)'}\n\n"
            f"{NEW_RECORDS}\n{records}"
        )
        updated, _ = self.ask(FACET_SYSTEM_PROMPT, user, limit)
        return updated or notes

    def render(self, state: Facets, span: tuple[int, int]) -> str:
        """The merge of the four facets (one request per state, kept)."""
        if span not in self._merged:
            limit = self.context_max_tokens
            notes = "\n\n".join(f"{name.capitalize()}:\n{text or '(none)'}" for name, text in zip(FACETS, state, strict=True))
            merged, _ = self.ask(MERGE_SYSTEM_PROMPT, f"{notes}\n\nWrite the briefing in at most {words_for(limit)} words.", limit)
            self._merged[span] = merged or notes
        return self._merged[span]

    def forget(self) -> None:
        """Drop the merged briefings with the folds."""
        self._merged.clear()

    def close(self) -> None:
        """Stop the facet threads, then close sqlite-hybrid."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        super().close()
