"""Concurrent answering (``--lens-concurrency``) gives exactly the serial results, and keeps adapters safe.

Sessions here are the core's :class:`~pytest_lens.runs.session.LensSession`, driven the way the
plugin drives it (plan the selected cases, run them one by one), with real adapters and data.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_lens.answering.concurrency import MAX_INSTANCES
from pytest_lens.datasets.bundled import bundled_dataset_paths
from pytest_lens.llm.settings import LLMSettings
from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import QuestionResult
from pytest_lens.records.settings import AdapterSpec, LensSettings
from pytest_lens.runs.session import LensSession
from tests.support import COLD_CHAIN_DEMO, RecordingMemory, SlowSearch

BUNDLED = next(p for p in bundled_dataset_paths() if p.name.startswith("cascading"))

#: Calls of every instance of the adapters below: (instance number, thread id, call).
LOG: list[tuple[int, int, tuple[Any, ...]]] = []
_INSTANCES = iter(range(10**9))


class Logged(RecordingMemory):
    """A keyword memory that logs which instance made which call, on which thread, and counts its searches."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.number = next(_INSTANCES)
        self.searches = 0
        self.ingests = 0

    def _log(self, *call: Any) -> None:
        LOG.append((self.number, threading.get_ident(), call))

    def reset(self, scope_id: str) -> None:
        self._log("reset", scope_id)
        super().reset(scope_id)

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        self._log("ingest", episode_id)
        self.ingests += 1
        super().ingest(episode_id, scope_id, timestamp, text, meta)

    def prepare(self, scope_id: str, checkpoint: int) -> None:
        self._log("prepare", checkpoint)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> Any:
        self._log("search", query)
        self.searches += 1
        time.sleep(0.002)  # long enough for questions to overlap
        return super().search(query, filters, limit)

    def lens_stats(self) -> dict[str, int]:
        return {"searches": self.searches, "ingested": self.ingests}  # cumulative, as lens_stats() should be


class IsolatedLogged(Logged):
    lens_isolated_instances = True


class ThreadSafeLogged(IsolatedLogged):
    lens_thread_safe = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._lock = threading.Lock()

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> Any:
        with self._lock:
            self.searches += 1
        self._log("search", query)
        time.sleep(0.002)
        return RecordingMemory.search(self, query, filters, limit)


class Unavailable(RecordingMemory):
    def __init__(self) -> None:
        from pytest_lens import AdapterUnavailable

        raise AdapterUnavailable("no backend here")


class SlowThreadSafe(SlowSearch):
    lens_thread_safe = True


def open_session(
    tmp_path: Path, target: str, *, concurrency: int, datasets: Sequence[Path] = (COLD_CHAIN_DEMO,), **extra: Any
) -> LensSession:
    settings = LensSettings(
        adapters=(AdapterSpec("mem", target),),
        datasets=tuple(datasets),
        agent="offline",
        concurrency=concurrency,
        llm=LLMSettings(judge="offline"),
        rootdir=tmp_path,
        **extra,
    )
    return LensSession.open(settings)


def answers(
    tmp_path: Path, target: str, concurrency: int, *, select: Any = None, order: Any = None, **extra: Any
) -> dict[tuple[str, ...], QuestionResult]:
    """Run the selected cases as the plugin would (plan, then one test per case, in ``order``)."""
    session = open_session(tmp_path, target, concurrency=concurrency, **extra)
    cases = [case for case in session.cases if select is None or select(case)]
    session.plan(cases)
    runtime = session.new_runtime(tmp_path / f"storage-{concurrency}-{random.random()}")
    try:
        return {case.key: session.run(case, runtime) for case in (order(cases) if order else cases)}
    finally:
        session.close_runtime(runtime)


def comparable(result: QuestionResult) -> dict[str, Any]:
    """Everything but the timings."""
    data = result.model_dump(mode="json", exclude={"duration_s"})
    for call in data["tool_calls"]:
        call.pop("duration_ms")
    return data


@pytest.fixture(autouse=True)
def fresh_log() -> Iterator[None]:
    LOG.clear()
    yield
    LOG.clear()


TARGETS = {
    "bm25 (isolated instances)": "bm25",
    "one instance, owner thread only": f"{__name__}:Logged",
    "isolated instances": f"{__name__}:IsolatedLogged",
    "thread-safe": f"{__name__}:ThreadSafeLogged",
    "example DictMemory": "examples.my_memory:DictMemory",
}


@pytest.mark.parametrize("target", TARGETS.values(), ids=TARGETS.keys())
def test_results_equal_the_serial_run(tmp_path: Path, target: str) -> None:
    serial = answers(tmp_path, target, 1, datasets=(COLD_CHAIN_DEMO, BUNDLED))
    concurrent = answers(tmp_path, target, 8, datasets=(COLD_CHAIN_DEMO, BUNDLED))
    assert list(concurrent) == list(serial)
    assert len(serial) == 8 + 24
    # A thread-safe adapter's counters are all charged to each checkpoint's first question (see the next tests).
    shared_counters = target.endswith("ThreadSafeLogged")
    for key, result in serial.items():
        assert comparable(concurrent[key]) | ({"adapter_stats": None} if shared_counters else {}) == comparable(result) | (
            {"adapter_stats": None} if shared_counters else {}
        ), key
    assert any(r.metrics.get("evidence_grounding") for r in serial.values())  # real answers, not empty ones
    assert any("answer_quality" in r.metrics for r in serial.values())  # the offline judge scored them


def test_calls_of_an_undeclared_adapter_stay_on_its_own_thread(tmp_path: Path) -> None:
    answers(tmp_path, f"{__name__}:Logged", 8)
    # One thread: the adapter's own, which every call is handed to (so a hung call can be abandoned).
    (thread,) = {thread for _, thread, _ in LOG}
    assert thread != threading.get_ident()
    assert {instance for instance, _, _ in LOG} == {min(i for i, _, _ in LOG)}  # one instance: not declared isolated


def test_a_thread_safe_adapter_is_searched_from_worker_threads(tmp_path: Path) -> None:
    answers(tmp_path, f"{__name__}:ThreadSafeLogged", 8)
    search_threads = {thread for _, thread, call in LOG if call[0] == "search"}
    for instance in {number for number, _, _ in LOG}:  # each instance is streamed on its own thread (as it was built)
        stream_threads = {thread for number, thread, call in LOG if number == instance and call[0] in ("reset", "ingest", "prepare")}
        assert len(stream_threads) <= 1 and threading.get_ident() not in stream_threads
    assert threading.get_ident() not in search_threads
    assert len(search_threads) > 1


def test_isolated_instances_replay_the_stream_a_single_instance_would_have_seen(tmp_path: Path) -> None:
    results = answers(tmp_path, f"{__name__}:IsolatedLogged", 8, datasets=(BUNDLED,))
    instances = sorted({instance for instance, _, _ in LOG})
    assert 1 < len(instances) <= MAX_INSTANCES
    checkpoints = sorted({result.checkpoint for result in results.values()})  # all selected
    assert len(checkpoints) > MAX_INSTANCES
    for instance in instances:
        calls = [call for number, _, call in LOG if number == instance and call[0] != "search"]
        prepared = [call[1] for call in calls if call[0] == "prepare"]
        assert prepared == checkpoints[: len(prepared)]  # every checkpoint on the way, in order
        ingested = [call[1] for call in calls if call[0] == "ingest"]
        assert len(ingested) == len(set(ingested)) == prepared[-1]  # exactly the first N episodes, each once
        assert calls[0] == ("reset", "cascading_failure_s01")


class SlowIsolated(IsolatedLogged):
    """Isolated instances whose searches take a while, counting how many run at once, per instance and in all."""

    lock = threading.Lock()
    running: ClassVar[dict[int, int]] = {}
    most: ClassVar[dict[str, int]] = {"instance": 0, "all": 0}

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> Any:
        cls = SlowIsolated
        with cls.lock:
            cls.running[self.number] = cls.running.get(self.number, 0) + 1
            cls.most["instance"] = max(cls.most["instance"], cls.running[self.number])
            cls.most["all"] = max(cls.most["all"], sum(cls.running.values()))
        try:
            self._log("search", query)
            time.sleep(0.03)
            return RecordingMemory.search(self, query, filters, limit)
        finally:
            with cls.lock:
                cls.running[self.number] -= 1


def test_instances_at_different_checkpoints_are_searched_at_once_each_by_one_question_at_a_time(tmp_path: Path) -> None:
    SlowIsolated.running.clear()
    SlowIsolated.most.update(instance=0, all=0)
    concurrent = answers(tmp_path, f"{__name__}:SlowIsolated", 8, datasets=(BUNDLED,))
    # Workers hand their calls to each instance's own thread: not one at a time through the owning thread...
    assert SlowIsolated.most["all"] > 1
    # ...and never two calls at once on one instance (it did not declare itself thread-safe).
    assert SlowIsolated.most["instance"] == 1
    for _, thread, call in LOG:
        assert thread != threading.get_ident(), call  # every call on an instance's own thread
    serial = answers(tmp_path, f"{__name__}:SlowIsolated", 1, datasets=(BUNDLED,))
    assert {key: comparable(r) for key, r in concurrent.items()} == {key: comparable(r) for key, r in serial.items()}


class GatedIsolated(IsolatedLogged):
    """The first instance's searches wait until another instance has begun streaming (they say whether it did)."""

    first: ClassVar[int | None] = None
    streaming = threading.Event()
    waits: ClassVar[list[bool]] = []

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if GatedIsolated.first is None:
            GatedIsolated.first = self.number

    def reset(self, scope_id: str) -> None:
        if self.number != GatedIsolated.first:
            GatedIsolated.streaming.set()
        super().reset(scope_id)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> Any:
        if self.number == GatedIsolated.first:
            GatedIsolated.waits.append(GatedIsolated.streaming.wait(5))
        return super().search(query, filters, limit)


def test_replicas_are_streamed_a_round_ahead_without_holding_up_running_questions(tmp_path: Path) -> None:
    # The first checkpoint's three questions fill a pool of three and their searches wait for the next checkpoint's
    # instance to be streamed: it is, a round ahead (with no thread free for its questions yet), and meanwhile the
    # searches run (on the first instance's own thread, not held up behind the streaming).
    serial = answers(tmp_path, f"{__name__}:IsolatedLogged", 1, datasets=(BUNDLED,))
    GatedIsolated.first = None
    GatedIsolated.streaming.clear()
    GatedIsolated.waits.clear()
    concurrent = answers(tmp_path, f"{__name__}:GatedIsolated", 3, datasets=(BUNDLED,))
    assert GatedIsolated.waits and all(GatedIsolated.waits)
    assert {key: comparable(r) for key, r in concurrent.items()} == {key: comparable(r) for key, r in serial.items()}


def test_a_subset_sees_exactly_the_first_n_episodes_and_equals_the_serial_subset(tmp_path: Path) -> None:
    def late(case: LensCase) -> bool:  # like -k: only the last two checkpoints' questions
        return case.checkpoint >= 112

    serial = answers(tmp_path, f"{__name__}:IsolatedLogged", 1, select=late, datasets=(BUNDLED,))
    serial_prepares = [call[1] for _, _, call in LOG if call[0] == "prepare"]
    LOG.clear()
    concurrent = answers(tmp_path, f"{__name__}:IsolatedLogged", 8, select=late, datasets=(BUNDLED,))
    assert serial_prepares == [112, 120]
    for instance in {number for number, _, _ in LOG}:
        assert [call[1] for number, _, call in LOG if number == instance and call[0] == "prepare"] in ([112], [112, 120])
    assert {key: comparable(r) for key, r in concurrent.items()} == {key: comparable(r) for key, r in serial.items()}


def test_any_test_order_gives_the_same_results(tmp_path: Path) -> None:
    def shuffled(cases: list[LensCase]) -> list[LensCase]:
        return random.Random(7).sample(cases, len(cases))

    ordered = answers(tmp_path, "bm25", 8, datasets=(BUNDLED,))
    reordered = answers(tmp_path, "bm25", 8, order=shuffled, datasets=(BUNDLED,))
    serial_reordered = answers(tmp_path, "bm25", 1, order=shuffled, datasets=(BUNDLED,))
    assert list(reordered) != list(ordered)
    for key, result in ordered.items():
        assert comparable(reordered[key]) == comparable(result) == comparable(serial_reordered[key])


def test_adapter_counters_are_charged_per_question_as_serially(tmp_path: Path) -> None:
    serial = answers(tmp_path, f"{__name__}:Logged", 1, datasets=(BUNDLED,))
    concurrent = answers(tmp_path, f"{__name__}:Logged", 8, datasets=(BUNDLED,))
    assert [r.adapter_stats for r in concurrent.values()] == [r.adapter_stats for r in serial.values()]
    assert sum(r.adapter_stats["ingested"] for r in serial.values()) == 120  # ingestion charged to each checkpoint's first
    assert all(r.adapter_stats["searches"] >= 1 for r in serial.values())


def test_a_thread_safe_adapters_counters_go_to_each_checkpoints_first_question(tmp_path: Path) -> None:
    serial = answers(tmp_path, f"{__name__}:ThreadSafeLogged", 1, datasets=(BUNDLED,))
    concurrent = answers(tmp_path, f"{__name__}:ThreadSafeLogged", 8, datasets=(BUNDLED,))
    for name in ("searches", "ingested"):
        assert sum(r.adapter_stats[name] for r in concurrent.values()) == sum(r.adapter_stats[name] for r in serial.values())
    firsts = {}
    for key, result in concurrent.items():
        firsts.setdefault(result.checkpoint, key)
        if firsts[result.checkpoint] != key:
            assert result.adapter_stats == {"searches": 0, "ingested": 0}


def test_an_unavailable_adapters_questions_are_skipped(tmp_path: Path) -> None:
    results = answers(tmp_path, f"{__name__}:Unavailable", 8)
    assert len(results) == 8
    assert {r.skipped for r in results.values()} == {"no backend here"}


def test_call_timeouts_hold_on_the_owning_thread(tmp_path: Path) -> None:
    started = time.perf_counter()
    results = answers(tmp_path, "tests.support:SlowSearch", 8, call_timeout=0.3, select=lambda c: c.checkpoint <= 8)
    assert results
    # The first search outlives the timeout and never ends (a 30 s sleep): it is abandoned, and so is the adapter,
    # so every other question fails at once with the same fault instead of waiting out the timeout again.
    faults = [[(f.method, f.kind) for f in result.faults] for result in results.values()]
    assert sorted(faults) == [[("search", "abandoned")]] * (len(faults) - 1) + [[("search", "timeout")]], faults
    assert time.perf_counter() - started < 20  # the search was cut at 0.3 s (and a grace), not left to sleep 30 s


def test_call_timeouts_hold_for_thread_safe_adapters_too(tmp_path: Path) -> None:
    results = answers(tmp_path, f"{__name__}:SlowThreadSafe", 8, call_timeout=0.3, select=lambda c: c.checkpoint <= 8)
    assert results
    for result in results.values():
        assert [(f.method, f.kind) for f in result.faults] == [("search", "timeout")]


def test_a_scorer_bug_fails_its_question_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_lens.judging.judge_scorer import JudgeScorer

    original = JudgeScorer.score

    def flaky(self: JudgeScorer, case: LensCase, answer: str, metrics: Any) -> Any:
        if "_q03_" in case.question.question_id:
            raise RuntimeError("scorer bug")
        return original(self, case, answer, metrics)

    monkeypatch.setattr(JudgeScorer, "score", flaky)
    session = open_session(tmp_path, "bm25", concurrency=8)
    session.plan(session.cases)
    runtime = session.new_runtime(tmp_path / "storage")
    outcomes = {}
    for case in session.cases:
        try:
            outcomes[case.question.question_id] = session.run(case, runtime).composite
        except RuntimeError as exc:
            outcomes[case.question.question_id] = str(exc)
    session.close_runtime(runtime)
    assert [q for q, outcome in outcomes.items() if outcome == "scorer bug"] == [q for q in outcomes if "_q03_" in q]
    assert sum(isinstance(outcome, float) for outcome in outcomes.values()) == 7


def test_closing_mid_stream_stops_cleanly(tmp_path: Path) -> None:
    session = open_session(tmp_path, f"{__name__}:Logged", concurrency=8, datasets=(BUNDLED,))
    session.plan(session.cases)
    runtime = session.new_runtime(tmp_path / "storage")
    first = session.run(session.cases[0], runtime)  # like -x after the first question
    assert first.answer
    session.close_runtime(runtime)
    searches = sum(1 for _, _, call in LOG if call[0] == "search")
    time.sleep(0.2)
    assert sum(1 for _, _, call in LOG if call[0] == "search") == searches  # nothing runs after the close


def test_concurrency_defaults_to_the_agents_and_one_for_the_offline_agent(tmp_path: Path) -> None:
    assert open_session(tmp_path, "bm25", concurrency=None).setup.concurrency == 1  # type: ignore[arg-type]
    assert open_session(tmp_path, "bm25", concurrency=3).setup.concurrency == 3
    from pytest_lens.agents.llm import LLMAgent

    assert LLMAgent.default_concurrency == 8
