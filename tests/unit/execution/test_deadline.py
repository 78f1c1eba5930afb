"""One-time setup inside an adapter call does not count against --lens-call-timeout; the call's own work does."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest

from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult, outside_call_timeout
from pytest_lens.execution.calls import AdapterCaller, AdapterCallError
from pytest_lens.execution.deadline import untimed_seconds


class Staged(MemoryAdapter):
    """search() works ``before`` seconds, sets up for ``setup`` seconds (untimed), then works ``after`` seconds."""

    def __init__(self, before: float, setup: float, after: float) -> None:
        self.before, self.setup, self.after = before, setup, after

    def reset(self, scope_id: str) -> None: ...

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None: ...

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        time.sleep(self.before)
        with outside_call_timeout():
            time.sleep(self.setup)
        time.sleep(self.after)
        return []

    def retrieve(self, ref_id: str) -> Document | None:
        return None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest()


def test_setup_longer_than_the_timeout_is_allowed() -> None:
    before = untimed_seconds()
    assert AdapterCaller(Staged(0.0, 0.8, 0.05), "staged", timeout_s=0.3).search("q", None, 5) == []
    assert untimed_seconds() - before >= 0.8


def test_the_calls_own_work_still_times_out() -> None:
    with pytest.raises(AdapterCallError, match=r"no answer after 0\.3 s"):
        AdapterCaller(Staged(0.0, 0.0, 1.0), "staged", timeout_s=0.3).search("q", None, 5)


def test_the_timer_resumes_with_what_was_left_after_setup() -> None:
    """0.2 s of work, a paused setup, 0.2 s more: 0.4 s of work against a 0.3 s timeout fails."""
    with pytest.raises(AdapterCallError, match="timed out in search"):
        AdapterCaller(Staged(0.2, 0.5, 0.2), "staged", timeout_s=0.3).search("q", None, 5)


def test_outside_a_timed_call_it_does_nothing() -> None:
    with outside_call_timeout():
        time.sleep(0.01)


LOAD_IN_A_CALL = """
import sys, time
from pytest_lens.embedding import SentenceTransformerEmbedder
from pytest_lens import CapabilityManifest, Document, MemoryAdapter
from pytest_lens.execution.calls import AdapterCaller

class Embeds(MemoryAdapter):
    def reset(self, scope_id): pass
    def ingest(self, episode_id, scope_id, timestamp, text, meta=None):
        self.vectors = SentenceTransformerEmbedder().encode([])  # loads the model, encodes nothing
    def search(self, query, filters=None, limit=None): return []
    def retrieve(self, ref_id): return None
    def get_capabilities(self): return CapabilityManifest()

from pytest_lens.execution.deadline import untimed_seconds

AdapterCaller(Embeds(), "embeds", timeout_s=float(sys.argv[1])).ingest("e1", "s", "2025-01-01T00:00:00", "hello world", {})
print(f"{untimed_seconds():.2f}")
"""


def test_loading_the_real_model_in_a_fresh_process_does_not_time_the_first_ingest_out() -> None:
    """torch and MiniLM load (seconds idle, over a minute on a busy machine) inside an ingest with a 0.5 s timeout."""
    done = subprocess.run([sys.executable, "-c", LOAD_IN_A_CALL, "0.5"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.strip().splitlines()[-1]) > 0.5  # the load really took longer than the timeout
