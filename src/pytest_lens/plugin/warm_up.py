"""Importing what a run will need later on a background thread, while the run waits on something else.

The summary's statistics import scipy (most of a second), the LLM client imports ``openai`` and its HTTP
transport (about a second), the HTML report its page builder; a run that waits on model latency or on
xdist workers can pay for those imports in the meantime instead of on its serial tail. Python's import
lock makes a later import of the same module wait for the background one to finish; it never runs twice.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence

# This distribution's top-level packages: installed together, so a module of theirs is never absent by design.

__all__ = ["ANSWER_MODULES", "SUMMARY_MODULES", "TEST_MODULES", "import_quietly", "warm_up"]

#: What the terminal summary imports: the bootstrap (numpy), the statistics and their rendering.
SUMMARY_MODULES = ("numpy", "pytest_lens.analysis.run", "pytest_lens.analysis.baseline", "pytest_lens.reports.render")
#: What it imports too when the run has significance tests (two adapters, or a baseline): scipy.stats.
TEST_MODULES = ("scipy.stats",)
#: What answering and scoring the first questions import: extra tools' argument schemas, the ranking metrics.
ANSWER_MODULES = ("jsonschema", "pytrec_eval")
#: The package whose modules a warm-up list may not name wrongly (the lists name ours and third-party ones only).
_OURS = __name__.partition(".")[0]


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
