"""``manifest.valid``: the capability manifest validates and does not change between calls."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.samples import SampleEpisode
from pytest_lens.conformance.strategies import episode_lists, prose, scope_ids
from pytest_lens.contract.adapter import CapabilityManifest

__all__ = ["MANIFEST_VALID"]


@dataclass(frozen=True)
class ManifestExample:
    """A small stream; the manifest is read before, during and after it."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]


def _examples(manifest: CapabilityManifest) -> st.SearchStrategy[ManifestExample]:
    return st.builds(ManifestExample, scope_ids(), episode_lists(min_size=0, max_size=4, text=prose()))


def _check(context: ClauseContext, example: ManifestExample) -> None:
    with context.fresh() as subject:
        first = subject.capabilities()  # validated by AdapterCaller: an invalid manifest is a bad_return fault
        second = subject.capabilities()
        if first != second:
            raise ClauseViolation(f"two get_capabilities() calls in a row returned different manifests:\n  {first}\n  {second}")
        if first.extra_tools and not callable(getattr(subject.adapter, "call_extended_tool", None)):
            names = ", ".join(tool.name for tool in first.extra_tools)
            raise ClauseViolation(f"the manifest declares extra tools ({names}) but the adapter has no call_extended_tool()")
        subject.load(example.scope_id, example.episodes, prepare=False)
        subject.capabilities()
        subject.prepare(example.scope_id, len(example.episodes))
        subject.capabilities()


MANIFEST_VALID = Clause(
    id="manifest.valid",
    contract=(
        "get_capabilities() returns a manifest that validates (known filter types, enum values, a positive "
        "max_results_per_search, extra tools with object schemas and names that do not shadow memory_*), "
        "the same one when asked twice, before and after ingestion"
    ),
    method="get_capabilities",
    examples=_examples,
    check=_check,
    cost=0.4,
)
