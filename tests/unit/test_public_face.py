"""The public face: ``pytest_lens`` and ``pytest_lens.api``; the old flat paths forward with a DeprecationWarning."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

import pytest_lens
from pytest_lens import api

#: The paths the documentation taught before the layout of release 0.2, and where each moved.
MOVED = {
    "pytest_lens.adapter": ("pytest_lens.contract.adapter", "MemoryAdapter", "pytest_lens"),
    "pytest_lens.calls": ("pytest_lens.execution.calls", "AdapterCaller", "pytest_lens.api"),
    "pytest_lens.memory_context": ("pytest_lens.execution.memory_context", "fetch_context", "pytest_lens.api"),
    "pytest_lens.registry": ("pytest_lens.contract.registry", "load_adapter_class", "pytest_lens.api"),
    "pytest_lens.runner": ("pytest_lens.execution.runner", "LensRuntime", "pytest_lens.api"),
    "pytest_lens.settings": ("pytest_lens.records.settings", "AdapterSpec", "pytest_lens.api"),
}


def test_every_public_name_resolves_to_where_it_lives() -> None:
    assert sorted(api.SOURCES) == sorted(api.__all__)
    for name, module in api.SOURCES.items():
        assert getattr(api, name) is getattr(importlib.import_module(module), name)
    for name in pytest_lens.__all__:
        assert getattr(pytest_lens, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = api.nothing


def test_importing_the_api_module_imports_nothing_it_names() -> None:
    code = "import sys, pytest_lens.api; print(sorted(m for m in sys.modules if m.startswith(('pytest_lens.', 'pydantic', 'numpy'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == ["pytest_lens._lazy", "pytest_lens.api", "pytest_lens.contract", "pytest_lens.contract.adapter"]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_still_resolves_and_says_where_to_import_from(old: str) -> None:
    new, name, advice = MOVED[old]
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=re.escape(f"{old} moved to {new}: import {name} from {advice};")) as caught:
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)
    assert caught[0].filename == __file__  # the warning points at the importing line, not at pytest-lens


def test_an_old_path_refuses_a_name_its_new_module_lacks() -> None:
    with pytest.raises(AttributeError, match=r"pytest_lens\.execution\.calls"):
        _ = importlib.import_module("pytest_lens.calls").no_such_name
