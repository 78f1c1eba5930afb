"""Finding adapter classes.

An adapter is named by ``module:Class`` or by a short name registered under the
``pytest_lens.adapters`` entry-point group (e.g. ``bm25``, ``sqlite-hybrid``).
"""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import entry_points
from typing import Any

from pytest_lens.adapter import REQUIRED_METHODS

__all__ = ["ENTRY_POINT_GROUP", "AdapterLoadError", "accepts_keyword", "load_adapter_class", "registered_adapters"]

ENTRY_POINT_GROUP = "pytest_lens.adapters"


class AdapterLoadError(ValueError):
    """The adapter named on the command line cannot be used; the message says why."""


def registered_adapters() -> dict[str, str]:
    """Short name -> ``module:Class`` for every installed adapter."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_adapter_class(target: str) -> type[Any]:
    """Import the adapter class named by ``target`` and check it has the contract's methods."""
    registered = registered_adapters()
    path = registered.get(target, target)
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        known = ", ".join(sorted(registered)) or "none installed"
        raise AdapterLoadError(f"{target!r} is neither module:Class nor a registered adapter name (registered: {known})")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or anything the module raises while importing
        raise AdapterLoadError(f"cannot import module {module_name!r} for adapter {target!r}: {type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AdapterLoadError(f"module {module_name!r} has no attribute {attribute!r} (adapter {target!r})") from None
    if not inspect.isclass(obj):
        raise AdapterLoadError(f"{path} is a {type(obj).__name__}, not an adapter class")
    missing = [name for name in REQUIRED_METHODS if not callable(getattr(obj, name, None))]
    abstract = sorted(getattr(obj, "__abstractmethods__", ()))
    if missing or abstract:
        problems = missing or abstract
        raise AdapterLoadError(f"{path} does not implement the adapter contract: missing {', '.join(problems)}")
    return obj


def accepts_keyword(cls: type[Any], name: str, *, via_kwargs: bool = True) -> bool:
    """Whether ``cls(...)`` takes the keyword ``name``: by name, or (``via_kwargs``) through ``**kwargs``."""
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return via_kwargs
    if name in parameters and parameters[name].kind is not inspect.Parameter.POSITIONAL_ONLY:
        return True
    return via_kwargs and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
