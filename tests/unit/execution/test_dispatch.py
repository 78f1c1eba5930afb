"""Running adapter calls on the owning thread for worker threads, and counting LLM requests per question."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_lens.execution.dispatch import Cancelled, OwnerThreadCalls
from pytest_lens.llm.stats import LLMStats, counting


def test_calls_from_workers_run_on_the_owning_thread_in_the_callers_context() -> None:
    calls = OwnerThreadCalls()
    process = LLMStats()
    ran_on: list[int] = []

    def work(n: int) -> int:
        def on_owner() -> int:
            ran_on.append(threading.get_ident())
            process.add(requests=n)  # e.g. an adapter asking the LLM during the call
            return n * 10

        with counting() as mine:
            value = calls.call(on_owner)
        assert mine.snapshot().requests == n  # counted for the worker that asked, not its neighbours
        return value

    finished: list[int] = []
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(work, n) for n in range(1, 9)]
        for future in futures:  # the owner learns of each completion through a posted notification
            future.add_done_callback(lambda _: calls.post(lambda: finished.append(1)))
        calls.serve_until(lambda: len(finished) == len(futures))
        assert [f.result() for f in futures] == [n * 10 for n in range(1, 9)]
    assert set(ran_on) == {threading.get_ident()}
    assert process.snapshot().requests == sum(range(1, 9))


def test_a_call_on_the_owning_thread_runs_at_once() -> None:
    calls = OwnerThreadCalls()
    assert calls.call(lambda: 42) == 42


def test_exceptions_reach_the_caller() -> None:
    calls = OwnerThreadCalls()

    def boom() -> None:
        raise ValueError("adapter bug")

    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(calls.call, boom)
        future.add_done_callback(lambda _: calls.post(lambda: None))
        calls.serve_until(future.done)
        with pytest.raises(ValueError, match="adapter bug"):
            future.result()


def test_closing_cancels_waiting_and_later_calls() -> None:
    calls = OwnerThreadCalls()
    waiting = threading.Event()

    def ask() -> None:
        waiting.set()
        calls.call(lambda: None)

    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(ask)
        waiting.wait()
        calls.close()  # whether the call was queued before or after, it is cancelled
        with pytest.raises(Cancelled):
            future.result()
        late = pool.submit(calls.call, lambda: None)
        with pytest.raises(Cancelled):
            late.result()
    calls.post(lambda: None)  # ignored once closed


def test_the_owners_own_work_waits_until_no_handed_over_call_does() -> None:
    calls = OwnerThreadCalls()
    order: list[str] = []
    calls.post(lambda: order.append("posted first"))
    calls.when_idle(lambda: order.append("idle"))
    calls.post(lambda: order.append("posted later"))
    calls.serve_until(lambda: len(order) == 3)
    assert order == ["posted first", "posted later", "idle"]
    with ThreadPoolExecutor(1) as pool:
        assert isinstance(pool.submit(calls.when_idle, lambda: None).exception(), RuntimeError)  # the owner's only


def test_serving_belongs_to_the_owner() -> None:
    calls = OwnerThreadCalls()
    with ThreadPoolExecutor(1) as pool, pytest.raises(RuntimeError, match="owns the calls"):
        pool.submit(calls.serve_until, lambda: True).result()


def test_counting_blocks_nest_and_follow_copied_contexts() -> None:
    import contextvars

    process = LLMStats()
    with counting() as outer:
        process.add(requests=1)
        with counting() as inner:
            process.add(requests=2, cache_hits=2)
            context = contextvars.copy_context()
        with ThreadPoolExecutor(1) as pool:
            pool.submit(context.run, process.add, requests=4).result()  # a judge thread given the question's context
            pool.submit(process.add, requests=8).result()  # a thread without it counts for the process only
    process.add(requests=16)
    assert inner.snapshot().requests == 6
    assert inner.snapshot().cache_hits == 2
    assert outer.snapshot().requests == 7
    assert process.snapshot().requests == 31


def test_the_owner_serves_waiting_calls_between_steps_of_its_own_work() -> None:
    calls = OwnerThreadCalls()
    served: list[str] = []

    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(calls.call, lambda: served.append("worker call") or "answered")
        steps = 0
        while not served:  # the owner's own slow work (streaming an instance), one step at a time
            steps += 1
            assert steps < 1000, "the worker's call was never served"
            time.sleep(0.01)
            calls.serve_waiting()
        assert future.result(10) == "answered"  # served between two steps, not after the owner's work
    calls.serve_waiting()  # nothing waiting: returns at once
    assert served == ["worker call"]

    with pytest.raises(RuntimeError, match="owns the calls"), ThreadPoolExecutor(1) as pool:
        pool.submit(calls.serve_waiting).result(10)
