"""SIGTERM ends a LENS run the way Ctrl-C does: what ran is kept in the artifact, nothing is saved, the exit is non-zero.

Python's default for ``SIGTERM`` ends the process at once: no ``pytest_sessionfinish``, so no artifact, and a CI
job cancelled (or a container stopped) lost every result. While a LENS run is active, ``SIGTERM`` raises
:class:`KeyboardInterrupt` in the main thread instead, exactly what ``SIGINT`` does, and pytest finishes the
session as interrupted (exit status 2; an interrupted run is never saved as a baseline).

A CI cancel sends ``SIGINT``, then ``SIGTERM`` a few seconds later (GitHub Actions: 7.5 s), then ``SIGKILL``.
A ``SIGTERM`` that arrives once the run is already interrupted must not interrupt the writing of what ran, so it
is noted and otherwise ignored: the process ends as soon as the artifact is written. A second ``Ctrl-C`` still
interrupts, as it always did. A ``KeyboardInterrupt`` that no signal caused was raised by an adapter: with these
handlers installed it is that adapter call's fault (:class:`~pytest_lens.execution.calls.AdapterCaller`), not the
end of the run. Handlers are installed only where nobody else installed one (Python's defaults), in
the main thread, and restored when the run ends. A process started with ``SIGINT`` ignored (``nohup``, a
background job) keeps it ignored; a ``KeyboardInterrupt`` there is always an adapter's.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from types import FrameType

from pytest_lens.execution.calls import INTERRUPTED, SIGNALS_WATCHED

__all__ = ["RunSignals"]


class RunSignals:
    """The ``SIGINT`` / ``SIGTERM`` handlers of one LENS run (see the module)."""

    def __init__(self) -> None:
        #: Whether the run was interrupted (by either signal).
        self.interrupted = False
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        """Install the handlers where the signals still have Python's default handlers (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return
        INTERRUPTED.clear()
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            # Started with SIGINT ignored (nohup, a background job without job control): no Ctrl-C can come, so a
            # KeyboardInterrupt is an adapter's, a fault of its call like anywhere else.
            SIGNALS_WATCHED.set()
        for number, default in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
            current = signal.getsignal(number)
            if current is default:
                self._previous[number] = current
                signal.signal(number, self._handle)
                if number == signal.SIGINT:
                    SIGNALS_WATCHED.set()  # a KeyboardInterrupt without Ctrl-C is then an adapter's (a fault)

    def restore(self) -> None:
        """Put back the handlers that were there before :meth:`install`."""
        SIGNALS_WATCHED.clear()
        for number, previous in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(number, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if number == signal.SIGTERM and self.interrupted:
            print("\npytest-lens: SIGTERM received while the interrupted run writes what ran; ending once written", file=sys.stderr)
            return
        self.interrupted = True
        INTERRUPTED.set()
        raise KeyboardInterrupt
