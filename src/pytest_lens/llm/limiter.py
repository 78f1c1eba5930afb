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

Timeouts and connection errors change nothing: they say nothing about the provider's rate.
The retry (with its own backoff and ``Retry-After``) is the caller's; the limiter only decides
when a request may go out.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["THROTTLE_STATUS", "ConnectionLimiter", "LimitChange"]

#: HTTP statuses that mean "slow down": rate limited, unavailable, overloaded.
THROTTLE_STATUS = frozenset({429, 503, 529})


@dataclass(frozen=True)
class LimitChange:
    """One change of the limit and why (``grow`` or ``throttled``)."""

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
    def changes(self) -> list[LimitChange]:
        """Every change of the limit so far, oldest first."""
        with self._condition:
            return list(self._changes)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the ``limit`` places for the request made inside the block.

        Waits while the limit is reached. An exception with a ``status_code`` in
        :data:`THROTTLE_STATUS` (what the ``openai`` client raises) halves the limit.
        """
        epoch = self._acquire()
        try:
            yield
        except BaseException as exc:
            self._release(epoch, throttled=getattr(exc, "status_code", None) in THROTTLE_STATUS, succeeded=False)
            raise
        self._release(epoch, throttled=False, succeeded=True)

    def _acquire(self) -> int:
        with self._condition:
            while self._in_flight >= self._limit:
                self._condition.wait()
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)
            return self._epoch

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
