"""The adaptive connection limit: never more in flight than the limit, grows while requests succeed, halves on 429/503."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from pytest_lens.llm.limiter import ConnectionLimiter, LimitChange, in_order, outside_question


class Status(Exception):
    """What the openai client raises for an HTTP error: an exception with ``status_code``."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


def succeed(limiter: ConnectionLimiter, times: int = 1) -> None:
    for _ in range(times):
        with limiter.slot():
            pass


def fail(limiter: ConnectionLimiter, status: int) -> None:
    with pytest.raises(Status), limiter.slot():
        raise Status(status)


def test_starts_at_half_the_maximum_and_grows_by_one_per_window_of_successes() -> None:
    limiter = ConnectionLimiter(8)
    assert limiter.limit == 4
    succeed(limiter, 3)
    assert limiter.limit == 4  # not yet a full window (4 successes)
    succeed(limiter)
    assert limiter.limit == 5
    succeed(limiter, 5)
    assert limiter.limit == 6
    succeed(limiter, 6 + 7 + 8 * 3)
    assert limiter.limit == 8  # never above the maximum
    assert [change.reason for change in limiter.changes] == ["grow"] * 4


@pytest.mark.parametrize("status", [429, 503, 529])
def test_a_throttling_answer_halves_the_limit(status: int) -> None:
    limiter = ConnectionLimiter(16)
    assert limiter.limit == 8
    fail(limiter, status)
    assert limiter.limit == 4
    assert limiter.changes == [LimitChange(8, 4, "throttled")]


@pytest.mark.parametrize("status", [400, 404, 500, 502])
def test_other_failures_change_nothing(status: int) -> None:
    limiter = ConnectionLimiter(16)
    fail(limiter, status)
    with pytest.raises(TimeoutError), limiter.slot():
        raise TimeoutError("no answer")
    assert limiter.limit == 8
    assert limiter.changes == []


def test_a_burst_of_429s_to_requests_sent_under_one_limit_halves_it_once() -> None:
    limiter = ConnectionLimiter(16)
    entered = threading.Barrier(8)
    release = threading.Event()

    def rate_limited() -> None:
        try:
            with limiter.slot():
                entered.wait()
                release.wait()
                raise Status(429)
        except Status:
            pass

    threads = [threading.Thread(target=rate_limited) for _ in range(8)]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join()
    assert limiter.limit == 4  # 8 -> 4 once, not 8 -> 4 -> 2 -> 1
    fail(limiter, 429)  # a request admitted after the decrease may decrease again
    assert limiter.limit == 2
    fail(limiter, 429)
    fail(limiter, 429)
    assert limiter.limit == 1  # never below one


def test_never_more_requests_in_flight_than_the_limit() -> None:
    limiter = ConnectionLimiter(6)  # starts at 3
    in_flight = 0
    most = 0
    lock = threading.Lock()

    def request() -> None:
        nonlocal in_flight, most
        with limiter.slot():
            with lock:
                in_flight += 1
                most = max(most, in_flight)
            time.sleep(0.01)
            with lock:
                in_flight -= 1

    threads = [threading.Thread(target=request) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most <= 6
    assert limiter.peak == most
    assert most >= 3  # the limit is reached: requests did overlap
    assert limiter.limit == 6  # 24 successes grew it to the maximum


def test_the_maximum_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ConnectionLimiter(0)
    assert ConnectionLimiter(1).limit == 1


def test_an_endpoint_answering_429_shrinks_the_limit_and_the_retries_still_succeed() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from lens_fixtures.openai_server import Fault, OpenAITestServer
    from pytest_lens.llm.client import LLMEndpoint
    from pytest_lens.llm.stats import LLMStats

    stats = LLMStats()
    with OpenAITestServer(faults=[Fault("status", status=429, retry_after_ms=10)]) as server:  # every first attempt
        endpoint = LLMEndpoint(server.base_url, api_key_env="LENS_TEST_KEY", retries=2, max_connections=8)
        requests = [{"model": "scripted", "messages": [{"role": "user", "content": f"question {n}"}]} for n in range(12)]
        with ThreadPoolExecutor(6) as pool:
            replies = list(pool.map(lambda request: endpoint.create(request, stats), requests))
        assert server.count(status=429) == 12
    assert len(replies) == 12
    assert stats.snapshot().retries == 12
    throttles = [change for change in endpoint.limiter.changes if change.reason == "throttled"]
    assert throttles
    assert throttles[0] == LimitChange(4, 2, "throttled")
    assert endpoint.limiter.peak <= 4  # the limit starts at half of --lens-max-connections


def test_fitting_to_the_servers_slots_sets_the_limit_and_timeouts_no_longer_halve_it() -> None:
    limiter = ConnectionLimiter(16)
    limiter.timeout_types = (TimeoutError,)
    limiter.fit(4)
    assert limiter.limit == limiter.maximum == 4
    with pytest.raises(TimeoutError), limiter.slot():
        raise TimeoutError
    assert limiter.limit == 4  # the server said 4: a timeout is a slow answer, not an overloaded server


def test_a_timeout_halves_the_limit_when_the_capacity_is_unknown() -> None:
    limiter = ConnectionLimiter(16)
    limiter.timeout_types = (TimeoutError,)
    with pytest.raises(TimeoutError), limiter.slot():
        raise TimeoutError
    assert limiter.changes == [LimitChange(8, 4, "throttled")]


def two_questions(limiter: ConnectionLimiter) -> list[str]:
    """Question A (started first) makes two requests; B starts after A's first and asks while A works between turns."""
    served: list[str] = []
    a_between, b_waiting = threading.Event(), threading.Event()

    def a() -> None:
        with in_order():
            with limiter.slot():
                served.append("A1")
            a_between.set()
            b_waiting.wait(10)
            time.sleep(0.1)  # A works on its first reply (a tool call) while B asks for a place
            with limiter.slot():
                served.append("A2")

    def b() -> None:
        a_between.wait(10)
        with in_order():
            b_waiting.set()
            with limiter.slot():
                served.append("B1")

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return served


def test_without_the_servers_slots_each_request_takes_a_place_of_its_own() -> None:
    # Capacity unknown: a question keeps nothing between its turns, so B goes out while A works on its first reply.
    limiter = ConnectionLimiter(2)
    assert limiter.limit == 1
    assert two_questions(limiter) == ["A1", "B1", "A2"]


def test_a_one_slot_server_reads_one_question_at_a_time() -> None:
    # The server said 1 slot: A holds the seat from its first request to its end, so its turns follow each other
    # (the server keeps A's prompt cached) and B's first request waits for A to end.
    limiter = ConnectionLimiter(8)
    limiter.fit(1)
    assert two_questions(limiter) == ["A1", "A2", "B1"]
    assert limiter.seated == 0  # both ended: no seat is left taken


def test_a_seated_question_waiting_on_its_memory_is_not_waited_for_by_it() -> None:
    # One slot, question A seated. Between its turns A waits on its memory, which asks the model itself (from an
    # adapter call: outside any question, or from another thread). That request must go out, or A waits forever.
    limiter = ConnectionLimiter(4)
    limiter.fit(1)
    served: list[str] = []
    b_waiting = threading.Event()

    def memory_asks_the_model() -> None:
        with limiter.slot():
            served.append("memory")

    def a() -> None:
        with in_order():
            with limiter.slot():
                served.append("A1")
            b_waiting.wait(10)  # B is in line for the seat before A's memory asks
            with outside_question():  # an adapter call on A's own thread (a thread-safe adapter)
                memory_asks_the_model()
            other = threading.Thread(target=memory_asks_the_model)  # one on the adapter's own thread
            other.start()
            other.join(10)
            with limiter.slot():
                served.append("A2")

    def b() -> None:
        with in_order():
            b_waiting.set()
            with limiter.slot():
                served.append("B1")

    first = threading.Thread(target=a)
    first.start()
    deadline = time.monotonic() + 10
    while limiter.seated < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    second = threading.Thread(target=b)
    second.start()
    for thread in (first, second):
        thread.join(10)
    assert not first.is_alive() and not second.is_alive()
    assert served == ["A1", "memory", "memory", "A2", "B1"]


def test_seats_go_to_the_oldest_question_and_free_up_when_a_question_fails() -> None:
    limiter = ConnectionLimiter(8)
    limiter.fit(1)
    served: list[str] = []
    a_seated, release = threading.Event(), threading.Event()
    started = {name: threading.Event() for name in "BC"}

    def fail_between_turns() -> None:
        with in_order():
            with limiter.slot():
                served.append("A1")
            a_seated.set()
            release.wait(10)
            raise RuntimeError("the question failed between its turns")

    def a() -> None:
        with pytest.raises(RuntimeError, match="between its turns"):
            fail_between_turns()

    def asker(name: str, after: threading.Event) -> Callable[[], None]:
        def ask() -> None:
            after.wait(10)
            with in_order():
                started[name].set()
                time.sleep(0.05)  # C starts after B but may ask first
                with limiter.slot():
                    served.append(name)

        return ask

    threads = [threading.Thread(target=a), threading.Thread(target=asker("B", a_seated)), threading.Thread(target=asker("C", started["B"]))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while limiter.waiting < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert limiter.waiting == 2 and limiter.seated == 1
    release.set()
    for thread in threads:
        thread.join(10)
    assert served == ["A1", "B", "C"]
    assert limiter.seated == 0


def test_waiting_requests_go_out_oldest_question_first() -> None:
    limiter = ConnectionLimiter(2)  # limit 1, capacity unknown: a place per request
    served: list[str] = []
    holding, release = threading.Event(), threading.Event()
    older_started, younger_waiting = threading.Event(), threading.Event()

    def holder() -> None:
        with limiter.slot():
            holding.set()
            release.wait(10)

    def older() -> None:
        with in_order():
            older_started.set()
            younger_waiting.wait(10)
            time.sleep(0.05)
            with limiter.slot():
                served.append("older")

    def younger() -> None:
        older_started.wait(10)
        with in_order():
            younger_waiting.set()
            with limiter.slot():
                served.append("younger")

    first = threading.Thread(target=holder)
    first.start()
    assert holding.wait(10)
    threads = [threading.Thread(target=older), threading.Thread(target=younger)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while limiter.waiting < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert limiter.waiting == 2  # the younger question asked first, the older one after it
    release.set()
    for thread in [first, *threads]:
        thread.join(10)
    assert served == ["older", "younger"]


def test_a_waiter_that_gives_up_leaves_the_line() -> None:
    limiter = ConnectionLimiter(2)
    holding, stop = threading.Event(), threading.Event()

    def hold() -> None:
        with limiter.slot():
            holding.set()
            stop.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)

    class GiveUp(Exception):
        pass

    original = limiter._condition.wait

    def interrupted(timeout: float | None = None) -> bool:
        limiter._condition.wait = original  # type: ignore[method-assign]
        raise GiveUp  # as a signal would, from inside the wait

    limiter._condition.wait = interrupted  # type: ignore[method-assign]
    with pytest.raises(GiveUp), limiter.slot():
        pass
    assert limiter.waiting == 0
    stop.set()
    holder.join(10)
    with limiter.slot():  # the line is empty again: the next request goes out at once
        pass
