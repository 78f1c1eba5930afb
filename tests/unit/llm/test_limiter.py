"""The adaptive connection limit: never more in flight than the limit, grows while requests succeed, halves on 429/503."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_lens.llm.limiter import ConnectionLimiter, LimitChange


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
