"""Memory policies (LENS V2): sqlite-hybrid's retrieval plus a block of context folded from the stream by the run's LLM.

- ``policy-core`` (:class:`CorePolicy`): one rolling core-memory block (Letta/MemGPT).
- ``policy-summary`` (:class:`SummaryPolicy`): a progressive summary.
- ``policy-faceted`` (:class:`FacetedPolicy`): entities, relations, events and causes folded in parallel, then merged.
"""

from __future__ import annotations

from lens_fixtures.adapters.policies.base import PolicyAdapter
from lens_fixtures.adapters.policies.core import CorePolicy
from lens_fixtures.adapters.policies.faceted import FacetedPolicy
from lens_fixtures.adapters.policies.summary import SummaryPolicy

__all__ = ["CorePolicy", "FacetedPolicy", "PolicyAdapter", "SummaryPolicy"]
