"""Where progress lines go in a pytest run (the pytest side of :mod:`pytest_lens.progress`).

- ``-q`` (verbosity below 0): nowhere.
- The controller (or a run without xdist): the terminal reporter, between test results; pytest's
  terminal writer drops colour without a TTY, with ``NO_COLOR`` or with ``--color=no``.
- An xdist worker: its standard error, which xdist workers share with the controller's, prefixed
  with the worker id (the controller's terminal reporter is in another process).

Lines are written with pytest's output capturing suspended, so they appear while a test runs
rather than in its captured output, and only from the main thread (the one pytest runs tests on).
Without a TTY (CI logs) they come at most every 10 s instead of every 2 s.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_lens.progress import ProgressSink

__all__ = ["TTY_INTERVAL_S", "UNATTENDED_INTERVAL_S", "progress_interval", "progress_sink"]

#: Seconds between progress lines of one stream on a terminal, and in a log (no TTY).
TTY_INTERVAL_S = 2.0
UNATTENDED_INTERVAL_S = 10.0


def progress_interval(config: pytest.Config) -> float:
    """Seconds between two lines of one stream: short on a terminal, longer in a log."""
    stream = sys.stderr if hasattr(config, "workerinput") else sys.stdout
    isatty = getattr(stream, "isatty", None)
    return TTY_INTERVAL_S if callable(isatty) and isatty() else UNATTENDED_INTERVAL_S


def progress_sink(config: pytest.Config) -> ProgressSink | None:
    """A callable printing one progress line, or ``None`` when progress is not wanted (``-q``)."""
    if config.get_verbosity() < 0:
        return None
    capture = config.pluginmanager.getplugin("capturemanager")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        prefix = f"[{workerinput.get('workerid', 'worker')}] "

        def write(line: str) -> None:
            sys.stderr.write(prefix + line + "\n")
            sys.stderr.flush()

    else:
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if reporter is None:
            return None

        def write(line: str) -> None:
            # The running test's prefix (its file without -v, its node id with -v), written when it started:
            # written again after the line, so that its result still follows it.
            prefix = reporter.currentfspath
            from pytest_lens.text import terminal_safe  # labels and scope ids come from the user's data

            reporter.write_line(terminal_safe(line), cyan=True)
            if isinstance(prefix, Path):
                reporter.currentfspath = prefix
                reporter.write(os.path.relpath(prefix, reporter.startpath) + " ")
            elif isinstance(prefix, str):
                reporter.currentfspath = prefix
                reporter.write(prefix)
            reporter.flush()

    def sink(line: str) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # suspending capture from another thread would disturb the test the main thread runs
        if capture is None:
            write(line)
            return
        with capture.global_and_fixture_disabled():
            write(line)

    return sink
