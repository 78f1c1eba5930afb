from __future__ import annotations

import pytest

from pytest_lens.contract.adapter import CapabilityManifest, ExtraTool, FilterField
from pytest_lens.contract.checks import validate_manifest
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
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


def test_a_view_via_another_thread_runs_every_call_there() -> None:
    import threading
    from collections.abc import Callable
    from typing import Any

    memory = RecordingMemory()
    ran: list[str] = []

    def on_worker(thunk: Callable[[], Any]) -> Any:
        outcome: list[object] = []
        worker = threading.Thread(target=lambda: outcome.append(thunk()), name="owner")
        worker.start()
        worker.join()
        ran.append(threading.current_thread().name)
        return outcome[0]

    view = AdapterCaller(memory, "rec").via(on_worker)
    memory.ingest("e1", "s", "2025-01-01T00:00:00", "pump pressure")
    assert [r.ref_id for r in view.search("pump", None, 5)] == ["e1"]
    assert view.retrieve("e1") is not None
    assert len(ran) == 2
    assert set(view.latencies) == {"search", "retrieve"}


def test_a_concurrent_view_still_times_out_off_the_main_thread() -> None:
    import threading
    import time

    caller = AdapterCaller(SlowSearch(), "slow", timeout_s=0.2).concurrent()
    failures: list[AdapterCallError] = []

    def search() -> None:
        try:
            caller.search("q", None, 1)
        except AdapterCallError as exc:
            failures.append(exc)

    started = time.perf_counter()
    worker = threading.Thread(target=search)
    worker.start()
    worker.join(10)
    assert time.perf_counter() - started < 5
    (failure,) = failures
    assert (failure.fault.method, failure.fault.kind) == ("search", "timeout")


def test_has_stats_only_for_adapters_that_report_counters() -> None:
    class Counting(RecordingMemory):
        def lens_stats(self) -> dict[str, int]:
            return {"n": 1}

    assert AdapterCaller(Counting(), "c").has_stats
    assert not AdapterCaller(RecordingMemory(), "r").has_stats  # the base class's empty default
    assert not AdapterCaller(object(), "o").has_stats
