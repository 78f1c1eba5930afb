"""An in-memory keyword memory that declares every optional part of the contract.

The reference adapters declare no filter fields and no synthetic refs, so
:class:`FacetedMemory` is what shows the conformance suite's filter, date-range,
synthetic-ref and extra-tool clauses passing, and the base every adapter in
:mod:`lens_fixtures.adapters.broken` breaks in exactly one place. Import it as
``lens_fixtures.adapters.faceted:FacetedMemory``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lens_fixtures.adapters.batch import BATCH_RETRIEVE, batch_payload, batch_ref_ids
from pytest_lens import CapabilityManifest, Document, FilterField, MemoryAdapter, SearchResult
from pytest_lens.text import content_terms

__all__ = ["FILTER_FIELDS", "FacetedMemory", "StoredEpisode"]

#: One filter field of every type, matched against the ``meta`` given at ingest.
FILTER_FIELDS = (
    FilterField("region", "string", "Where the event happened."),
    FilterField("kind", "enum", "What the episode is.", enum_values=["incident", "report", "note"]),
    FilterField("urgent", "boolean", "Needs action now."),
    FilterField("priority", "integer", "1 (highest) to 5."),
    FilterField("cost", "number", "Cost in thousands."),
    FilterField("due", "date", "ISO date the follow-up is due."),
)


@dataclass
class StoredEpisode:
    """What the memory keeps of one episode."""

    ref_id: str
    timestamp: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


def _matches(field_type: str, stored: Any, wanted: Any) -> bool:
    if field_type == "boolean":
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if field_type in ("number", "integer"):
        return all(isinstance(v, int | float) and not isinstance(v, bool) for v in (stored, wanted)) and stored == wanted
    return isinstance(stored, str) and isinstance(wanted, str) and stored == wanted


class FacetedMemory(MemoryAdapter):
    """Episodes in a dict, ranked by how many query words they contain.

    Declares a filter field of every type, a date range, ``batch_retrieve``, and a
    synthetic per-scope summary written by ``prepare``.
    """

    max_results = 8

    def __init__(self) -> None:
        self.episodes: dict[str, StoredEpisode] = {}
        self.scope_id: str | None = None
        self.summary: StoredEpisode | None = None

    # -- stream ------------------------------------------------------------------------------
    def reset(self, scope_id: str) -> None:
        """Forget everything (one scope is live at a time)."""
        self.episodes.clear()
        self.summary = None
        self.scope_id = scope_id

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Keep the episode, replacing one stored under the same id."""
        self.episodes[episode_id] = StoredEpisode(episode_id, timestamp, text, dict(meta or {}))

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Write the scope summary (a synthetic ref): how many episodes, from when to when."""
        stamps = sorted(e.timestamp for e in self.episodes.values())
        text = f"summary: {len(stamps)} episodes" + (f" from {stamps[0]} to {stamps[-1]}" if stamps else "")
        self.summary = StoredEpisode(f"summary:{scope_id}", stamps[-1] if stamps else "", text)

    # -- agent tools -----------------------------------------------------------------------------
    def candidates(self) -> list[StoredEpisode]:
        """Everything search may return: episodes in ingest order, then the summary."""
        return [*self.episodes.values(), *([self.summary] if self.summary else [])]

    def keep(self, item: StoredEpisode, filters: dict[str, Any]) -> bool:
        """Whether ``item`` passes the filters (the summary passes any: it is not an episode)."""
        if self.summary is not None and item is self.summary:
            return True
        day = item.timestamp[:10]
        if filters.get("start_date") is not None and day < str(filters["start_date"]):
            return False
        if filters.get("end_date") is not None and day > str(filters["end_date"]):
            return False
        for spec in FILTER_FIELDS:
            if spec.name in filters and not (
                spec.name in item.meta and _matches(spec.field_type, item.meta[spec.name], filters[spec.name])
            ):
                return False
        return True

    def score(self, item: StoredEpisode, terms: set[str]) -> float:
        """How many query words the item contains."""
        present = set(content_terms(item.text))
        return float(len(terms & present))

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Items containing query words, most words first (ties in ingest order)."""
        terms = set(content_terms(query))
        hits = []
        for order, item in enumerate(self.candidates()):
            if not self.keep(item, filters or {}):
                continue
            score = self.score(item, terms)
            if score > 0:
                hits.append((-score, order, item))
        hits.sort(key=lambda hit: (hit[0], hit[1]))
        count = min(limit or self.max_results, self.max_results)
        return [SearchResult(item.ref_id, item.text[:200], -negative, {"timestamp": item.timestamp}) for negative, _, item in hits[:count]]

    def retrieve(self, ref_id: str) -> Document | None:
        """The stored text, verbatim (the summary too)."""
        item = self.episodes.get(ref_id)
        if item is None and self.summary is not None and ref_id == self.summary.ref_id:
            item = self.summary
        return Document(item.ref_id, item.text, {"timestamp": item.timestamp}) if item else None

    def get_capabilities(self) -> CapabilityManifest:
        """Keyword search, every filter type, a date range and ``batch_retrieve``."""
        return CapabilityManifest(
            search_modes=["keyword"],
            filter_fields=list(FILTER_FIELDS),
            max_results_per_search=self.max_results,
            supports_date_range=True,
            extra_tools=[BATCH_RETRIEVE],
        )

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """``batch_retrieve``: ``{"documents": [...], "count": n}``; arguments its schema forbids raise."""
        if name != BATCH_RETRIEVE.name:
            return super().call_extended_tool(name, args)
        return self.batch(batch_ref_ids(args))

    def batch(self, ref_ids: list[str]) -> dict[str, Any]:
        """The documents found for ``ref_ids``, in request order."""
        return batch_payload(ref_ids, self.retrieve)

    def get_synthetic_refs(self) -> list[tuple[str, str]]:
        """The scope summary, once ``prepare`` wrote it."""
        return [(self.summary.ref_id, self.summary.text)] if self.summary else []
