"""Repository-wide pytest configuration for pytest-lens's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).parent
SHARED = REPO.parent / "shared"
LENS_SCOPE = SHARED / "datasets" / "lens" / "scope_01_with_distractors.json"


@pytest.fixture(scope="session")
def lens_scope_path() -> Path:
    """The real public LENS scope (read from ../shared, never copied into the package)."""
    if not LENS_SCOPE.exists():
        pytest.skip(f"the public LENS scope is not available at {LENS_SCOPE}")
    return LENS_SCOPE
