"""Reading fields of foreign documents with errors that name the field."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pytest_lens.datasets.importers import ImportFormatError

__all__ = ["as_list", "parse_time", "require"]


def require(mapping: Any, key: str, where: str, kind: type | tuple[type, ...] | None = None) -> Any:
    """``mapping[key]``; :class:`ImportFormatError` naming ``where.key`` when missing or of the wrong type."""
    if not isinstance(mapping, dict):
        raise ImportFormatError(where, f"expected an object, got {type(mapping).__name__}")
    if key not in mapping:
        raise ImportFormatError(f"{where}.{key}", "missing")
    value = mapping[key]
    if kind is not None and not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ImportFormatError(f"{where}.{key}", f"expected {expected}, got {type(value).__name__}")
    return value


def as_list(document: Any, where: str) -> list[Any]:
    """A top-level list (a single object is a list of one)."""
    if isinstance(document, dict):
        return [document]
    if not isinstance(document, list):
        raise ImportFormatError(where, f"expected a list of records, got {type(document).__name__}")
    return document


def parse_time(text: Any, formats: tuple[str, ...], where: str) -> datetime:
    """The first of ``formats`` that parses ``text``."""
    if isinstance(text, str):
        for fmt in formats:
            try:
                return datetime.strptime(text.strip(), fmt)
            except ValueError:
                continue
    raise ImportFormatError(where, f"unrecognised date {text!r}")
