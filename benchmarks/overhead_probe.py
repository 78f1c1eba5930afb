"""Timing probe for ``benchmarks/overhead.py``: loaded into the measured pytest run with ``-p overhead_probe``.

It marks the run's timeline on the system-wide monotonic clock (comparable with the parent's
clock, so the phases add up to the wall time the parent measures) and times the LENS session's
summary, statistics and artifact methods, each net of the others it calls. It writes one JSON
file (``LENS_OVERHEAD_PROBE_OUT``) at the end of the run. Nothing here changes what is measured
except a few clock reads and method wrappers.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

_MARKS: dict[str, float] = {}
#: Inclusive and exclusive seconds per wrapped method (exclusive: net of the wrapped methods it called).
_SPENT: dict[str, list[float]] = {}
_STACK: list[list[float]] = []


def _now() -> float:
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def _mark(name: str, *, first: bool = True) -> None:
    if first and name in _MARKS:
        return
    _MARKS[name] = _now()


def _timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        frame = [_now(), 0.0]  # start, seconds spent in nested wrapped calls
        _STACK.append(frame)
        try:
            return method(*args, **kwargs)
        finally:
            _STACK.pop()
            inclusive = _now() - frame[0]
            if _STACK:
                _STACK[-1][1] += inclusive
            spent = _SPENT.setdefault(name, [0.0, 0.0])
            spent[0] += inclusive
            spent[1] += inclusive - frame[1]

    return wrapper


def _wrap_session() -> None:
    """Time the session's phases (imported here exactly when the plugin would import it next)."""
    from pytest_lens.runs import analysis, session, setup

    cls = session.LensSession
    for name in ("summaries", "verdict", "report", "artifact", "write_artifact", "save_run", "finish"):
        setattr(cls, name, _timed(name, getattr(cls, name)))
    # ``open`` is a classmethod: wrap the function and re-bind it.
    cls.open = classmethod(_timed("open", cls.open.__func__))  # type: ignore[assignment,attr-defined]
    setup.load_datasets = _timed("load_datasets", setup.load_datasets)
    # The statistics are computed once per set of results, as a cached property of the run's analysis.
    statistics = functools.cached_property(_timed("statistics", analysis.RunAnalysis.statistics.func))
    statistics.__set_name__(analysis.RunAnalysis, "statistics")
    analysis.RunAnalysis.statistics = statistics  # type: ignore[method-assign,assignment]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _mark("configure")
    _wrap_session()
    _mark("configure_lens")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    _mark("collected")


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _mark("first_test")


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _mark("last_test", first=False)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    _mark("sessionfinish")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _mark("unconfigure")
    out = os.environ.get("LENS_OVERHEAD_PROBE_OUT")
    if out:
        modules = sorted(sys.modules)
        heavy = [
            name
            for name in ("hypothesis", "scipy", "scipy.stats", "numpy", "pydantic", "jsonschema", "sqlite_utils")
            if name in sys.modules
        ]
        with open(out, "w", encoding="utf-8") as handle:
            json.dump({"marks": _MARKS, "spent": _SPENT, "modules": len(modules), "heavy": heavy}, handle)
