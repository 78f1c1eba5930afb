"""Datasets bundled with pytest-lens, used when no ``--lens-dataset`` is given.

The LENS scopes in ``data/*.json`` are the generator's output for every domain at
:data:`BUNDLED_SEED`, byte for byte, each with its ground-truth labels beside it in
``data/*.labels.json`` (read by the scorer for ``signal_precision``, never by an agent;
a test regenerates and compares both)::

    lens generate --domain all --seed 1 --out src/pytest_lens/datasets/data --labels src/pytest_lens/datasets/data
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUNDLED_SEED", "DATA_DIR", "bundled_dataset_paths", "bundled_suite_paths"]

DATA_DIR = Path(__file__).parent / "data"
#: The generator seed of the bundled LENS scopes (``<domain>_s01.json``).
BUNDLED_SEED = 1


def bundled_dataset_paths() -> list[Path]:
    """Every bundled LENS-format file, sorted by name (not the ``*.labels.json`` sidecars)."""
    from pytest_lens.datasets.labels import is_labels_file

    return sorted(path for path in DATA_DIR.glob("*.json") if not is_labels_file(path))


def bundled_suite_paths(suite: str) -> list[Path]:
    """The bundled files of one suite: ``data/*.json`` for ``lens``, ``data/<suite>/*.json`` otherwise."""
    if suite == "lens":
        return bundled_dataset_paths()
    return sorted((DATA_DIR / suite).glob("*.json"))
