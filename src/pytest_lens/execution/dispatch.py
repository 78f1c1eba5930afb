"""Handing work to the thread that owns the adapters.

Questions answered concurrently run their agents on worker threads, but an adapter that
has not declared itself thread-safe must only ever be called from one thread: many hold
SQLite connections bound to the thread that opened them. With a call timeout that thread is
the adapter's own (:class:`~pytest_lens.execution.calls.AdapterThread`, where it was built and where its
timeout can abandon it), and workers hand their calls to it directly; without one it is the
owning thread. :class:`OwnerThreadCalls` lets a worker thread run a function on the owning
thread (such a call, or the runner's bookkeeping) and wait for its result; the owning thread
runs what it is handed, in arrival order, while it waits for something (:meth:`serve_until`)
and between the steps of its own slow work (:meth:`serve_waiting`).
Each function runs in a copy of the requesting thread's context, so what it does is counted
for the question that asked (see :func:`pytest_lens.llm.stats.counting`).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Cancelled", "OwnerThreadCalls"]

T = TypeVar("T")

#: Why a call is refused or cancelled once the owning thread stopped serving.
_ENDED = "the run ended before this adapter call could be made"


class Cancelled(BaseException):
    """The owning thread stopped serving (the run ended or was interrupted) before the call could run.

    A BaseException, so an agent's or adapter's ``except Exception`` cannot swallow it.
    """


class _Item:
    """One function to run on the owning thread; ``reply`` is set for a call someone waits on."""

    def __init__(self, function: Callable[[], Any], context: contextvars.Context, waited: bool) -> None:
        self.function = function
        self.context = context
        self.reply: threading.Event | None = threading.Event() if waited else None
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        if self.reply is None:
            self.context.run(self.function)  # a posted notification: its errors are the owner's
            return
        try:
            self.value = self.context.run(self.function)
        except Exception as exc:
            self.error = exc
        except BaseException:
            # KeyboardInterrupt and the like belong to the owning thread; the caller is told it was cancelled.
            self.cancel("the owning thread was interrupted")
            raise
        self.reply.set()

    def cancel(self, why: str) -> None:
        self.error = Cancelled(why)
        if self.reply is not None:
            self.reply.set()

    def wait(self) -> Any:
        assert self.reply is not None
        self.reply.wait()
        if self.error is not None:
            raise self.error
        return self.value


class OwnerThreadCalls:
    """Functions handed to the thread that created this object, run when it serves them."""

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        #: Work of the owning thread itself, run when no handed-over function is waiting (:meth:`when_idle`).
        self._idle: collections.deque[Callable[[], object]] = collections.deque()

    def call(self, function: Callable[[], T]) -> T:
        """Run ``function`` on the owning thread and return its result (or raise its exception).

        Called on the owning thread itself, it runs at once. Raises :class:`Cancelled` once closed.
        """
        if threading.get_ident() == self.owner:
            return function()
        item = _Item(function, contextvars.copy_context(), waited=True)
        self._put(item)
        result: T = item.wait()
        return result

    def post(self, function: Callable[[], object]) -> None:
        """Have the owning thread run ``function`` when it next serves, without waiting (ignored once closed)."""
        with contextlib.suppress(Cancelled):
            self._put(_Item(function, contextvars.copy_context(), waited=False))

    def when_idle(self, function: Callable[[], object]) -> None:
        """On the owning thread: run ``function`` (in this thread's context) once no handed-over function is waiting.

        For the owner's own slow work (streaming an adapter to a checkpoint), so that the calls of
        questions already running are not held up behind it.
        """
        if threading.get_ident() != self.owner:
            raise RuntimeError("when_idle() must run on the thread that owns the calls")
        self._idle.append(function)

    def serve_until(self, done: Callable[[], bool], *, tick: Callable[[], object] | None = None, tick_s: float = 1.0) -> None:
        """On the owning thread: run handed-over functions, in arrival order, until ``done()`` is true.

        Work queued with :meth:`when_idle` runs whenever no handed-over function is waiting.
        ``done()`` is checked before each function, so it must become true through something this
        thread runs (a posted notification), never only through another thread's work. ``tick``
        (a progress line that may be due) runs on this thread at least every ``tick_s`` seconds of waiting.
        """
        if threading.get_ident() != self.owner:
            raise RuntimeError("serve_until() must run on the thread that owns the calls")
        while not done():
            if self._idle and self._queue.empty():
                self._idle.popleft()()
            elif tick is None:
                self._queue.get().run()
            else:
                try:
                    item = self._queue.get(timeout=tick_s)
                except queue.Empty:
                    tick()
                    continue
                item.run()
                tick()

    def serve_waiting(self) -> None:
        """On the owning thread: run the handed-over functions waiting now, without waiting for more.

        For the owner's own slow work to call now and then (between the episodes it streams to an
        instance), so that the adapter calls of questions running on other instances are not held up.
        """
        if threading.get_ident() != self.owner:
            raise RuntimeError("serve_waiting() must run on the thread that owns the calls")
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            item.run()

    def check_open(self) -> None:
        """Raise :class:`Cancelled` once closed (for work that reaches an adapter without passing through the owner)."""
        if self._closed:
            raise Cancelled(_ENDED)

    def close(self) -> None:
        """Stop serving: calls waiting now, and calls made later, raise :class:`Cancelled`."""
        with self._lock:
            self._closed = True
        self._idle.clear()
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            item.cancel(_ENDED)

    def _put(self, item: _Item) -> None:
        with self._lock:
            self.check_open()
            self._queue.put(item)
