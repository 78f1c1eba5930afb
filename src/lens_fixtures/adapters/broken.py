"""Adapters that each break exactly one clause of the contract, for the conformance suite's own tests.

Every class here is :class:`~lens_fixtures.adapters.faceted.FacetedMemory`
(which passes every clause) with one realistic bug; ``BROKEN_ADAPTERS`` maps each
to the clause it breaks. Use one as ``--lens-adapter=lens_fixtures.adapters.broken:TruncatesLongTexts``.
"""

from __future__ import annotations

import dataclasses
import math
import time
import uuid
from collections import Counter
from typing import Any

from lens_fixtures.adapters.faceted import FILTER_FIELDS, FacetedMemory, StoredEpisode
from pytest_lens import CapabilityManifest, ContextBlock, Document, FilterField, SearchResult
from pytest_lens.text import content_terms

__all__ = [
    "BROKEN_ADAPTERS",
    "AscendingScores",
    "BatchLimitBelowSchema",
    "BatchReturnsSnippets",
    "BlockGrowsOnPrepare",
    "BlockOverflows",
    "BlockStampedPerInstance",
    "BriefedMemory",
    "DocumentFrequencyLeaks",
    "EndDateExclusive",
    "IgnoresFieldFilters",
    "IgnoresLimit",
    "IndexesOnlyTheHead",
    "InvalidFilterType",
    "LenientBatch",
    "PrepareAppendsSummaries",
    "ResetOnlyOnSwitch",
    "RetrieveFallsBackToCaseless",
    "RotatesTies",
    "SlowSearch",
    "TruncatesLongTexts",
    "UndeclaredDigest",
]


class InvalidFilterType(FacetedMemory):
    """Declares a filter field of type ``datetime``, which is not a filter type."""

    def get_capabilities(self) -> CapabilityManifest:
        """The manifest with one more, invalid, filter field."""
        manifest = super().get_capabilities()
        manifest.filter_fields.append(FilterField("when", "datetime", "Event time."))
        return manifest


class TruncatesLongTexts(FacetedMemory):
    """Stores at most 4,000 characters per episode, like a ``VARCHAR(4000)`` column."""

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Keep the first 4,000 characters."""
        super().ingest(episode_id, scope_id, timestamp, text[:4000], meta)


class RetrieveFallsBackToCaseless(FacetedMemory):
    """When an id is not found, retries it case-insensitively, like a ``COLLATE NOCASE`` lookup."""

    def retrieve(self, ref_id: str) -> Document | None:
        """Exact id first, then any id equal ignoring case."""
        found = super().retrieve(ref_id)
        if found is None:
            twin = next((ref for ref in self.episodes if ref.lower() == ref_id.lower()), None)
            found = super().retrieve(twin) if twin is not None else None
        return found


class IgnoresLimit(FacetedMemory):
    """Returns every hit up to ``max_results_per_search``, whatever ``limit`` asks."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Search with the limit dropped."""
        return super().search(query, filters, None)


class UndeclaredDigest(FacetedMemory):
    """Appends a ``digest`` result that is neither an ingested episode nor declared by ``get_synthetic_refs``."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Results, then the digest when there is room."""
        results = super().search(query, filters, limit)
        if results and not filters and len(results) < min(limit or self.max_results, self.max_results):
            results.append(SearchResult("digest", f"{len(self.episodes)} episodes stored", 0.0))
        return results


class AscendingScores(FacetedMemory):
    """Returns its top results worst first, as when SQLite's lower-is-better ``bm25()`` rank is not flipped."""

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The right results in the wrong order."""
        return super().search(query, filters, limit)[::-1]


class RotatesTies(FacetedMemory):
    """Breaks score ties round-robin: each search starts the tied results one further along."""

    def __init__(self) -> None:
        super().__init__()
        self.searches = 0

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Results with every run of equal scores rotated by the number of searches so far."""
        self.searches += 1
        results = super().search(query, filters, None)
        rotated: list[SearchResult] = []
        start = 0
        while start < len(results):
            end = start
            while end < len(results) and results[end].score == results[start].score:
                end += 1
            run = results[start:end]
            shift = self.searches % len(run)
            rotated.extend(run[shift:] + run[:shift])
            start = end
        return rotated[: min(limit or self.max_results, self.max_results)]


class ResetOnlyOnSwitch(FacetedMemory):
    """Treats ``reset`` as "switch scope": resetting the live scope does nothing."""

    def reset(self, scope_id: str) -> None:
        """Forget only when another scope becomes live."""
        if scope_id != self.scope_id:
            super().reset(scope_id)


class DocumentFrequencyLeaks(FacetedMemory):
    """Ranks by inverse document frequency counted over every episode ever ingested, resets included."""

    def __init__(self) -> None:
        super().__init__()
        self.documents_seen = 0
        self.frequency: Counter[str] = Counter()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Store, and count the episode's words (the counts survive reset)."""
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        self.documents_seen += 1
        self.frequency.update(set(content_terms(text)))

    def score(self, item: StoredEpisode, terms: set[str]) -> float:
        """Sum of the matched words' IDF."""
        present = terms & set(content_terms(item.text))
        return sum(math.log(1 + self.documents_seen / max(1, self.frequency[term])) for term in sorted(present))


class PrepareAppendsSummaries(FacetedMemory):
    """Each ``prepare`` adds another summary instead of rewriting the one summary."""

    def __init__(self) -> None:
        super().__init__()
        self.summaries: list[StoredEpisode] = []

    def reset(self, scope_id: str) -> None:
        """Forget the summaries too."""
        super().reset(scope_id)
        self.summaries = []

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Write a summary and keep every earlier one."""
        super().prepare(scope_id, checkpoint)
        assert self.summary is not None
        self.summaries.append(StoredEpisode(f"{self.summary.ref_id}#{len(self.summaries) + 1}", self.summary.timestamp, self.summary.text))

    def get_synthetic_refs(self) -> list[tuple[str, str]]:
        """Every summary written so far."""
        return [(summary.ref_id, summary.text) for summary in self.summaries]


class IgnoresFieldFilters(FacetedMemory):
    """Declares its filter fields but applies only the date range."""

    def keep(self, item: StoredEpisode, filters: dict[str, Any]) -> bool:
        """Date range only."""
        return super().keep(item, {key: value for key, value in filters.items() if key in ("start_date", "end_date")})


class EndDateExclusive(FacetedMemory):
    """Treats ``end_date`` as exclusive: episodes on the end date are dropped."""

    def keep(self, item: StoredEpisode, filters: dict[str, Any]) -> bool:
        """Off by one day at the end of the range."""
        if filters.get("end_date") is not None and item.timestamp[:10] >= str(filters["end_date"]) and item is not self.summary:
            return False
        return super().keep(item, filters)


class BatchLimitBelowSchema(FacetedMemory):
    """Its schema allows 20 ids per ``batch_retrieve``, but it refuses more than 10."""

    def batch(self, ref_ids: list[str]) -> dict[str, Any]:
        """Refuse big batches."""
        if len(ref_ids) > 10:
            raise ValueError(f"batch_retrieve takes at most 10 ids, got {len(ref_ids)}")
        return super().batch(ref_ids)


class LenientBatch(FacetedMemory):
    """Does not check ``batch_retrieve``'s arguments: a missing or malformed ``ref_ids`` returns nothing instead of an error."""

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """``batch_retrieve`` on whatever it is given."""
        if name != "batch_retrieve":
            return super().call_extended_tool(name, args)
        refs = args.get("ref_ids") or []
        return self.batch([str(ref) for ref in refs] if isinstance(refs, list) else [])


class BatchReturnsSnippets(FacetedMemory):
    """``batch_retrieve`` returns the 200-character search snippets, not the stored texts."""

    def batch(self, ref_ids: list[str]) -> dict[str, Any]:
        """Documents with their texts cut to 200 characters."""
        result = super().batch(ref_ids)
        for document in result["documents"]:
            document["text"] = document["text"][:200]
        return result


class IndexesOnlyTheHead(FacetedMemory):
    """Search sees only the first 200 characters of each episode, like an embedder's truncated input window."""

    def score(self, item: StoredEpisode, terms: set[str]) -> float:
        """Query words within the first 200 characters."""
        return float(len(terms & set(content_terms(item.text[:200]))))


class SlowSearch(FacetedMemory):
    """Takes ``delay_s`` (default 100 ms) per search."""

    def __init__(self, delay_s: float = 0.1) -> None:
        super().__init__()
        self.delay_s = delay_s

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """Search, slowly."""
        time.sleep(self.delay_s)
        return super().search(query, filters, limit)


class BriefedMemory(FacetedMemory):
    """FacetedMemory with a block of context for the agent's prompt (keeps every clause): the summary and the newest episode."""

    block_tokens = 200

    def draft_block(self) -> str | None:
        """The block before it is cut to its declared size."""
        if self.summary is None:
            return None
        newest = max(self.episodes.values(), key=lambda e: (e.timestamp, e.ref_id), default=None)
        return self.summary.text + (f"\nnewest: {newest.text}" if newest is not None else "")

    def context(self, scope_id: str, checkpoint: int) -> str | None:
        """The draft, cut to ``block_tokens`` (UTF-8 bytes // 4)."""
        draft = self.draft_block()
        return None if draft is None else draft.encode("utf-8")[: self.block_tokens * 4].decode("utf-8", errors="ignore")

    def get_capabilities(self) -> CapabilityManifest:
        """FacetedMemory's manifest, declaring the block."""
        return dataclasses.replace(super().get_capabilities(), context_block=ContextBlock("briefing", self.block_tokens, "briefing"))


class BlockOverflows(BriefedMemory):
    """Declares a 200-token block but never cuts it: a long episode overflows it."""

    def context(self, scope_id: str, checkpoint: int) -> str | None:
        """The draft, whatever its size."""
        return self.draft_block()


class BlockStampedPerInstance(BriefedMemory):
    """Heads the block with an id drawn per instance: the same stream gives another block in another process."""

    def __init__(self) -> None:
        super().__init__()
        self.block_id = uuid.uuid4().hex[:8]

    def draft_block(self) -> str | None:
        """The draft under a header with the instance's id."""
        draft = super().draft_block()
        return None if draft is None else f"briefing {self.block_id}\n{draft}"


class BlockGrowsOnPrepare(BriefedMemory):
    """Appends a line to the block at every ``prepare``, even at the same checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.prepared = 0

    def reset(self, scope_id: str) -> None:
        """Forget the count too."""
        super().reset(scope_id)
        self.prepared = 0

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Write the summary and count the call."""
        super().prepare(scope_id, checkpoint)
        self.prepared += 1

    def draft_block(self) -> str | None:
        """The draft and one line per ``prepare`` so far."""
        draft = super().draft_block()
        return None if draft is None else draft + "\nconsolidated" * self.prepared


#: Each broken adapter and the one clause it breaks (``SlowSearch`` only under an enforced search ceiling below 100 ms).
BROKEN_ADAPTERS: dict[type[FacetedMemory], str] = {
    BlockOverflows: "context.size",
    BlockStampedPerInstance: "context.deterministic",
    BlockGrowsOnPrepare: "context.prepare_stable",
    InvalidFilterType: "manifest.valid",
    TruncatesLongTexts: "retrieve.roundtrip",
    RetrieveFallsBackToCaseless: "retrieve.unknown",
    IgnoresLimit: "search.limit",
    UndeclaredDigest: "search.known_refs",
    AscendingScores: "search.ordered",
    RotatesTies: "search.deterministic",
    ResetOnlyOnSwitch: "reset.forgets",
    DocumentFrequencyLeaks: "scope.isolation",
    PrepareAppendsSummaries: "prepare.idempotent",
    IgnoresFieldFilters: "filters.fields",
    EndDateExclusive: "filters.date_range",
    BatchLimitBelowSchema: "tools.accepts_valid",
    LenientBatch: "tools.rejects_invalid",
    BatchReturnsSnippets: "tools.batch_retrieve",
    IndexesOnlyTheHead: "recall.rare_token",
    SlowSearch: "latency.ceiling",
}

assert len(set(BROKEN_ADAPTERS.values())) == len(BROKEN_ADAPTERS), "each broken adapter breaks a different clause"
assert {field.name for field in FILTER_FIELDS}, "FacetedMemory declares filter fields"
