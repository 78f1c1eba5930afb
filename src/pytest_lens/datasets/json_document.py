"""Reading the JSON files users hand us: datasets, scope directories, labels sidecars, imports, run artifacts.

Every loader parses through :func:`read_json` (or :func:`read_json_lines` for ``.jsonl``), so every
one of them treats hostile input alike: a document nested deeper than :data:`MAX_DEPTH` levels
(``[`` a hundred thousand times over) is an ordinary error naming the line and column, never a
``RecursionError`` from the parser or from the code that walks what it returned. The parser is
pydantic-core's (the one that already read run artifacts): iterative, and faster than :mod:`json`
on our files.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES_ENV",
    "JsonDocumentError",
    "max_input_bytes",
    "read_input",
    "read_json",
    "read_json_lines",
    "regular_file",
]

#: How deep arrays and objects may nest (pydantic-core's limit; LENS datasets and run artifacts nest seven levels).
MAX_DEPTH = 200
_BOM = b"\xef\xbb\xbf"
_AT = re.compile(r" at line (\d+) column (\d+)$")


#: The environment variable that raises (or lowers) the largest input file read, in bytes.
MAX_INPUT_BYTES_ENV = "LENS_MAX_INPUT_BYTES"
#: The largest input file read by default: 4 GiB (LongMemEval's largest file is 2.7 GB).
_DEFAULT_MAX_INPUT_BYTES = 4 << 30


def max_input_bytes() -> int:
    """The largest input file read: ``$LENS_MAX_INPUT_BYTES`` when set to a positive whole number, else 4 GiB."""
    text = os.environ.get(MAX_INPUT_BYTES_ENV, "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else _DEFAULT_MAX_INPUT_BYTES


def regular_file(path: Path) -> os.stat_result:
    """``path``'s status when it is a regular file; a device, pipe or directory is a :class:`JsonDocumentError` (``not_a_file``)."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(info.st_mode)
            else "a device"
            if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
            else ("a named pipe" if stat.S_ISFIFO(info.st_mode) else "not a regular file")
        )
        raise JsonDocumentError("not_a_file", f"{path} is {kind}, not a file")
    return info


def read_input(path: Path) -> bytes:
    """The bytes of a dataset or import file, bounded.

    A device, pipe or directory, or a file over :func:`max_input_bytes`, is a :class:`JsonDocumentError`
    (``not_a_file``, ``too_large``) before anything is read; ``OSError`` when the file cannot be opened or read.
    """
    info = regular_file(path)
    limit = max_input_bytes()
    with path.open("rb") as handle:
        # Read what stat says is there (read(n) allocates n bytes up front: never ask for the whole limit), then on
        # in pieces if the file grew since stat, up to one byte past the limit.
        data = handle.read(min(limit, info.st_size) + 1)
        if len(data) > info.st_size:
            chunks, total = [data], len(data)
            while total <= limit and (chunk := handle.read(min(1 << 24, limit + 1 - total))):
                chunks.append(chunk)
                total += len(chunk)
            data = b"".join(chunks)
    if len(data) > limit or info.st_size > limit:
        raise JsonDocumentError(
            "too_large", f"{path} is larger than {limit:,} bytes, the most read (set {MAX_INPUT_BYTES_ENV} to read larger files)"
        )
    return data


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
