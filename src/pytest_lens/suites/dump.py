"""Writing datasets as LENS-format JSON (generated suites and importers share it)."""

from __future__ import annotations

import json
from typing import Any

from pytest_lens.datasets.models import Dataset

__all__ = ["dump_dataset"]


def dump_dataset(dataset: Dataset) -> str:
    """Deterministic, indented JSON; optional fields left at their defaults are omitted.

    The output is a valid LENS file: ``version``, ``suite``, ``scopes`` and ``questions`` are always present.
    """
    body: dict[str, Any] = dataset.model_dump(mode="json", exclude_defaults=True)
    document = {
        "version": dataset.version,
        "suite": dataset.suite,
        "scopes": body.get("scopes", []),
        "questions": body.get("questions", []),
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"
