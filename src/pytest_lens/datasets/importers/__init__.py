"""Importers: the public formats of LoCoMo, LongMemEval, MEME and MemoryAgentBench into our dataset models.

Each importer is a function ``(document, source) -> Dataset`` over the parsed JSON; bad input raises
:class:`ImportFormatError` naming the field. A file can be used directly as ``--lens-dataset``: its
format is detected from its shape, or named with a prefix (``--lens-dataset=locomo:PATH``), and
``lens import FORMAT PATH --out FILE`` writes the converted dataset as LENS JSON.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_lens.datasets.models import Dataset

__all__ = ["FORMATS", "ImportFormatError", "detect_format", "import_document", "resolve_dataset_path", "split_format"]

#: Importable formats and their import functions.
FORMATS: dict[str, str] = {
    "locomo": "pytest_lens.datasets.importers.locomo:import_locomo",
    "longmemeval": "pytest_lens.datasets.importers.longmemeval:import_longmemeval",
    "meme": "pytest_lens.datasets.importers.meme:import_meme",
    "mab": "pytest_lens.datasets.importers.mab:import_mab",
}
_PREFIX = re.compile(r"(?:^|(?<=[/\\]))(lens|locomo|longmemeval|meme|mab):")


class ImportFormatError(ValueError):
    """The document is not valid in the format being imported; ``field`` says where."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class DocumentError(ValueError):
    """A dataset file that cannot be parsed at all.

    ``code`` names why: ``invalid_json``, ``too_deep``, ``invalid_parquet`` or ``needs_pyarrow``.
    """

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


def parse_document(raw: bytes, path: Path) -> Any:
    """The rows or object in a dataset file's bytes: JSON, JSON Lines (``.jsonl``) or parquet (``.parquet``, via pyarrow).

    Parquet (how MemoryAgentBench is released) needs ``pip install 'pytest-lens[mab]'``; every row
    becomes a dict of plain Python values. :class:`DocumentError` when the bytes are not what the
    suffix says, or nested too deeply (``too_deep``, see :mod:`pytest_lens.datasets.json_document`).
    """
    from pytest_lens.datasets.json_document import JsonDocumentError, read_json, read_json_lines

    if path.suffix == ".parquet":
        from pytest_lens.extras import missing_extra

        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            message = missing_extra("mab", "reading parquet") or f"reading parquet: pyarrow is installed but does not import: {exc}"
            raise DocumentError("needs_pyarrow", message) from None
        try:
            return pq.read_table(pa.BufferReader(raw)).to_pylist()
        except (pa.ArrowException, OSError) as exc:
            raise DocumentError("invalid_parquet", f"not a readable parquet file: {exc}") from None
    try:
        return read_json_lines(raw) if path.suffix == ".jsonl" else read_json(raw)
    except JsonDocumentError as exc:
        raise DocumentError(exc.code, str(exc)) from None


def split_format(path: Path | str) -> tuple[str | None, Path]:
    """``locomo:data/x.json`` -> (``locomo``, ``data/x.json``); a path without a format prefix -> (None, path).

    The prefix may follow a directory (ini paths are resolved relative to the ini file first):
    ``/proj/locomo:data/x.json`` -> (``locomo``, ``/proj/data/x.json``).
    """
    text = str(path)
    matches = list(_PREFIX.finditer(text))
    if not matches:
        return None, Path(text)
    match = matches[-1]
    rest = Path(text[match.end() :])
    base = text[: match.start()]
    return match.group(1), rest if rest.is_absolute() or not base else Path(base) / rest


def resolve_dataset_path(path: Path, rootdir: Path) -> Path:
    """``path`` made absolute against ``rootdir``, keeping a format prefix in front."""
    fmt, real = split_format(path)
    real = real if real.is_absolute() else rootdir / real
    return Path(f"{fmt}:{real}") if fmt else real


def _items(document: Any) -> list[Any]:
    return document if isinstance(document, list) else [document]


def detect_format(document: Any) -> str | None:
    """The format of a parsed JSON document, or ``None`` (LENS format, or unknown)."""
    if isinstance(document, dict) and "scopes" in document:
        return None
    items = _items(document)
    first = items[0] if items else None
    if not isinstance(first, dict):
        return None
    keys = set(first)
    if {"conversation", "qa"} <= keys:
        return "locomo"
    if "haystack_sessions" in keys and "question" in keys:
        return "longmemeval"
    if "sessions" in keys and ("after_questions" in keys or "before_questions" in keys):
        return "meme"
    if {"context", "questions", "answers"} <= keys:
        return "mab"
    return None


def importer(fmt: str) -> Callable[[Any, str], Dataset]:
    """The import function of ``fmt``."""
    try:
        target = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; available: {', '.join(FORMATS)}") from None
    module, _, name = target.partition(":")
    function: Callable[[Any, str], Dataset] = getattr(importlib.import_module(module), name)
    return function


def import_document(fmt: str, document: Any, source: str = "") -> Dataset:
    """Convert a parsed document of format ``fmt``; :class:`ImportFormatError` when it does not fit."""
    return importer(fmt)(document, source)
