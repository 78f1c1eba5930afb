"""compaction: a rolling LLM summary of everything ingested (the LENS paper's progressive-summarisation system, §3.7).

Episodes are buffered at ingest (no LLM call there). At ``prepare()`` the summary is
brought up to date by folding the new episodes into it with the LLM, and search
always returns that one summary (a synthetic ref, ``compaction_summary``, that the
agent may cite); ``memory_retrieve`` by episode id still returns the episode.

The fold is aligned to stream positions (episodes 1-10, 11-20, ... then the tail),
so the summary at checkpoint N depends only on the first N episodes, never on
which checkpoints were prepared before: running one question alone gives the same
summary as running the whole scope. Every request goes through the run's LLM client
and so through its request cache.

Without an LLM endpoint configured the adapter is unavailable and its questions are
skipped, saying how to configure one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lens_fixtures.adapters.batch import BATCH_RETRIEVE, batch_payload, batch_ref_ids
from lens_fixtures.adapters.model_required import require_llm
from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = ["SUMMARY_REF", "SUMMARY_SYSTEM_PROMPT", "CompactionAdapter"]

SUMMARY_REF = "compaction_summary"
SUMMARY_SYSTEM_PROMPT = (
    "You maintain the running summary of a stream of operational records for an analyst who will later answer "
    "questions from the summary alone. Update the summary with the new records: keep trends, changes over time, "
    "anomalies and their dates and exact values; drop routine detail. Reply with the updated summary only."
)


class CompactionAdapter(MemoryAdapter):
    """One LLM-written summary regenerated at every checkpoint; search returns only the summary."""

    def __init__(
        self,
        lens_llm: ChatClient | None = None,
        model: str | None = None,
        episodes_per_fold: int = 10,
        summary_max_tokens: int = 2000,
    ) -> None:
        lens_llm = require_llm(lens_llm, "compaction needs an LLM to write its summary")
        if episodes_per_fold < 1:
            raise ValueError(f"episodes_per_fold must be at least 1, got {episodes_per_fold}")
        self._llm = lens_llm.with_model(model) if model else lens_llm
        self._per_fold = episodes_per_fold
        self._max_tokens = summary_max_tokens
        self._episodes: list[tuple[str, str, str]] = []
        self._texts: dict[str, str] = {}
        self._folds: list[str] = []
        self._summary = ""

    def reset(self, scope_id: str) -> None:
        """Forget the episodes and the summary."""
        self._episodes.clear()
        self._texts.clear()
        self._folds.clear()
        self._summary = ""

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        """Buffer the episode (summaries are written at ``prepare``)."""
        if episode_id not in self._texts:
            self._episodes.append((episode_id, timestamp, text))
        self._texts[episode_id] = text

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        """Bring the summary up to date with every buffered episode."""
        count = len(self._episodes)
        full = count // self._per_fold
        while len(self._folds) < full:
            start = len(self._folds) * self._per_fold
            previous = self._folds[-1] if self._folds else ""
            self._folds.append(self._fold(previous, self._episodes[start : start + self._per_fold]))
        tail = self._episodes[full * self._per_fold : count]
        base = self._folds[full - 1] if full else ""
        self._summary = self._fold(base, tail) if tail else base

    def _fold(self, summary: str, episodes: list[tuple[str, str, str]]) -> str:
        # Episodes are shown by timestamp only: ids may encode dataset labels.
        records = "\n\n".join(f"### Record ({timestamp})\n{text.strip()}" for _, timestamp, text in episodes)
        messages = [
            {"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
            {"role": "user", "content": f"Current summary:\n{summary or '(empty)'}\n\nNew records:\n{records}"},
        ]
        reply = self._llm.complete(messages, max_tokens=self._max_tokens, purpose="compaction")
        return reply.content.strip()

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        """The summary, whatever the query."""
        return [SearchResult(ref_id=SUMMARY_REF, text=self._summary, score=1.0)] if self._summary else []

    def retrieve(self, ref_id: str) -> Document | None:
        """The summary for ``compaction_summary``; otherwise the buffered episode."""
        if ref_id == SUMMARY_REF:
            return Document(ref_id=SUMMARY_REF, text=self._summary) if self._summary else None
        text = self._texts.get(ref_id)
        return Document(ref_id=ref_id, text=text) if text is not None else None

    def get_synthetic_refs(self) -> list[tuple[str, str]]:
        """The summary is a document the agent may cite."""
        return [(SUMMARY_REF, self._summary)] if self._summary else []

    def get_capabilities(self) -> CapabilityManifest:
        """Summary search (one result) and ``batch_retrieve``."""
        return CapabilityManifest(search_modes=["summary"], max_results_per_search=1, extra_tools=[BATCH_RETRIEVE])

    def call_extended_tool(self, name: str, args: dict[str, Any]) -> Any:
        """``batch_retrieve``: the documents found among ``ref_ids``; invalid arguments raise."""
        if name != BATCH_RETRIEVE.name:
            return super().call_extended_tool(name, args)
        return batch_payload(batch_ref_ids(args), self.retrieve)
