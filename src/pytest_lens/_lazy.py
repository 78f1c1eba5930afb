"""Names a package exports but imports on first use, so that importing the package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(module: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``sources[name]`` and returns its ``name``; other names are missing."""

    def __getattr__(name: str) -> Any:
        if name in sources:
            return getattr(importlib.import_module(sources[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
