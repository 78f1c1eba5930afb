"""Benchmark suites besides LENS: MEME, MemoryAgentBench (bundled), LoCoMo and LongMemEval (imported).

A dataset's ``suite`` field says which one scores its questions.

This module is light (stdlib only); suites load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_lens.suites.base import Suite

__all__ = ["SELECTABLE", "SUITES", "load_suite"]

#: Suites with bundled default scopes, selectable with ``--lens-suite``.
SELECTABLE = ("lens", "meme", "mab")
#: Known suites and where they are defined.
SUITES: dict[str, str] = {
    "meme": "pytest_lens.suites.meme.suite:MEME_SUITE",
    "mab": "pytest_lens.suites.mab.suite:MAB_SUITE",
    "locomo": "pytest_lens.suites.locomo:LOCOMO_SUITE",
    "longmemeval": "pytest_lens.suites.longmemeval:LONGMEMEVAL_SUITE",
}


def load_suite(name: str) -> Suite:
    """The suite called ``name``; an unknown name gets LENS's tier-1 metrics, weights and gate under its own section."""
    target = SUITES.get(name)
    if target is None:
        from pytest_lens.suites.base import generic_suite

        return generic_suite(name)
    module, _, attribute = target.partition(":")
    suite: Suite = getattr(importlib.import_module(module), attribute)
    return suite
