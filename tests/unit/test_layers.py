"""The layers contract ([tool.importlinter] in pyproject.toml) holds on the tree, and breaks on a wrong import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is part of the dev extra")


def lint_imports(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(config)], cwd=src.parent, env=env, capture_output=True, text=True, timeout=120
    )


def copy_of_the_tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return src


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = lint_imports(copy_of_the_tree(tmp_path), ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout


LOOP = "\nimport pytest_lens.scoring.{0}  # noqa: F401\n"
LAZY_PYTEST = "\ndef _probe() -> None:\n    import pytest  # noqa: F401\n"
TYPE_CHECKING_UP = "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pytest_lens.runs import session  # noqa: F401\n"


@pytest.mark.parametrize(
    ("edits", "broken"),
    [
        # A core module that imports pytest, even lazily inside a function.
        ({"analysis/gates.py": LAZY_PYTEST}, "Only the plugin layer imports pytest or xdist BROKEN"),
        # A lower layer that imports a higher one, even under TYPE_CHECKING.
        ({"records/budget.py": TYPE_CHECKING_UP}, "Layers: each package imports only the layers below it BROKEN"),
        # The core finding its data through the fixtures package.
        ({"suites/selection.py": "\nimport lens_fixtures.adapters  # noqa: F401\n"}, "The core never imports lens_fixtures"),
        # Two modules of one layer that import each other.
        (
            {"scoring/metrics.py": LOOP.format("composite"), "scoring/composite.py": LOOP.format("metrics")},
            "No import loops between sibling modules BROKEN",
        ),
    ],
    ids=["pytest-in-core", "upward", "lens-fixtures", "loop"],
)
def test_a_wrong_import_breaks_its_contract(tmp_path: Path, edits: dict[str, str], broken: str) -> None:
    src = copy_of_the_tree(tmp_path)
    for module, line in edits.items():
        target = src / "pytest_lens" / module
        target.write_text(target.read_text() + line)
    result = lint_imports(src, ROOT / "pyproject.toml")
    assert result.returncode == 1, result.stdout
    assert broken in " ".join(result.stdout.split())
