"""The old flat module paths, kept importable for one release: each name still resolves, with a DeprecationWarning.

Release 0.2 moved the modules into folders by layer (docs/ARCHITECTURE.md). The paths the documentation taught
(``pytest_lens.calls``, ``pytest_lens.registry``, ...) are thin modules that forward every name to its new home
and say where to import it from: :mod:`pytest_lens.api` for the public names, the new module otherwise.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__ = ["forward"]


def forward(old: str, new: str, name: str) -> Any:
    """``name`` of module ``new``, asked for under its old module ``old``: warn, then return it."""
    if name.startswith("__"):
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    import pytest_lens
    from pytest_lens.api import SOURCES

    value = getattr(importlib.import_module(new), name)  # an unknown name raises AttributeError, naming the new module
    if name in pytest_lens.__all__:
        where = "pytest_lens"
    elif SOURCES.get(name) == new:
        where = "pytest_lens.api"
    else:
        where = new
    warnings.warn(
        f"{old} moved to {new}: import {name} from {where}; the old path goes in the next release",
        DeprecationWarning,
        stacklevel=3,
    )
    return value
