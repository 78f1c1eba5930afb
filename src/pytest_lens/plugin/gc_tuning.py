"""Keeping CPython's garbage collector off the objects a LENS run keeps until it ends.

A LENS run imports a lot (pytest, pydantic, numpy, the openai client's type modules) and keeps its
datasets, cases and collected items alive to its end. Every full collection walks all of them
again: the ones CPython triggers while objects are allocated, the two pytest runs as the session
ends (to report unraisable exceptions) and the ones of interpreter shutdown. In the 24-question
run of ``benchmarks/llm_throughput.py`` those walks were about 0.8 s of a command's 3.6 s of CPU
(median of three, on this project's busy 2-core machine), in serial and concurrent runs alike.

:func:`freeze` moves every object alive now into the permanent generation (:func:`gc.freeze`),
which collections skip; it is called once the questions are collected, and :func:`refreeze` again
when a background import (:mod:`pytest_lens.plugin.warm_up`: the LLM client, the summary's statistics)
has finished. :func:`thaw` (:func:`gc.unfreeze`, which thaws whatever is frozen) puts them back
as pytest's very last cleanup, so a pytest run inside another process (pytester's in-process
runs) leaves that process's collector as it found it; at interpreter exit a handler freezes
everything again, so the final collections skip them too. Nothing else changes: objects are still
freed by reference counting, and garbage cycles among frozen objects are collected after
:func:`thaw`, or freed with the process.
"""

from __future__ import annotations

import atexit
import gc
import threading

__all__ = ["freeze", "refreeze", "thaw"]

_lock = threading.Lock()
_at_exit = False
_frozen = False


def freeze() -> None:
    """Exempt every object alive now from garbage collection until :func:`thaw` (and from the collections at exit)."""
    global _at_exit, _frozen
    with _lock:
        if not _at_exit:
            _at_exit = True
            atexit.register(gc.freeze)
        _frozen = True
        gc.freeze()


def refreeze() -> None:
    """While frozen (between :func:`freeze` and :func:`thaw`), freeze what was allocated since, too."""
    with _lock:
        if _frozen:
            gc.freeze()


def thaw() -> None:
    """Let the collector walk again what :func:`freeze` exempted (nothing happens when it was not called since)."""
    global _frozen
    with _lock:
        if _frozen:
            _frozen = False
            gc.unfreeze()
