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

Waiting requests go out oldest question first (:func:`in_order`), and against a server that said how
many requests it serves (:meth:`ConnectionLimiter.fit`) a question keeps its place from its first request
to its end: its turns (and its judgments, one at a time) go out on that place, and a question that
started later waits for a place to be let go. Interleaving the turns of eight conversations on one slot
made each evict the others' cached prompt (llama.cpp reuses a slot's cached prefix), so every turn was
read again from its first token: measured on a 1-slot llama-server, the default concurrency took 1.28x
the wall time of one question at a time. Requests made outside :func:`in_order` (an adapter building its
memory, a serial run) take a place per request, by arrival.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_lens.llm.shared_slots import SharedSlots

__all__ = ["THROTTLE_STATUS", "ConnectionLimiter", "LimitChange", "in_order"]

#: HTTP statuses that mean "slow down": rate limited, unavailable, overloaded.
THROTTLE_STATUS = frozenset({429, 503, 529})


#: One order for every request and question of the process: a question's place in line is taken when it starts.
_ORDER = itertools.count()


@dataclass(eq=False)
class _Hold:
    """A question's place in line, and the place it holds on a limiter of a server that said its slots."""

    order: int
    #: One request of the question at a time goes out on its held place.
    lock: threading.Lock = field(default_factory=threading.Lock)
    limiter: ConnectionLimiter | None = None
    epoch: int = 0
    shared_held: int | None = None


#: The question being answered in this context (:func:`in_order`), else ``None``.
_HOLD: ContextVar[_Hold | None] = ContextVar("lens_question_hold", default=None)


@contextmanager
def in_order() -> Iterator[None]:
    """Requests made inside the block are one question's: in line by the block's start, on one place (see the module)."""
    hold = _Hold(next(_ORDER))
    token = _HOLD.set(hold)
    try:
        yield
    finally:
        _HOLD.reset(token)
        if hold.limiter is not None:
            hold.limiter._let_go(hold, throttled=False)


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
        hold = _HOLD.get()
        if hold is not None and self.fitted is not None:
            with self._held(hold, started) as waited:
                yield waited
            return
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

    @contextmanager
    def _held(self, hold: _Hold, started: float) -> Iterator[float]:
        """One request of ``hold``'s question on the place it keeps until its end (taken by its first request)."""
        with hold.lock:
            if hold.limiter is not self:
                if hold.limiter is not None:
                    hold.limiter._let_go(hold, throttled=False)
                shared = self.shared
                epoch, queued = self._acquire(then_shared=shared is not None, order=hold.order)
                held = None
                if shared is not None:
                    try:
                        held = self._acquire_shared(shared, queued=queued)
                    except BaseException:
                        self._release(epoch, throttled=False, succeeded=False)
                        raise
                hold.limiter, hold.epoch, hold.shared_held = self, epoch, held
            try:
                yield time.perf_counter() - started
            except BaseException as exc:
                # Let go of the place (a throttling answer halves the limit as for any request); the next request queues.
                self._let_go(hold, throttled=getattr(exc, "status_code", None) in THROTTLE_STATUS)
                raise

    def _let_go(self, hold: _Hold, *, throttled: bool) -> None:
        """Give back the place ``hold``'s question kept (and its shared place)."""
        if hold.limiter is not self:
            return
        if self.shared is not None and hold.shared_held is not None:
            self.shared.release(hold.shared_held)
        hold.limiter, hold.shared_held = None, None
        self._release(hold.epoch, throttled=throttled, succeeded=not throttled)

    def _acquire(self, *, then_shared: bool, order: int | None = None) -> tuple[int, bool]:
        """Take a place here: the limit's epoch then, and whether the request had to wait for it.

        ``then_shared``: the request waits for a shared place next, and counts as waiting until it has one.
        """
        arrival = next(_ORDER)
        if order is None:
            hold = _HOLD.get()
            order = arrival if hold is None else hold.order
        ticket = (order, arrival)
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
