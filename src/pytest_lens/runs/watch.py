"""The run's side of the watchdog for calls that hold the GIL: the watcher process and the journal it rescues from.

See :mod:`pytest_lens.execution.watchdog` (why, and how a stuck process is told) and :mod:`pytest_lens.runs.rescue`
(what the watcher writes before it ends such a run).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_lens.execution.watchdog import Watchdog
    from pytest_lens.records.cases import LensCase
    from pytest_lens.records.results import QuestionResult
    from pytest_lens.records.settings import LensSettings

__all__ = ["JOURNAL", "SETTINGS", "RunRescue"]

#: The run's settings, pickled: the watcher opens the same run from them.
SETTINGS = "settings.pickle"
#: One JSON line per selected-questions list and per recorded result.
JOURNAL = "journal.jsonl"


def _without_secrets(settings: LensSettings) -> LensSettings:
    """``settings`` as the rescue needs them, its secrets masked: a file left behind (a killed run) holds no key.

    The rescue writes the run's outputs from the journal and sends no request: it needs neither the adapters'
    secret options (only their names are checked) nor the endpoint's credentials.
    """
    from dataclasses import replace

    from pytest_lens.llm.api_keys import mask_secrets, masked_options

    adapters = tuple(replace(spec, options=masked_options(spec.options)) for spec in settings.adapters)
    llm = replace(settings.llm, base_url=mask_secrets(settings.llm.base_url)) if settings.llm.base_url else settings.llm
    return replace(settings, adapters=adapters, llm=llm)


class RunRescue:
    """The run's side: the watcher process and the journal it rescues the run from."""

    def __init__(self, directory: Path, watchdog: Watchdog, rescue: bool) -> None:
        self.directory = directory
        self.watchdog = watchdog
        self.rescue = rescue
        #: The journal's file descriptor (``None``: not journalling); written with plain ``os.write``, so that a write
        #: a full disk cuts short can be taken back (:meth:`_write`).
        self._journal = os.open(directory / JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if rescue else None
        self._lock = threading.Lock()

    @classmethod
    def start(cls, settings: LensSettings, expected: list[LensCase], results: list[QuestionResult], *, rescue: bool) -> RunRescue:
        """Start watching this process; ``rescue``: write the run's outputs when it is stuck (not in an xdist worker)."""
        from pytest_lens.execution import watchdog

        directory = Path(tempfile.mkdtemp(prefix="lens-watch-"))
        try:
            if rescue:
                with (directory / SETTINGS).open("wb") as file:
                    pickle.dump(_without_secrets(settings), file)
            paths = [str(Path(entry).resolve()) for entry in sys.path if entry and Path(entry).is_dir()]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
            command = [sys.executable, "-m", "pytest_lens.runs.rescue", str(os.getpid()), str(directory), "rescue" if rescue else "kill"]
            guard = watchdog.Watchdog(command, env)
            started = cls(directory, guard, rescue)
        except BaseException:  # no watcher (a full temporary directory): nothing of it is left behind
            shutil.rmtree(directory, ignore_errors=True)
            raise
        started.expect(expected)
        for result in results:
            started.record(result)
        guard.start()
        watchdog.install(guard)
        return started

    def expect(self, cases: list[LensCase]) -> None:
        """The selected questions (the rescue names those without a result as incomplete)."""
        self._write({"expect": [list(case.item_key) for case in cases]})

    def record(self, result: QuestionResult) -> None:
        """One recorded result."""
        self._write({"result": result.model_dump(mode="json")})

    def close(self) -> None:
        """The run ended: stop the watcher and remove the journal."""
        from pytest_lens.execution import watchdog

        watchdog.install(None)
        self.watchdog.close()
        with self._lock:
            if self._journal is not None:
                os.close(self._journal)
                self._journal = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _write(self, entry: dict[str, Any]) -> None:
        """One journal line; a journal that cannot be written (a full temporary directory) is dropped with a warning.

        The run goes on unjournalled: a stuck call then ends it with the outputs of what the journal holds, cut back
        to its last whole line (the questions recorded since are named as missing), never the end of the run itself.
        """
        with self._lock:
            journal = self._journal
            if journal is None:
                return
            line = (json.dumps(entry) + "\n").encode("utf-8")
            kept = os.lseek(journal, 0, os.SEEK_END)
            try:
                written = 0
                while written < len(line):
                    written += os.write(journal, line[written:])
            except OSError as exc:
                self._journal = None
                with contextlib.suppress(OSError):
                    os.ftruncate(journal, kept)  # frees what the torn line took; the rescue reads whole lines only
                os.close(journal)
                import warnings

                warnings.warn(
                    f"pytest-lens: the watchdog's journal in {self.directory} cannot be written ({exc.strerror or exc}); "
                    "the run goes on, but should an adapter call hold the interpreter lock past --lens-call-timeout, "
                    "the outputs written for it will miss the questions recorded from now on",
                    stacklevel=3,
                )
