"""Threads an adapter leaves running: they must neither keep the process alive nor let the run pass.

Python waits for every non-daemon thread before a process exits. An adapter that starts one and never stops it
kept a finished run alive until something killed it (at 120 s in the probe), after its verdict was printed. At the
end of a run, non-daemon threads started during it get a short grace to end; those still running are named as a
run-level problem (the verdict fails) and released, so that the interpreter no longer waits for them at exit.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Collection

__all__ = ["GRACE_S", "release_leftover_threads"]

#: How long threads left running at the end of a run get to end by themselves.
GRACE_S = 2.0


def release_leftover_threads(before: Collection[threading.Thread], grace_s: float = GRACE_S) -> list[str]:
    """Problems naming the non-daemon threads started since ``before`` and still running after ``grace_s``; released."""
    main = threading.main_thread()
    deadline = time.monotonic() + grace_s
    left = []
    for thread in threading.enumerate():
        if thread is main or thread.daemon or thread in before:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            left.append(thread)
            _release(thread)
    if not left:
        return []
    names = ", ".join(repr(thread.name) for thread in left)
    return [
        f"{len(left)} non-daemon thread(s) started during the run still ran {grace_s:g} s after it ({names}): an adapter "
        "(or a test) left them running; they would have kept the process alive, and the process now ends without them"
    ]


def _release(thread: threading.Thread) -> None:
    """Let the interpreter exit without joining ``thread`` (CPython 3.11-3.12 keep non-daemon threads' locks in a set)."""
    locks = getattr(threading, "_shutdown_locks", None)
    guard = getattr(threading, "_shutdown_locks_lock", None)
    lock = getattr(thread, "_tstate_lock", None)
    if isinstance(locks, set) and guard is not None and lock is not None:
        with guard:
            locks.discard(lock)
    with contextlib.suppress(AttributeError):
        thread._daemonic = True  # type: ignore[attr-defined]
