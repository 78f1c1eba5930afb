"""Importing heavy modules in the background while tests run, so the summary or report that needs them does not wait."""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Sequence

__all__ = ["warm_up"]


def warm_up(modules: Sequence[str], name: str = "lens-warm-up") -> threading.Thread:
    """Import ``modules`` in a daemon thread (the import lock makes a concurrent import wait, never twice)."""

    def load() -> None:
        for module in modules:
            with contextlib.suppress(Exception):  # an import error resurfaces, with its traceback, where the module is used
                importlib.import_module(module)

    thread = threading.Thread(target=load, name=name, daemon=True)
    thread.start()
    return thread
