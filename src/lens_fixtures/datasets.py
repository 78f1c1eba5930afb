"""Datasets bundled with pytest-lens, used when no ``--lens-dataset`` is given."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "bundled_dataset_paths", "bundled_suite_paths"]

DATA_DIR = Path(__file__).parent / "data"


def bundled_dataset_paths() -> list[Path]:
    """Every bundled LENS-format file, sorted by name."""
    return sorted(DATA_DIR.glob("*.json"))


def bundled_suite_paths(suite: str) -> list[Path]:
    """The bundled files of one suite: ``data/*.json`` for ``lens``, ``data/<suite>/*.json`` otherwise."""
    if suite == "lens":
        return bundled_dataset_paths()
    return sorted((DATA_DIR / suite).glob("*.json"))
