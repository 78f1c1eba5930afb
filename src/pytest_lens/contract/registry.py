"""Finding adapter classes.

An adapter is named by ``module:Class``, by a short name registered under the
``pytest_lens.adapters`` entry-point group (e.g. ``bm25``, ``sqlite-hybrid``), or by
``scheme:REST`` where ``scheme`` is registered under ``pytest_lens.adapter_schemes``
(e.g. ``langchain:mypkg.memory:make_store``, ``mcp:npx -y @modelcontextprotocol/server-memory``).

A scheme's class adapts a whole interface rather than one memory system: its classmethod
``lens_bind(rest, import_paths)`` checks ``REST`` (raising :class:`AdapterLoadError` with
the reason) and returns the adapter class bound to it. A registered scheme wins over a
module of the same name.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pytest_lens.contract.adapter import REQUIRED_METHODS

__all__ = [
    "ENTRY_POINT_GROUP",
    "AdapterLoadError",
    "accepts_keyword",
    "import_adapter_module",
    "load_adapter_class",
    "registered_adapters",
    "registered_schemes",
]

ENTRY_POINT_GROUP = "pytest_lens.adapters"
#: Entry points naming the classes that adapt an interface: ``langchain``, ``llamaindex``, ``langgraph-store``, ``mcp``.
SCHEME_GROUP = "pytest_lens.adapter_schemes"


class AdapterLoadError(ValueError):
    """The adapter named on the command line cannot be used; the message says why."""


def registered_adapters() -> dict[str, str]:
    """Short name -> ``module:Class`` for every installed adapter."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_adapter_class(target: str, import_paths: Sequence[Path] = ()) -> type[Any]:
    """Import the adapter class named by ``target`` and check it has the contract's methods.

    ``import_paths`` are the directories a ``module:Class`` may live in besides the
    installed packages: the invocation directory and the rootdir, in that order. As
    pytest does for a ``conftest.py`` there, the first of them that holds the module's
    top-level name (``name.py`` or ``name/``) is put at the front of ``sys.path``.
    """
    registered = registered_adapters()
    scheme, colon, rest = target.partition(":")
    if target not in registered and colon and scheme in (schemes := registered_schemes()):
        return _bind_scheme(scheme, schemes[scheme], rest, target, import_paths)
    path = registered.get(target, target)
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        known = ", ".join(sorted(registered)) or "none installed"
        raise AdapterLoadError(f"{target!r} is neither module:Class nor a registered adapter name (registered: {known})")
    module = import_adapter_module(module_name, target, import_paths)
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


def registered_schemes() -> dict[str, str]:
    """Scheme -> ``module:Class`` for every installed interface adapter."""
    return {ep.name: ep.value for ep in entry_points(group=SCHEME_GROUP)}


_BOUND: dict[tuple[str, str], type[Any]] = {}


def _bind_scheme(scheme: str, path: str, rest: str, target: str, import_paths: Sequence[Path]) -> type[Any]:
    """The scheme's class bound to ``rest`` (once per target and process, so every load returns the same class)."""
    key = (path, rest)
    if key in _BOUND:
        return _BOUND[key]
    if not rest.strip():
        raise AdapterLoadError(f"{target!r}: say what the {scheme} adapter should use after '{scheme}:'")
    generic = load_adapter_class(path, import_paths)
    bind = getattr(generic, "lens_bind", None)
    if not callable(bind):
        raise AdapterLoadError(f"{path} (scheme {scheme!r}) has no classmethod lens_bind(rest, import_paths)")
    try:
        bound = bind(rest, tuple(import_paths))
    except AdapterLoadError as exc:
        raise AdapterLoadError(f"{target!r}: {exc}") from None
    if not inspect.isclass(bound) or any(not callable(getattr(bound, name, None)) for name in REQUIRED_METHODS):
        raise AdapterLoadError(f"{path}.lens_bind({rest!r}) did not return an adapter class")
    _BOUND[key] = bound
    return bound


def import_adapter_module(module_name: str, target: str, import_paths: Sequence[Path] = ()) -> Any:
    """Import ``module_name``, looking in ``import_paths`` first; :class:`AdapterLoadError` says where it looked."""
    top = module_name.partition(".")[0]
    home = None if top in sys.modules else _local_home(top, import_paths)
    if home is not None and str(home) not in sys.path:
        sys.path.insert(0, str(home))
        importlib.invalidate_caches()  # the directory may have been listed (and cached) before the module was written
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise AdapterLoadError(_not_found(module_name, target, exc.name, import_paths)) from None
        where = f" in {home}" if home is not None else _origin(top)
        raise AdapterLoadError(
            f"module {module_name!r} for adapter {target!r} was found{where} but importing it failed: {type(exc).__name__}: {exc}; "
            f"install {exc.name!r} into this environment ({sys.executable} -m pip install ...)"
        ) from exc
    except Exception as exc:  # anything the module raises while importing
        raise AdapterLoadError(f"cannot import module {module_name!r} for adapter {target!r}: {type(exc).__name__}: {exc}") from exc


def _local_home(top: str, import_paths: Sequence[Path]) -> Path | None:
    """The first directory of ``import_paths`` holding ``top.py`` or a ``top/`` package."""
    for directory in import_paths:
        if (directory / f"{top}.py").is_file() or (directory / top).is_dir():
            return directory.resolve()
    return None


def _origin(top: str) -> str:
    module = sys.modules.get(top)
    location = getattr(module, "__file__", None) if module is not None else None
    return f" (at {location})" if location else ""


def _not_found(module_name: str, target: str, missing: str, import_paths: Sequence[Path]) -> str:
    file_name = module_name.replace(".", "/") + ".py"
    stem = missing.replace(".", "/")
    looked = [f"  - {directory} (no {stem}.py or {stem}/ there)" for directory in dict.fromkeys(import_paths)]
    looked.append(f"  - the installed packages of {sys.executable}")
    return (
        f"cannot import module {module_name!r} for adapter {target!r}: no module named {missing!r}.\n"
        "Looked in:\n" + "\n".join(looked) + "\n"
        f"Put {file_name} in the directory you run pytest from or in the rootdir (where pytest.ini, pyproject.toml or "
        f"setup.cfg is), or install the package that holds it into this environment (pip install -e .), "
        f"or name a registered adapter (registered: {', '.join(sorted(registered_adapters())) or 'none installed'})."
    )


def accepts_keyword(cls: type[Any], name: str, *, via_kwargs: bool = True) -> bool:
    """Whether ``cls(...)`` takes the keyword ``name``: by name, or (``via_kwargs``) through ``**kwargs``."""
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return via_kwargs
    if name in parameters and parameters[name].kind is not inspect.Parameter.POSITIONAL_ONLY:
        return True
    return via_kwargs and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
