from __future__ import annotations

import pytest

from pytest_lens.adapter import CapabilityManifest, ExtraTool, FilterField
from pytest_lens.calls import AdapterCaller, AdapterCallError, validate_manifest
from tests.support import RecordingMemory, SlowSearch, WrongSearchType


def test_a_hung_call_times_out_with_a_fault() -> None:
    caller = AdapterCaller(SlowSearch(), "slow", timeout_s=0.2)
    with pytest.raises(AdapterCallError) as info:
        caller.search("anything", None, 5)
    assert info.value.fault.kind == "timeout"
    assert "timed out in search(): no answer after 0.2 s" in str(info.value)


def test_wrong_return_types_are_named() -> None:
    with pytest.raises(AdapterCallError, match=r"returned a wrong value from search\(\): expected list\[SearchResult\], got dict"):
        AdapterCaller(WrongSearchType(), "bad").search("q", None, 5)


def test_duck_typed_and_dict_results_are_accepted() -> None:
    class Loose(RecordingMemory):
        def search(self, query, filters=None, limit=None):  # type: ignore[no-untyped-def]
            return [{"ref_id": "a", "text": "t", "score": 2}]

    (result,) = AdapterCaller(Loose(), "loose").search("q", None, 5)
    assert (result.ref_id, result.text, result.score, result.metadata) == ("a", "t", 2.0, {})


def test_meta_passed_to_ingest_is_a_copy() -> None:
    adapter = RecordingMemory()
    meta = {"k": 1}
    AdapterCaller(adapter, "m").ingest("e1", "s", "2025-01-01T00:00:00", "text", meta)
    adapter.store["e1"][2]["k"] = 2
    assert meta == {"k": 1}


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (CapabilityManifest(max_results_per_search=0), "max_results_per_search must be a positive int"),
        (CapabilityManifest(filter_fields=[FilterField("site", "text")]), "field_type 'text' is not one of"),
        (CapabilityManifest(filter_fields=[FilterField("kind", "enum")]), "an enum field needs enum_values"),
        (CapabilityManifest(extra_tools=[ExtraTool("memory_search", "x")]), r"not shadow a memory_\* tool"),
        (CapabilityManifest(extra_tools=[ExtraTool("bad name", "x")]), "must match"),
        (CapabilityManifest(extra_tools=[ExtraTool("t", "x", {"type": "array"})]), "JSON Schema with type 'object'"),
    ],
)
def test_manifest_validation_messages(manifest: CapabilityManifest, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        validate_manifest(manifest)
