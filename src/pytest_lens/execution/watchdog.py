"""The watchdog for adapter calls that hold the interpreter lock: a second process that ends a run Python cannot.

:class:`~pytest_lens.execution.calls.AdapterCaller` abandons a call that outlives ``--lens-call-timeout``: the waiting
thread gives up on it and the run goes on. That needs the waiting thread to run, which needs the GIL; a call stuck
in C code that never releases it (a catastrophic regular expression in ``re``, a busy loop in an extension) stops
every thread of the process, the waiting one and any signal handler included. Nothing inside the process can end
such a run, so something outside it does: a small process started with the run's first timed call.

The run's process tells it, through a pipe, when a timed call starts and ends (``arm`` / ``disarm``), and a thread of
the run's process writes a pulse every :data:`PULSE_S` seconds. While a call is armed, silence longer than the call
could take (its timeout, the grace given to abandon it, and :func:`silence_limit`'s margin) means the process cannot
run Python: the watchdog hands what it knows (which call, of which question) to ``on_stuck`` -- which writes what
the run produced (see :mod:`pytest_lens.runs.rescue`) -- and then kills the process, whose exit status is non-zero
(``SIGKILL``: 137 in a shell). A stopped process (``Ctrl-Z``) is not silent, it is waiting. Without ``-n`` the
rescue writes the artifact; in an xdist worker killing is enough, the controller records the crash and keeps every
other result.

The pulses and messages are a few bytes on a pipe (an ``arm`` and a ``disarm`` per timed call); the watcher
imports nothing but the standard library until it has to rescue a run.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

__all__ = ["PULSE_S", "Watchdog", "current_question", "install", "silence_limit", "watch", "watching"]

#: How often the run's process says it is alive while it can run Python.
PULSE_S = 0.5
#: Silence beyond a call's timeout and grace before the process counts as stuck (at least this many seconds).
MARGIN_S = 5.0

#: The question whose adapter calls this context makes, as a JSON-able key (set while a question is answered).
current_question: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("lens_current_question", default=None)

_active: Watchdog | None = None


def silence_limit(timeout_s: float, grace_s: float) -> float:
    """Seconds of silence during a call of ``timeout_s`` after which the process counts as stuck."""
    return timeout_s + grace_s + max(MARGIN_S, timeout_s)


class Watchdog:
    """The run's side: starts the watcher process, pulses, and arms / disarms timed calls."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.command = list(command)
        self.env = env
        self._process: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stop = threading.Event()

    def start(self) -> None:
        """Start the watcher (its own session: a Ctrl-C at the terminal is the run's, not the watcher's) and the pulse."""
        self._process = subprocess.Popen(self.command, stdin=subprocess.PIPE, env=self.env, start_new_session=True, close_fds=True)
        self._pipe = self._process.stdin
        threading.Thread(target=self._pulse, name="lens-watchdog-pulse", daemon=True).start()

    @contextlib.contextmanager
    def arm(self, limit_s: float, adapter: str, method: str) -> Iterator[None]:
        """Around the wait for one timed call: silence of ``limit_s`` seconds meanwhile ends the run."""
        call = next(self._ids)
        detail = {"limit_s": limit_s, "adapter": adapter, "method": method, "question": current_question.get()}
        self._send(f"arm {call} {json.dumps(detail)}")
        try:
            yield
        finally:
            self._send(f"disarm {call}")

    def close(self) -> None:
        """The run ended: let the watcher end too."""
        self._stop.set()
        with self._lock:
            pipe, self._pipe = self._pipe, None
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)

    def _send(self, line: str) -> None:
        with self._lock:
            if self._pipe is None:
                return
            try:
                self._pipe.write(line.encode() + b"\n")
                self._pipe.flush()
            except OSError:  # the watcher is gone: the run goes on unwatched
                self._pipe = None

    def _pulse(self) -> None:
        while not self._stop.wait(PULSE_S):
            self._send(".")


def install(watchdog: Watchdog | None) -> Watchdog | None:
    """Make ``watchdog`` the one timed calls report to (``None``: none); returns the one it replaces."""
    global _active
    previous, _active = _active, watchdog
    return previous


@contextlib.contextmanager
def watching(timeout_s: float | None, grace_s: float, adapter: str, method: str) -> Iterator[None]:
    """Arm the installed watchdog around the wait for a call of ``timeout_s`` (nothing without one, or without a timeout)."""
    watchdog = _active
    if watchdog is None or timeout_s is None:
        yield
        return
    with watchdog.arm(silence_limit(timeout_s, grace_s), adapter, method):
        yield


# -- the watcher's side ---------------------------------------------------------------------------------------------


def watch(pid: int, on_stuck: Callable[[dict[str, Any], float], None], stream: IO[bytes] | None = None) -> int:
    """Watch process ``pid`` through ``stream`` (stdin) until it closes the pipe; 0, or 1 when it was stuck and killed.

    ``on_stuck(call, silent_s)`` runs before the kill with the armed call's details (``adapter``, ``method``,
    ``question``); it should write what the run produced. Its errors are printed, and the process is killed anyway.
    """
    fd = (stream or sys.stdin.buffer).fileno()
    armed: dict[str, dict[str, Any]] = {}
    heard = time.monotonic()
    pending = b""
    while True:
        readable, _, _ = select.select([fd], [], [], PULSE_S)
        now = time.monotonic()
        if readable:
            data = os.read(fd, 65536)
            if not data:
                return 0  # the run's process closed the pipe or ended: nothing to watch
            heard = now
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                _apply(line.decode(), armed)
        if _stopped(pid):
            heard = now  # Ctrl-Z: it waits for the user, it is not stuck
        if not armed:
            continue
        silent = now - heard
        call = min(armed.values(), key=lambda detail: float(detail["limit_s"]))
        if silent > float(call["limit_s"]):
            try:
                on_stuck(call, silent)
            except BaseException as exc:
                print(f"pytest-lens: could not write what the stuck run produced: {type(exc).__name__}: {exc}", file=sys.stderr)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            return 1


def _apply(line: str, armed: dict[str, dict[str, Any]]) -> None:
    word, _, rest = line.partition(" ")
    if word == "arm":
        call, _, detail = rest.partition(" ")
        armed[call] = json.loads(detail)
    elif word == "disarm":
        armed.pop(rest, None)


def _stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (``T``/``t`` in ``/proc``); ``False`` where that cannot be told."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False
