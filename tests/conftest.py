"""Fixtures shared by pytest-lens's own tests."""

from __future__ import annotations

from pathlib import Path

# numpy's C extension cannot be loaded twice in one process, and pytester's in-process runs drop
# the modules first imported inside them; importing numpy and scipy.stats here, before any
# run, keeps them loaded for the whole session (pytest-lens's summaries use them).
import numpy  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

from pytest_lens.datasets import LoadedScope, load_dataset
from tests.support import small_dataset, write_dataset


@pytest.fixture
def small_scope(tmp_path: Path) -> LoadedScope:
    """The six-episode scope of :func:`tests.support.small_dataset`, loaded and validated."""
    return load_dataset(write_dataset(tmp_path / "small.json", small_dataset())).scopes[0]
