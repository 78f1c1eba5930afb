"""What the suite costs an adapter that embeds: pooled texts, the expected duration said up front, progress while waiting."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

from examples.my_memory import DictMemory
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_lens.conformance.catalog import CLAUSES, find_clause
from pytest_lens.conformance.estimate import CALLS_PER_EXAMPLE, estimate_suite
from pytest_lens.conformance.profiles import clause_settings
from pytest_lens.conformance.strategies import MARKER_WORD, POOL_SIZE, long_texts, marked_prose, pooled_words, prose
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.conformance.verify import ConformanceConfig, verify_clause
from pytest_lens.contract.adapter import CapabilityManifest
from pytest_lens.records.settings import AdapterSpec
from tests.unit.conformance.conftest import QUICK


def drawn(strategy: st.SearchStrategy[str], examples: int = 400) -> list[str]:
    seen: list[str] = []

    @settings(max_examples=examples, database=None, deadline=None)
    @given(strategy)
    def collect(text: str) -> None:
        seen.append(text)

    collect()
    return seen


def test_prose_comes_from_a_bounded_pool_that_is_the_same_in_every_run() -> None:
    for strategy in (prose(), prose(1, 12), marked_prose(), marked_prose(8), long_texts()):
        texts = drawn(strategy)
        distinct = len(set(texts))
        # An unbounded strategy draws a new text nearly every time (400 draws, about 400 texts); a pooled one stops at
        # the pool (long texts: pooled prose or a Unicode piece, at one of three sizes).
        assert distinct <= POOL_SIZE * 4, (strategy, distinct)
    assert pooled_words(5, 0, 60) == pooled_words(5, 0, 60)


def test_the_pools_keep_what_clauses_rely_on() -> None:
    # every word count of the range is in the pool, from the shortest text (where shrinking goes) to the longest
    assert {len(pooled_words(index, 0, 40)) for index in range(POOL_SIZE)} == set(range(41))
    assert pooled_words(0, 3, 60) == pooled_words(0, 3, 3) and len(pooled_words(0, 3, 60)) == 3
    assert all(MARKER_WORD in text.split() for text in drawn(marked_prose(), 200))
    lengths = {len(text) for text in drawn(long_texts(), 200)}
    assert lengths == {5_000, 12_500, 20_000}
    assert any(not text.isascii() for text in drawn(long_texts(), 200))


class SlowIngest(DictMemory):
    """DictMemory whose ingest takes 200 ms more (an embedding model's call on a busy machine, say)."""

    def ingest(self, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.2)
        super().ingest(*args, **kwargs)


def factory(tmp_path: Path, target: str) -> SubjectFactory:
    return SubjectFactory(AdapterSpec(target.rpartition(":")[2], target, {}), tmp_path / target.replace(":", "_"))


def test_the_expected_duration_grows_with_what_the_adapters_first_calls_cost(tmp_path: Path) -> None:
    fast = estimate_suite(factory(tmp_path, "examples.my_memory:DictMemory"), CLAUSES, "ci", CapabilityManifest())
    slow = estimate_suite(factory(tmp_path, f"{__name__}:SlowIngest"), CLAUSES, "ci", CapabilityManifest())
    applicable = [clause for clause in CLAUSES if clause.not_applicable(CapabilityManifest(), lambda method: False) is None]
    assert fast.clauses == slow.clauses == len(applicable)
    assert fast.examples == sum(clause_settings("ci", clause.cost).max_examples for clause in applicable)
    assert slow.per_call["ingest"] >= 0.2 and slow.per_call["ingest again"] >= 0.2
    # 200 ms more per ingest, about four ingests an example (half of it, whatever else a busy machine adds to either)
    assert slow.seconds - fast.seconds >= 0.5 * 0.2 * CALLS_PER_EXAMPLE["ingest"] * slow.examples
    assert slow.low_seconds >= 0.2 * CALLS_PER_EXAMPLE["ingest"] * slow.examples  # a repeat costs it as much
    assert re.search(r"expected about \d+ (s|min).*ingest \d+ ms", slow.line())


class RefusesRepeatedIds(DictMemory):
    """A store that refuses an id it holds already, as FAISS and Chroma do ("Duplicate ids found")."""

    def ingest(self, episode_id: str, *args: Any, **kwargs: Any) -> None:
        if episode_id in self.episodes:
            raise ValueError(f"Duplicate ids found in the ids list: {episode_id}")
        super().ingest(episode_id, *args, **kwargs)


def test_the_probe_gives_every_episode_its_own_id(tmp_path: Path) -> None:
    # Issue 42: the probe ingested its new and its repeated texts under the same ids into one scope, and such a
    # store gave "no estimate: ... Duplicate ids found".
    estimate = estimate_suite(factory(tmp_path, f"{__name__}:RefusesRepeatedIds"), CLAUSES, "ci", CapabilityManifest())
    assert estimate.per_call["ingest"] >= 0 and estimate.per_call["ingest again"] >= 0 and estimate.seconds > 0


class StallsOnce(DictMemory):
    """The first ingest of the process takes 2.5 s (a model loading, a slow disk), the rest are instant."""

    stalled = threading.Event()

    def ingest(self, *args: Any, **kwargs: Any) -> None:
        if not StallsOnce.stalled.is_set():
            StallsOnce.stalled.set()
            time.sleep(2.5)
        super().ingest(*args, **kwargs)


def test_a_clause_waiting_on_one_long_call_still_reports_progress(tmp_path: Path) -> None:
    lines: list[str] = []
    config = ConformanceConfig(QUICK, progress=lines.append, progress_interval_s=0.3)
    outcome = verify_clause(find_clause("retrieve.roundtrip"), factory(tmp_path, f"{__name__}:StallsOnce"), config)
    assert outcome.status == "passed", outcome.message
    # Nothing but the waiting thread could speak during the 2.5 s call: it did, naming how long the example had run.
    waiting = [line for line in lines if "this example for" in line]
    assert waiting, lines
    assert re.match(r"lens conformance: retrieve\.roundtrip \[StallsOnce\]: example 1 of 8, this example for \d+ s, [\d.]+ s$", waiting[0])


