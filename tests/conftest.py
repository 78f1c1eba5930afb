"""Fixtures shared by pytest-lens's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lens.datasets import LoadedScope, load_dataset
from tests.support import small_dataset, write_dataset


@pytest.fixture
def small_scope(tmp_path: Path) -> LoadedScope:
    """The six-episode scope of :func:`tests.support.small_dataset`, loaded and validated."""
    return load_dataset(write_dataset(tmp_path / "small.json", small_dataset())).scopes[0]
