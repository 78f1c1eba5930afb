"""How many LLM requests one process keeps in flight: a cap that adapts to the provider (``--lens-max-connections``).

Concurrent questions, and the judge's concurrent judgments within each, could otherwise
send dozens of requests at once. :class:`ConnectionLimiter` admits at most ``limit`` at a
time and moves ``limit`` between 1 and the configured maximum the way TCP congestion control
does (additive increase, multiplicative decrease):

- it starts at half the maximum;
- each time as many requests as the current limit have succeeded since the last change, the
  limit grows by one (the provider keeps up, so try one more);
- a 429 (rate limited), 503 or 529 (overloaded) halves it. A burst of such answers to requests
  sent under the same limit counts once: only a request admitted after the last decrease can
  trigger the next one.

When the server says how many requests it serves at once (llama.cpp's slots, see
:mod:`pytest_lens.llm.capacity`), :meth:`ConnectionLimiter.fit` makes that the maximum and the
limit: more in flight would only queue at the server, where waiting counts against each request's
timeout. The processes of one run (pytest-xdist workers) share those slots: with :meth:`ConnectionLimiter.share`
a request also holds one place of a :class:`~pytest_lens.llm.shared_slots.SharedSlots` while it is in flight,
and the time waited for it is queueing like the time waited here. When the server does not say, a timeout
(:attr:`ConnectionLimiter.timeout_types`) halves the limit like a 429: a server that cannot finish a
request in time while others are in flight is serving more than it can. Connection errors change
nothing: they say nothing about the provider's rate. The retry (with its own backoff and
``Retry-After``) is the caller's; the limiter only decides when a request may go out.

Waiting requests go out oldest question first (:func:`in_order`): a question's next turn goes out before the
first turn of a question that started after it, so the questions in flight finish in the order they started
instead of all advancing a turn at a time. Each request still takes a place of its own: a question does not keep
a place between its turns (that would hold the server's slot while the question waits on its memory, whose own
model requests, an LLM-backed adapter's, would then wait behind it). Requests made outside :func:`in_order` (an
adapter building its memory, a serial run) take their turn by arrival.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_lens.llm.shared_slots import SharedSlots

__all__ = ["THROTTLE_STATUS", "ConnectionLimiter", "LimitChange", "in_order"]

#: HTTP statuses that mean "slow down": rate limited, unavailable, overloaded.
THROTTLE_STATUS = frozenset({429, 503, 529})


#: One order for every request and question of the process: a question's place in line is taken when it starts.
_ORDER = itertools.count()


#: The place in line of the question being answered in this context (:func:`in_order`), else ``None``.
_QUESTION_ORDER: ContextVar[int | None] = ContextVar("lens_question_order", default=None)


@contextmanager
def in_order() -> Iterator[None]:
    """Requests made inside the block are one question's: in line by the block's start (oldest first)."""
    token = _QUESTION_ORDER.set(next(_ORDER))
    try:
        yield
    finally:
        _QUESTION_ORDER.reset(token)


@dataclass(frozen=True)
class LimitChange:
    """One change of the limit and why (``grow``, ``throttled`` or ``fit``)."""

    old: int
    new: int
    reason: str


class ConnectionLimiter:
    """At most :attr:`limit` requests in flight; the limit adapts between 1 and ``maximum``. Thread-safe."""

    def __init__(self, maximum: int) -> None:
        if maximum < 1:
            raise ValueError(f"the connection maximum must be at least 1, got {maximum}")
        self.maximum = maximum
        self._limit = max(1, maximum // 2)
        self._in_flight = 0
        self._peak = 0
        self._successes = 0
        self._epoch = 0
        self._changes: list[LimitChange] = []
        self._condition = threading.Condition()
        self._waiting = 0
        #: The waiting requests' (order, arrival): the smallest goes out first.
        self._queue: list[tuple[int, int]] = []
        #: Requests holding a place here that wait for a place shared with other processes (:meth:`share`).
        self._waiting_shared = 0
        #: The server's slots as the run's processes share them (:meth:`share`), else ``None``.
        self.shared: SharedSlots | None = None
        #: Exceptions that mean "timed out" (the endpoint sets the HTTP client's); they halve the limit until :meth:`fit`.
        self.timeout_types: tuple[type[BaseException], ...] = ()
        #: What the server said it serves at once (:meth:`fit`), else ``None``.
        self.fitted: int | None = None

    def __repr__(self) -> str:
        return f"ConnectionLimiter(limit={self.limit}, maximum={self.maximum})"

    @property
    def limit(self) -> int:
        """Requests admitted at once right now."""
        with self._condition:
            return self._limit

    @property
    def peak(self) -> int:
        """The most requests ever in flight at once."""
        with self._condition:
            return self._peak

    @property
    def in_flight(self) -> int:
        """Requests holding a place now (and the shared one, with :meth:`share`)."""
        with self._condition:
            return self._in_flight - self._waiting_shared

    @property
    def waiting(self) -> int:
        """Requests waiting for a place now (queued here or for a shared place, not at the server)."""
        with self._condition:
            return self._waiting + self._waiting_shared

    def fit(self, slots: int) -> None:
        """The server serves ``slots`` requests at once: keep no more in flight (and no fewer, up to the configured maximum)."""
        with self._condition:
            self.fitted = max(1, slots)
            self.maximum = min(self.maximum, self.fitted)
            self._change(self.maximum, "fit")
            self._condition.notify_all()

    def share(self, shared: SharedSlots | None) -> None:
        """From now on each request also holds one of ``shared``'s places, which other processes of the run hold too."""
        self.shared = shared

    @property
    def changes(self) -> list[LimitChange]:
        """Every change of the limit so far, oldest first."""
        with self._condition:
            return list(self._changes)

    @contextmanager
    def slot(self) -> Iterator[float]:
        """Hold one of the ``limit`` places for the request made inside the block; yields the seconds waited for it.

        Waits while the limit is reached. An exception with a ``status_code`` in
        :data:`THROTTLE_STATUS` (what the ``openai`` client raises) halves the limit, and so does
        one of :attr:`timeout_types` while the server's capacity is unknown (no :meth:`fit`).
        """
        started = time.perf_counter()
        shared, held = self.shared, None
        epoch, queued = self._acquire(then_shared=shared is not None)
        try:
            if shared is not None:
                held = self._acquire_shared(shared, queued=queued)
        except BaseException:
            self._release(epoch, throttled=False, succeeded=False)
            raise
        try:
            yield time.perf_counter() - started
        except BaseException as exc:
            throttled = getattr(exc, "status_code", None) in THROTTLE_STATUS or (
                self.fitted is None and bool(self.timeout_types) and isinstance(exc, self.timeout_types)
            )
            if shared is not None and held is not None:
                shared.release(held)
            self._release(epoch, throttled=throttled, succeeded=False)
            raise
        if shared is not None and held is not None:
            shared.release(held)
        self._release(epoch, throttled=False, succeeded=True)

    def _acquire(self, *, then_shared: bool) -> tuple[int, bool]:
        """Take a place here: the limit's epoch then, and whether the request had to wait for it.

        ``then_shared``: the request waits for a shared place next, and counts as waiting until it has one.
        """
        arrival = next(_ORDER)
        order = _QUESTION_ORDER.get()
        ticket = (arrival if order is None else order, arrival)
        with self._condition:
            self._waiting += 1
            heapq.heappush(self._queue, ticket)
            queued = self._in_flight >= self._limit or self._queue[0] != ticket
            try:
                while self._in_flight >= self._limit or self._queue[0] != ticket:
                    self._condition.wait()
            except BaseException:
                self._queue.remove(ticket)
                heapq.heapify(self._queue)
                self._waiting -= 1
                self._condition.notify_all()
                raise
            heapq.heappop(self._queue)
            self._waiting -= 1
            self._in_flight += 1
            self._condition.notify_all()  # the next in line may have a place too
            if then_shared:
                self._waiting_shared += 1
            else:
                self._peak = max(self._peak, self._in_flight)
            return self._epoch, queued

    def _acquire_shared(self, shared: SharedSlots, *, queued: bool) -> int:
        """Holding a place here, take a shared one (counted as waiting meanwhile); the descriptor that holds it."""
        try:
            held = shared.acquire(first_try_now=not queued)
        except BaseException:
            with self._condition:
                self._waiting_shared -= 1
            raise
        with self._condition:
            self._waiting_shared -= 1
            self._peak = max(self._peak, self._in_flight - self._waiting_shared)
        return held

    def _release(self, epoch: int, *, throttled: bool, succeeded: bool) -> None:
        with self._condition:
            self._in_flight -= 1
            if throttled and epoch == self._epoch:
                self._change(max(1, self._limit // 2), "throttled")
            elif succeeded:
                self._successes += 1
                if self._successes >= self._limit and self._limit < self.maximum:
                    self._change(self._limit + 1, "grow")
            self._condition.notify_all()

    def _change(self, new: int, reason: str) -> None:
        if new != self._limit:
            self._changes.append(LimitChange(self._limit, new, reason))
        self._limit = new
        self._successes = 0
        if reason == "throttled":
            self._epoch += 1  # requests admitted before this decrease cannot trigger another
