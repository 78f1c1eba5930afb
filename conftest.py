"""Repository-wide pytest configuration for pytest-lens's own tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).parent


def _shared_dir() -> Path:
    """``../shared`` next to the checkout (or next to an ancestor, for git worktrees); ``LENS_SHARED_DIR`` overrides."""
    if "LENS_SHARED_DIR" in os.environ:
        return Path(os.environ["LENS_SHARED_DIR"])
    for parent in REPO.parents:
        if (parent / "shared" / "datasets").is_dir():
            return parent / "shared"
    return REPO.parent / "shared"


SHARED = _shared_dir()
LENS_SCOPE = SHARED / "datasets" / "lens" / "scope_01_with_distractors.json"


@pytest.fixture(scope="session")
def lens_scope_path() -> Path:
    """The real public LENS scope (read from ../shared, never copied into the package)."""
    if not LENS_SCOPE.exists():
        pytest.skip(f"the public LENS scope is not available at {LENS_SCOPE} (set LENS_SHARED_DIR)")
    return LENS_SCOPE


LOCOMO_FILE = SHARED / "datasets" / "locomo" / "locomo10.json"


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    """The real LoCoMo file (CC BY-NC: read from ../shared, never copied into the package)."""
    if not LOCOMO_FILE.exists():
        pytest.skip(f"the LoCoMo file is not available at {LOCOMO_FILE}")
    return LOCOMO_FILE


LENS_V2_SCOPE = SHARED / "datasets" / "lens-v2" / "16_parking_friction"


@pytest.fixture(scope="session")
def lens_v2_scope_path() -> Path:
    """A real LENS scope directory (the reference's V2 layout; read from ../shared, never copied into the package)."""
    if not (LENS_V2_SCOPE / "spec.yaml").exists():
        pytest.skip(f"the LENS V2 scope directory is not available at {LENS_V2_SCOPE} (set LENS_SHARED_DIR)")
    return LENS_V2_SCOPE
