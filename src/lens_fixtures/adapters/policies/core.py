"""policy-core: one rolling core-memory block, rewritten at every fold (the Letta/MemGPT core-memory pattern).

The block is the assistant's always-visible working memory: the model rewrites the whole
block with each fold's records, within the block's size, keeping durable facts, current
values and their changes, recurring patterns and open anomalies. Searches go to
sqlite-hybrid.
"""

from __future__ import annotations

from collections.abc import Sequence

from lens_fixtures.adapters.policies.base import PolicyAdapter, Record, words_for
from lens_fixtures.adapters.policies.prompts import CORE_SYSTEM_PROMPT, NEW_RECORDS

__all__ = ["CORE_REF", "CorePolicy"]

CORE_REF = "core_memory"


class CorePolicy(PolicyAdapter[str]):
    """``policy-core``: the core-memory block is the block of context; an empty reply keeps the previous block."""

    policy_name = "policy-core"
    context_ref = CORE_REF
    context_title = "core memory"

    def initial_state(self) -> str:
        """An empty block."""
        return ""

    def fold(self, state: str, records: Sequence[Record]) -> str:
        """The block rewritten to take in ``records``."""
        limit = self.context_max_tokens
        user = f"Core memory block (at most {words_for(limit)} words):\n{state or '(empty)'}\n\n{NEW_RECORDS}\n{self.records_text(records)}"
        block, _ = self.ask(CORE_SYSTEM_PROMPT, user, limit)
        return block or state

    def render(self, state: str, span: tuple[int, int]) -> str:
        """The block as it is."""
        return state
