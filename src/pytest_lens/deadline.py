"""The per-call deadline of adapter calls (``--lens-call-timeout``) and its one allowance: one-time setup.

:class:`~pytest_lens.calls.AdapterCaller` arms a ``SIGALRM`` timer around each adapter call on the main thread.
An adapter doing one-time work inside a call that has nothing to do with the call itself (loading an embedding
model on first use, say) wraps it in :func:`outside_call_timeout`: the timer pauses for the block and resumes
with the time that was left. A model that takes a minute to load on a busy machine then does not fail whichever
``ingest`` happened to need it first, while every call's own work stays bounded by the timeout.

Stdlib only: adapters import it from :mod:`pytest_lens`.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["armed_call", "outside_call_timeout", "untimed_seconds"]

_armed = 0
_untimed_s = 0.0


@contextmanager
def armed_call() -> Iterator[None]:
    """Mark the block as a timed adapter call (used by :class:`~pytest_lens.calls.AdapterCaller` once its timer is set)."""
    global _armed
    _armed += 1
    try:
        yield
    finally:
        _armed -= 1


@contextmanager
def outside_call_timeout() -> Iterator[None]:
    """Run one-time setup inside an adapter call without counting it against the call's timeout.

    Outside a timed call, or off the main thread (where calls are not timed), it does nothing.
    """
    global _untimed_s
    if not _armed or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    remaining, _ = signal.setitimer(signal.ITIMER_REAL, 0)
    started = time.monotonic()
    try:
        yield
    finally:
        _untimed_s += time.monotonic() - started
        if remaining > 0:
            signal.setitimer(signal.ITIMER_REAL, remaining)


def untimed_seconds() -> float:
    """Seconds this process spent in :func:`outside_call_timeout` blocks inside timed calls."""
    return _untimed_s
