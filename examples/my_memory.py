"""A complete, small memory adapter: what you write to put your own store under pytest-lens.

Run it against the bundled data from the repository root::

    pytest -m lens --lens-adapter=examples.my_memory:DictMemory

A real adapter would call your vector store or knowledge graph where this one uses a dict.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pytest_lens import CapabilityManifest, Document, ExtraTool, MemoryAdapter, SearchResult
from pytest_lens.api import content_terms


class DictMemory(MemoryAdapter):
    """Episodes in a dict; search ranks them by how many query words they contain."""

    max_results = 10
    # Optional, for --lens-concurrency: searches only read the dict, so questions may search at once
    # from several threads; and two instances share nothing, so one may answer at checkpoint 20 while
    # another is fed up to checkpoint 40. Leave both out (False) when unsure: that is always safe.
    lens_thread_safe = True
    lens_isolated_instances = True

    def __init__(self, snippet_chars: int = 240) -> None:
        # Constructor options come from --lens-adapter-option, e.g. snippet_chars=400.
        self.snippet_chars = snippet_chars
        self.episodes: dict[str, tuple[str, str]] = {}  # ref_id -> (timestamp, text)

    def reset(self, scope_id: str) -> None:
        # One scope is live at a time: forget everything.
        self.episodes.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        self.episodes[episode_id] = (timestamp, text)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        terms = set(content_terms(query))
        scored = []
        for ref_id, (timestamp, text) in self.episodes.items():
            counts = Counter(content_terms(text))
            score = float(sum(counts[t] > 0 for t in terms))
            if score > 0:
                scored.append(SearchResult(ref_id, text[: self.snippet_chars], score, {"timestamp": timestamp}))
        # Best first; ties broken by id so results are deterministic.
        scored.sort(key=lambda r: (-r.score, r.ref_id))
        # Never more than asked for, nor more than the manifest promises.
        return scored[: min(limit or self.max_results, self.max_results)]

    def retrieve(self, ref_id: str) -> Document | None:
        stored = self.episodes.get(ref_id)
        return Document(ref_id, stored[1], {"timestamp": stored[0]}) if stored else None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(
            search_modes=["keyword"],
            max_results_per_search=self.max_results,
            extra_tools=[
                ExtraTool(
                    name="batch_retrieve",
                    description="Retrieve several stored episodes at once.",
                    parameters={
                        "type": "object",
                        "properties": {"ref_ids": {"type": "array", "items": {"type": "string"}}},
                        "required": ["ref_ids"],
                    },
                )
            ],
        )

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        if name != "batch_retrieve":
            return super().call_extended_tool(name, args)
        refs = args.get("ref_ids")
        # Reject what the schema forbids with an error, as `pytest --lens-conformance` checks.
        if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
            raise ValueError(f"batch_retrieve takes {{'ref_ids': [str, ...]}}, got {args!r}")
        docs = [doc for ref in refs if (doc := self.retrieve(ref)) is not None]
        return {"documents": [{"ref_id": d.ref_id, "text": d.text} for d in docs], "count": len(docs)}
