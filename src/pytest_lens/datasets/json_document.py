"""Reading the JSON files users hand us: datasets, scope directories, labels sidecars, imports, run artifacts.

Every loader parses through :func:`read_json` (or :func:`read_json_lines` for ``.jsonl``), so every
one of them treats hostile input alike: a document nested deeper than :data:`MAX_DEPTH` levels
(``[`` a hundred thousand times over) is an ordinary error naming the line and column, never a
``RecursionError`` from the parser or from the code that walks what it returned. The parser is
pydantic-core's (the one that already read run artifacts): iterative, and faster than :mod:`json`
on our files.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_DEPTH", "JsonDocumentError", "read_json", "read_json_lines"]

#: How deep arrays and objects may nest (pydantic-core's limit; LENS datasets and run artifacts nest seven levels).
MAX_DEPTH = 200
_BOM = b"\xef\xbb\xbf"
_AT = re.compile(r" at line (\d+) column (\d+)$")


class JsonDocumentError(ValueError):
    """Bytes that are not a usable JSON document; ``code`` is ``invalid_json`` or ``too_deep``, ``line`` 1-based."""

    def __init__(self, code: str, message: str, line: int | None = None) -> None:
        self.code = code
        self.line = line
        super().__init__(message)


def read_json(data: bytes | str) -> Any:
    """The value in a JSON document (a UTF-8 byte-order mark is allowed); :class:`JsonDocumentError` otherwise."""
    return _parse(data, line_offset=0)


def read_json_lines(data: bytes) -> list[Any]:
    """One value per non-blank line of a JSON Lines document; an error names the line of the file it is on."""
    rows: list[Any] = []
    for number, line in enumerate(data.removeprefix(_BOM).splitlines(), start=1):
        if line.strip():
            rows.append(_parse(line, line_offset=number - 1))
    return rows


def _parse(data: bytes | str, *, line_offset: int) -> Any:
    import pydantic_core

    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    try:
        return pydantic_core.from_json(data.removeprefix(_BOM))
    except ValueError as exc:
        raise _error(str(exc), line_offset) from None


def _error(problem: str, line_offset: int) -> JsonDocumentError:
    found = _AT.search(problem)
    line = int(found.group(1)) + line_offset if found else None
    where = f" at line {line} column {found.group(2)}" if found else ""
    problem = problem[: found.start()] if found else problem
    if problem == "recursion limit exceeded":
        return JsonDocumentError("too_deep", f"nested too deeply (over {MAX_DEPTH} levels){where}", line)
    return JsonDocumentError("invalid_json", f"not valid JSON: {problem}{where}", line)
