"""Where progress lines go in a pytest run (the pytest side of :mod:`pytest_lens.progress`).

- ``-q`` (verbosity below 0): nowhere.
- The controller (or a run without xdist): the terminal reporter, between test results; pytest's
  terminal writer drops colour without a TTY, with ``NO_COLOR`` or with ``--color=no``.
- An xdist worker: its standard error, which xdist workers share with the controller's, prefixed
  with the worker id (the controller's terminal reporter is in another process). The controller's
  dots go to standard output meanwhile; where the two may end up in one place (a terminal,
  ``2>&1``, or two pipes a CI runner merges into one log) each worker line starts with a newline,
  so that it never continues a line of dots and the dots after it start a line of their own
  (:func:`worker_lines_need_a_newline`, decided by the controller, which owns the terminal).

Lines are written with pytest's output capturing suspended, so they appear while a test runs
rather than in its captured output, and only from the main thread (the one pytest runs tests on).
Without a TTY (CI logs) they come at most every 10 s instead of every 2 s.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

    from pytest_lens.progress import ProgressSink

__all__ = [
    "NEWLINE_KEY",
    "TTY_INTERVAL_S",
    "UNATTENDED_INTERVAL_S",
    "WorkerProgressLines",
    "progress_interval",
    "progress_sink",
    "worker_lines_need_a_newline",
]

#: ``workerinput`` key telling an xdist worker to start each progress line with a newline.
NEWLINE_KEY = "lens_progress_newline"

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
        prefix = ("\n" if workerinput.get(NEWLINE_KEY, False) else "") + f"[{workerinput.get('workerid', 'worker')}] "

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


def worker_lines_need_a_newline(stdout: IO[str], stderr: IO[str]) -> bool:
    """Whether what workers write to ``stderr`` may land in the middle of a line of dots the controller writes to ``stdout``.

    Only where standard error is a file of its own (``2>lens-progress.log``) can it not: a terminal, a file
    both go to (``>log 2>&1``) and a pipe (CI runners read standard output and standard error on two pipes
    and interleave them in one log) all may mix the two.
    """
    try:
        out, err = os.fstat(stdout.fileno()), os.fstat(stderr.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (an in-process pytester run): no dots to break
        return False
    return not stat.S_ISREG(err.st_mode) or (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


class WorkerProgressLines:
    """xdist controller hook (registered only with xdist): tell each worker how to start its progress lines."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: WorkerController) -> None:
        """Decide once, here: only the controller knows where its own standard output goes."""
        capture = self.config.pluginmanager.getplugin("capturemanager")
        if capture is None:
            node.workerinput[NEWLINE_KEY] = worker_lines_need_a_newline(sys.stdout, sys.stderr)
            return
        with capture.global_and_fixture_disabled():  # the real streams, not pytest's capture files
            node.workerinput[NEWLINE_KEY] = worker_lines_need_a_newline(sys.stdout, sys.stderr)
