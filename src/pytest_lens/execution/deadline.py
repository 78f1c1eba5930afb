"""The per-call deadline of adapter calls (``--lens-call-timeout``) and its one allowance: one-time setup.

:class:`~pytest_lens.execution.calls.AdapterCaller` runs each adapter call on a thread of the adapter's own and waits for it
until the call's :class:`CallClock` runs out; a call that outlives it is abandoned, whatever the adapter catches. An
adapter doing one-time work inside a call that has nothing to do with the call itself (loading an embedding model on
first use, say) wraps it in :func:`outside_call_timeout`: the clock pauses for the block and resumes with the time
that was left. A model that takes a minute to load on a busy machine then does not fail whichever ``ingest``
happened to need it first, while every call's own work stays bounded by the timeout.

Stdlib only: adapters import it from :mod:`pytest_lens`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pytest_lens.progress import WAIT_TICK_S, waiting_tick

__all__ = ["CallClock", "outside_call_timeout", "running_on", "untimed_seconds"]

_untimed_s = 0.0
_running = threading.local()


class CallClock:
    """The deadline of one adapter call: the waiting thread :meth:`wait` s, the calling thread :meth:`finish` es.

    ``timeout_s=None`` never runs out. The call's own thread may pause the clock (:func:`outside_call_timeout`).
    """

    def __init__(self, timeout_s: float | None) -> None:
        self.timeout_s = timeout_s
        self._condition = threading.Condition()
        self._deadline = time.monotonic() + timeout_s if timeout_s is not None else None
        self._paused = 0
        self._paused_at = 0.0
        self._finished = False

    def finish(self) -> None:
        """The call returned (or raised): wake the waiting thread."""
        with self._condition:
            self._finished = True
            self._condition.notify_all()

    def unless_finished(self, action: Callable[[], object]) -> None:
        """Run ``action`` while the call is certainly still running (the call cannot finish meanwhile)."""
        with self._condition:
            if not self._finished:
                action()

    def wait_more(self, seconds: float) -> bool:
        """Wait up to ``seconds`` more for the call, whatever the clock says; whether it finished."""
        with self._condition:
            return self._condition.wait_for(lambda: self._finished, timeout=seconds)

    def pause(self) -> None:
        """Stop the clock (nested pauses count)."""
        with self._condition:
            if not self._paused:
                self._paused_at = time.monotonic()
            self._paused += 1

    def resume(self) -> float:
        """Restart the clock with the time that was left; the seconds it stood still (0 for an inner pause)."""
        with self._condition:
            self._paused -= 1
            if self._paused:
                return 0.0
            stood = time.monotonic() - self._paused_at
            if self._deadline is not None:
                self._deadline += stood
            self._condition.notify_all()
            return stood

    def wait(self) -> bool:
        """Wait for the call; ``False`` when the clock ran out first (the call is still running)."""
        # Woken at least every WAIT_TICK_S, so that progress can say the waiting thread still waits (a clause stuck
        # for a minute in one ingest() says so every few seconds).
        with self._condition:
            while not self._finished:
                if self._paused or self._deadline is None:
                    self._condition.wait(WAIT_TICK_S)
                else:
                    left = self._deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._condition.wait(min(left, WAIT_TICK_S))
                if not self._finished:
                    waiting_tick()
            return True


@contextmanager
def running_on(clock: CallClock) -> Iterator[None]:
    """Mark this thread as running the call ``clock`` times (used by :class:`~pytest_lens.execution.calls.AdapterCaller`)."""
    previous = getattr(_running, "clock", None)
    _running.clock = clock
    try:
        yield
    finally:
        _running.clock = previous


@contextmanager
def outside_call_timeout() -> Iterator[None]:
    """Run one-time setup inside an adapter call without counting it against the call's timeout.

    Outside a timed call it does nothing.
    """
    global _untimed_s
    clock: CallClock | None = getattr(_running, "clock", None)
    if clock is None or clock.timeout_s is None:
        yield
        return
    clock.pause()
    try:
        yield
    finally:
        _untimed_s += clock.resume()


def untimed_seconds() -> float:
    """Seconds this process spent in :func:`outside_call_timeout` blocks inside timed calls."""
    return _untimed_s
