"""The episode texts a run artifact keeps, so a report can show what an answer cited and what it missed.

Only the episodes some question cited or required are kept, once per scope however many
questions, adapters and budgets touched them: the artifact is attached to CI runs and stays small.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_lens.datasets.loader import LoadedScope
from pytest_lens.records.results import EpisodeText, QuestionResult, ScopeEvidence

__all__ = ["collect_evidence"]


def collect_evidence(results: Iterable[QuestionResult], scopes: Iterable[LoadedScope]) -> dict[str, ScopeEvidence]:
    """Per scope of ``results``: its stream length and the texts of the cited or required episodes, in stream order.

    Cited ids that are not episodes (an adapter's synthetic refs, ids the agent made up) have no text to keep.
    """
    by_id = {scope.scope_id: scope for scope in scopes}
    wanted: dict[str, set[str]] = {}
    for result in results:
        if result.skipped is None and result.scope_id in by_id:
            wanted.setdefault(result.scope_id, set()).update(result.cited_refs, result.required_refs)
    evidence: dict[str, ScopeEvidence] = {}
    for scope_id, refs in wanted.items():
        scope = by_id[scope_id]
        evidence[scope_id] = ScopeEvidence(
            episodes=len(scope.stream),
            texts={
                episode.episode_id: EpisodeText(timestamp=episode.iso_timestamp, text=episode.text)
                for episode in scope.stream
                if episode.episode_id in refs
            },
        )
    return evidence
