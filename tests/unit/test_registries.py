"""Every module and ``module:attr`` named by a string resolves: a moved module fails here, not silently in a run.

The registries are walked, not copied: a new entry in any of them (or a new ``_LAZY`` table in any package, or a
new string literal naming one of our modules anywhere in the source) is covered without touching this file.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import lens_fixtures
import pytest_lens
from pytest_lens.agents import AGENTS
from pytest_lens.controls.plan import CONTROL_MEMORIES
from pytest_lens.datasets.importers import FORMATS
from pytest_lens.plugin import warm_up
from pytest_lens.plugin.hooks import OWN_PACKAGES
from pytest_lens.reports.html import REPORT_MODULES
from pytest_lens.suites import SUITES

REPO = Path(__file__).parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
OURS = OWN_PACKAGES
#: ``pytest_lens.<name>`` strings that name no module: entry-point groups.
NOT_MODULES = {"pytest_lens.adapters", "pytest_lens.adapter_schemes"}


def resolve(target: str) -> Any:
    """The module of ``module`` or the object of ``module:attr.attr``."""
    module_name, _, attribute = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        obj = getattr(obj, part)
    return obj


def our_modules() -> Iterator[str]:
    """Every module of our packages, by walking the installed source (a subpackage's ``__init__`` included)."""
    for package in (pytest_lens, lens_fixtures):
        yield package.__name__
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            yield info.name


def lazy_tables() -> Iterator[tuple[str, str, str]]:
    """``(package, name, module)`` for every entry of every package's ``_LAZY`` table (resolved by ``__getattr__``)."""
    for name in our_modules():
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            continue  # not a package
        package = importlib.import_module(name)
        for attribute, module in getattr(package, "_LAZY", {}).items():
            yield name, attribute, module


def string_targets() -> Iterator[tuple[str, str]]:
    """``(file:line, text)`` for every string literal in our source that reads as one of our modules or ``module:attr``."""
    shape = re.compile(rf"(?:{'|'.join(OURS)})(?:\.\w+)*(?::\w+(?:\.\w+)*)?")
    for package in (pytest_lens, lens_fixtures):
        root = Path(package.__path__[0])
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
                if shape.fullmatch(text) and text not in NOT_MODULES:
                    yield f"{path.relative_to(root.parent)}:{node.lineno}", text


def entry_points() -> Iterator[tuple[str, str]]:
    """``(group, target)`` for every entry point this project declares in pyproject.toml."""
    for group, points in PYPROJECT["project"].get("entry-points", {}).items():
        for target in points.values():
            yield group, target


LAZY = list(lazy_tables())
STRINGS = list(string_targets())
WARM_UPS = {
    "SUMMARY_MODULES": warm_up.SUMMARY_MODULES,
    "TEST_MODULES": warm_up.TEST_MODULES,
    "ANSWER_MODULES": warm_up.ANSWER_MODULES,
    "REPORT_MODULES": REPORT_MODULES,
}


def test_the_walks_find_the_registries_they_are_meant_to_cover() -> None:
    # A guard on the guards: walks that found nothing would pass while covering nothing.
    assert {package for package, _, _ in LAZY} >= {"pytest_lens", "pytest_lens.generator", "pytest_lens.conformance"}
    found = {text for _, text in STRINGS}
    for registry in (SUITES, AGENTS, FORMATS, CONTROL_MEMORIES):
        assert set(registry.values()) <= found
    assert set(warm_up.SUMMARY_MODULES) & found
    assert "pytest_lens.plugin.conformance.hooks" in found  # hooks.py's pytest_plugins
    assert {group for group, _ in entry_points()} >= {"pytest11", "pytest_lens.adapters", "pytest_lens.adapter_schemes"}


def test_a_moved_target_fails_to_resolve() -> None:
    with pytest.raises(ModuleNotFoundError):
        resolve("pytest_lens.agents.moved:OfflineAgent")
    with pytest.raises(AttributeError):
        resolve("pytest_lens.agents.offline:RenamedAgent")


@pytest.mark.parametrize(("package", "name", "module"), LAZY, ids=[f"{p}.{n}" for p, n, _ in LAZY])
def test_every_lazy_name_resolves_from_its_module_and_its_package(package: str, name: str, module: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{package}._LAZY[{name!r}] = {module!r} has no {name}"
    assert getattr(importlib.import_module(package), name) is getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(("where", "target"), STRINGS, ids=[f"{w}={t}" for w, t in STRINGS])
def test_every_string_naming_one_of_our_modules_resolves(where: str, target: str) -> None:
    # Covers SUITES, AGENTS, FORMATS, CONTROL_MEMORIES, the _LAZY values, the warm-up lists' own modules,
    # REPORT_MODULES, pytest_plugins, resources.files(...) and anything added later.
    assert resolve(target) is not None, f"{where}: {target!r}"


@pytest.mark.parametrize(("group", "target"), list(entry_points()), ids=[f"{g}={t}" for g, t in entry_points()])
def test_every_entry_point_in_pyproject_resolves(group: str, target: str) -> None:
    refusal = ""
    try:
        assert resolve(target) is not None
    except ImportError as exc:
        refusal = str(exc)
    if refusal:
        # An adapter behind an extra that is not installed here (the README's set-up installs only `dev`) refuses to
        # load, naming the extra to install; a moved or misspelled module names none and still fails.
        named = [extra for listed in INSTALL_HINT.findall(refusal) for extra in listed.split(",")]
        assert named, f"{target}: {refusal}"
        assert set(named) <= set(PYPROJECT["project"]["optional-dependencies"]), f"{target}: {refusal}"


#: How an adapter behind an extra says what to install.
INSTALL_HINT = re.compile(r"pip install 'pytest-lens\[([\w,-]+)\]'")


@pytest.mark.parametrize("registry", [SUITES, AGENTS, FORMATS, CONTROL_MEMORIES], ids=["SUITES", "AGENTS", "FORMATS", "CONTROL_MEMORIES"])
def test_every_registry_entry_is_a_module_attr_target(registry: dict[str, str]) -> None:
    for name, target in registry.items():
        _, sep, attribute = target.partition(":")
        assert sep and attribute, f"{name}: {target!r} is not module:attr"
        assert not isinstance(resolve(target), ModuleType)


def declared_distributions() -> set[str]:
    """The normalised names of the distributions pyproject.toml depends on, extras included."""
    extras = PYPROJECT["project"]["optional-dependencies"].values()
    requirements = [*PYPROJECT["project"]["dependencies"], *(requirement for extra in extras for requirement in extra)]
    return {normalise(re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]) for requirement in requirements}


def normalise(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


@pytest.mark.parametrize("name", list(WARM_UPS))
def test_every_warm_up_module_is_ours_and_exists_or_comes_with_a_declared_dependency(name: str) -> None:
    # Our own must import (import_quietly raises for a missing one, but on a background thread); a third-party one
    # must come with a dependency or extra we declare, or the warm-up imports what no install of ours has.
    providers = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    for module in WARM_UPS[name]:
        top = module.partition(".")[0]
        if top in OURS:
            importlib.import_module(module)
        else:
            assert {normalise(d) for d in providers.get(top, [])} & declared, f"{name}: {module!r} is not from a declared dependency"
