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
instead of all advancing a turn at a time.

When the server says how many requests it serves at once (:meth:`ConnectionLimiter.fit`), as many *questions* as
it has slots talk to it at a time: a question takes a seat at its first request and keeps it until it ends, and
another question's first request waits for a free seat. A server with one slot then reads one conversation at a
time, whose prompt it keeps cached from turn to turn; interleaved, each question's turn evicted the other's and the
server read every prompt again (measured on ``llama-server`` with one slot: the default concurrency took 1.07x the
time of ``--lens-concurrency=1``). A seat is not a request's place: between its turns a question holds no place,
so requests made outside any question (an adapter building its memory, a judge's own threads, a serial run) and
requests made inside an adapter call (:func:`outside_question`) need no seat and go out as places free up. A
question waiting on its memory therefore never waits behind itself.
"""

from __future__ import annotations

import bisect
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

__all__ = ["THROTTLE_STATUS", "ConnectionLimiter", "LimitChange", "in_order", "outside_question"]

#: HTTP statuses that mean "slow down": rate limited, unavailable, overloaded.
THROTTLE_STATUS = frozenset({429, 503, 529})


#: One order for every request and question of the process: a question's place in line is taken when it starts.
_ORDER = itertools.count()


@dataclass(eq=False)
class _Question:
    """One question being answered (:func:`in_order`): its place in line and the limiters where it holds a seat."""

    order: int
    seated_at: list[ConnectionLimiter] = field(default_factory=list)


#: The question being answered in this context (:func:`in_order`), else ``None``.
_QUESTION: ContextVar[_Question | None] = ContextVar("lens_question", default=None)


@contextmanager
def in_order() -> Iterator[None]:
    """Requests made inside the block are one question's: in line by the block's start (oldest first).

    Where the server said its slots, the question holds a seat from its first request to the end of the block
    (see the module's text). Threads started with a copy of the context (a judge's) are the same question.
    """
    question = _Question(next(_ORDER))
    token = _QUESTION.set(question)
    try:
        yield
    finally:
        _QUESTION.reset(token)
        for limiter in list(question.seated_at):
            limiter._leave(question)


@contextmanager
def outside_question() -> Iterator[None]:
    """Requests made inside the block are nobody's question (an adapter call's): no seat, in line by arrival."""
    token = _QUESTION.set(None)
    try:
        yield
    finally:
        _QUESTION.reset(token)


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
        #: The waiting requests' (order, arrival), sorted: the first that may go goes out first.
        self._queue: list[tuple[int, int]] = []
        #: Each waiting request's question (``None``: nobody's).
        self._askers: dict[tuple[int, int], _Question | None] = {}
        #: Questions holding a seat (:meth:`fit`: at most :attr:`maximum` at once).
        self._seated: set[_Question] = set()
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
    def seated(self) -> int:
        """Questions holding a seat now (only once the server said its slots, :meth:`fit`)."""
        with self._condition:
            return len(self._seated)

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
        question = _QUESTION.get()
        ticket = (arrival if question is None else question.order, arrival)
        with self._condition:
            self._waiting += 1
            bisect.insort(self._queue, ticket)
            self._askers[ticket] = question
            queued = not self._may_go(ticket)
            try:
                while not self._may_go(ticket):
                    self._condition.wait()
            except BaseException:
                self._queue.remove(ticket)
                del self._askers[ticket]
                self._waiting -= 1
                self._condition.notify_all()
                raise
            self._queue.remove(ticket)
            del self._askers[ticket]
            if question is not None and self.fitted is not None and question not in self._seated:
                self._seated.add(question)
                question.seated_at.append(self)
            self._waiting -= 1
            self._in_flight += 1
            self._condition.notify_all()  # the next in line may have a place too
            if then_shared:
                self._waiting_shared += 1
            else:
                self._peak = max(self._peak, self._in_flight)
            return self._epoch, queued

    def _may_go(self, ticket: tuple[int, int]) -> bool:
        """A place is free and ``ticket`` is the first waiting request that may take it (with the lock held).

        A request may go unless it is the first of a question without a seat while every seat is taken; those
        behind it that may go (a seated question's next turn, a request of nobody's question) are not held up.
        """
        if self._in_flight >= self._limit:
            return False
        seats = len(self._seated)
        for waiting in self._queue:
            question = self._askers[waiting]
            if question is None or self.fitted is None or question in self._seated or seats < self.maximum:
                return waiting == ticket
        return False

    def _leave(self, question: _Question) -> None:
        """``question`` ended: its seat is free for the next question in line."""
        with self._condition:
            self._seated.discard(question)
            self._condition.notify_all()

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
