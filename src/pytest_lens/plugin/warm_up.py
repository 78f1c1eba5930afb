"""Importing what a run will need later on a background thread, while the run waits on something else.

The summary's statistics import scipy (most of a second), the LLM client imports ``openai`` and its HTTP
transport (about a second), the HTML report its page builder; a run that waits on model latency or on
xdist workers can pay for those imports in the meantime instead of on its serial tail. Python's import
lock makes a later import of the same module wait for the background one to finish; it never runs twice.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pytest_lens.plugin.gc_tuning import refreeze

if TYPE_CHECKING:
    from pytest_lens.runs.session import LensSession

__all__ = ["ANSWER_MODULES", "SUMMARY_MODULES", "TEST_MODULES", "RunWarmUp", "import_quietly", "warm_up"]

#: What the terminal summary imports: the bootstrap (numpy), the statistics and their rendering.
SUMMARY_MODULES = ("numpy", "pytest_lens.analysis.run", "pytest_lens.analysis.baseline", "pytest_lens.reports.render")
#: What it imports too when the run has significance tests (two adapters, or a baseline): scipy.stats.
TEST_MODULES = ("scipy.stats",)
#: What answering and scoring the first questions import: extra tools' argument schemas, the ranking metrics.
ANSWER_MODULES = ("jsonschema", "pytrec_eval")
#: The package whose modules a warm-up list may not name wrongly (the lists name ours and third-party ones only).
_OURS = __name__.partition(".")[0]
#: How long the LLM warm-up waits for the first request before importing what answering needs anyway (seconds).
FIRST_REQUEST_WAIT_S = 5.0


def import_quietly(modules: Sequence[str]) -> None:
    """Import ``modules``; one that fails is skipped (its error resurfaces, with its traceback, where it is used).

    Except a module of ours that does not exist: :class:`ModuleNotFoundError` once the others are imported. A list
    naming a moved module would otherwise turn its warm-up into a no-op that nothing reports (the code that uses
    the module imports it by its new name); a third-party module is skipped whatever its error, since an optional
    dependency (``scipy``, ``markupsafe``, ``pytrec_eval``) may be absent by design and says so where it is used.
    On a warm-up thread the error is an unhandled thread exception: printed, and reported by pytest as a warning.
    """
    stale: ModuleNotFoundError | None = None
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if stale is None and exc.name is not None and exc.name.partition(".")[0] == _OURS:
                stale = ModuleNotFoundError(f"warm-up list names {module!r}: {exc}", name=exc.name)
        except Exception:  # resurfaces, with its traceback, where the module is used
            pass
    if stale is not None:
        raise stale


def warm_up(
    modules: Sequence[str],
    name: str = "lens-warm-up",
    then: Callable[[], object] | None = None,
    *,
    after: threading.Thread | None = None,
) -> threading.Thread:
    """Import ``modules`` in a daemon thread (the import lock makes a concurrent import wait, never twice), then call ``then``.

    With ``after``, the imports wait until that thread has ended: one warm-up does not take the processor from
    another whose result is needed sooner.
    """

    def load() -> None:
        if after is not None:
            after.join()
        import_quietly(modules)
        if then is not None:
            then()

    thread = threading.Thread(target=load, name=name, daemon=True)
    thread.start()
    return thread


class RunWarmUp:
    """What one LENS run's process will need, prepared in the background: the LLM client, the summary's statistics.

    Collection, ingestion and questions waiting on models leave room for the work, instead of the first LLM
    request or the terminal summary waiting for it. What the background imports keep stays to the end: the
    collector is refrozen after each (see :mod:`pytest_lens.plugin.gc_tuning`).
    """

    def __init__(self, session: LensSession) -> None:
        self.session = session
        #: The background thread building the LLM client (:meth:`start` with ``llm``), when one was started.
        self.llm_thread: threading.Thread | None = None

    def start(self, *, llm: bool, summary: bool) -> None:
        """Start the warm-ups asked for.

        ``llm`` builds the endpoint's ``openai`` client (importing it and its HTTP transport), then, once the first
        request waits for the model, imports what answering and scoring the first questions need; it is ignored when
        no request will be sent (no endpoint, or the cache replays everything). The summary's imports come after all
        that: the run needs them last.
        """
        setup = self.session.setup
        settings = setup.llm.settings
        if llm and settings.configured and settings.cache_mode != "replay":
            self.llm_thread = warm_up((), name="lens-llm-warm-up", then=self._prepare_llm)
        if summary:
            modules = SUMMARY_MODULES + (TEST_MODULES if setup.has_significance_tests else ())
            warm_up(modules, then=refreeze, after=self.llm_thread)

    def _prepare_llm(self) -> None:
        endpoint = self.session.setup.llm.endpoint
        with contextlib.suppress(Exception):  # no openai, or a bad URL: the first request says so, where it is made
            endpoint.connect()
        refreeze()
        # Until then the processor is the first request's; afterwards the process mostly waits for the model.
        endpoint.requested.wait(FIRST_REQUEST_WAIT_S)
        import_quietly(ANSWER_MODULES)
        refreeze()
