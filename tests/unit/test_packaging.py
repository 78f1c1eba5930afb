"""One source for the version, and a changelog that names it; the built wheel itself is checked by .ci/wheel-smoke."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest_lens

ROOT = Path(__file__).parents[2]


def test_the_version_is_defined_once_in_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "pyproject.toml must not spell the version: it reads pytest_lens.__version__"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pytest_lens.__version__"}
    # setuptools reads the attribute without importing the package only when it is a literal.
    module = ast.parse((ROOT / "src" / "pytest_lens" / "__init__.py").read_text(encoding="utf-8"))
    literal = [
        node.value.value
        for node in module.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
        and isinstance(node.value, ast.Constant)
    ]
    assert literal == [pytest_lens.__version__]


def test_the_changelog_has_a_section_for_the_current_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+)", changelog, flags=re.MULTILINE)
    assert headings[0] == "Unreleased" or headings[0] == pytest_lens.__version__
    assert pytest_lens.__version__ in headings


def test_ci_tests_the_built_wheel() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash .ci/wheel-smoke .venv/bin/python" in ci
    smoke = (ROOT / ".ci" / "wheel-smoke").read_text(encoding="utf-8")
    for step in ("-m build", "twine check --strict", "python3 -m venv", "--lens-conformance -k roundtrip", "--lens-html"):
        assert step in smoke
