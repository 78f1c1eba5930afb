"""Where the benchmarks find the real data sets: ``$LENS_SHARED_DIR``, else ``shared/`` beside the checkout or an ancestor."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SHARED"]

_ROOT = Path(__file__).resolve().parents[1]

#: The shared folder holding ``datasets/lens``, ``datasets/locomo`` (never copied into the package).
SHARED = (
    Path(os.environ["LENS_SHARED_DIR"])
    if "LENS_SHARED_DIR" in os.environ
    else next((p / "shared" for p in _ROOT.parents if (p / "shared" / "datasets").is_dir()), _ROOT.parent / "shared")
)
