"""A run's per-question rows on disk: a JSON Lines file beside the run document, written as questions finish, read lazily.

``--lens-json=run.json`` writes the rows to ``run.rows.jsonl`` (:func:`rows_path`), one compact
:class:`~pytest_lens.records.results.QuestionResult` per line, each flushed when its question is recorded
(:class:`RowWriter`): a run that is killed keeps every row it recorded. When the run finishes the file is rewritten in
the run's case order (only if it is out of it), so the same run gives the same file whatever order xdist or
concurrent answering finished its questions in. :class:`FileRows` reads it back one row at a time, whole or without the
transcripts (:meth:`FileRows.scored`): computing over 10^5 rows costs a few kilobytes a row, not tens.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from pytest_lens.datasets.json_document import JsonDocumentError, regular_file
from pytest_lens.records.results import TRANSCRIPT_FIELDS, QuestionResult, ResultRows, RowsFile, ScoredResult, score_problem

__all__ = [
    "MAX_ROW_BYTES",
    "ROWS_SUFFIX",
    "FileRows",
    "ItemKey",
    "RowError",
    "RowSpan",
    "RowWriter",
    "problems",
    "read_artifact_json",
    "rows_path",
    "write_rows",
]

#: What ``run.json``'s rows file is called: ``run.rows.jsonl``.
ROWS_SUFFIX = ".rows.jsonl"

#: The longest row read (a row's answer and tool arguments are cut at 20,000 characters: rows are kilobytes).
MAX_ROW_BYTES = 64 << 20

#: A row's identity: (adapter, scope, budget, question, repetition).
ItemKey = tuple[str, str, str, str, int]

#: Where a row's bytes are: (file, offset, length with its newline).
RowSpan = tuple[Path, int, int]


class RowError(ValueError):
    """A row cannot be read: the message names the file, the line and the field at fault."""


def problems(exc: ValidationError, whole: str) -> str:
    """``N problem(s); first: field.path: message`` (``whole`` names a problem with no field)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or whole
    return f"{exc.error_count()} problem(s); first: {where}: {first['msg']}"


def rows_path(document: Path) -> Path:
    """The rows file of the run document at ``document``: ``run.json`` -> ``run.rows.jsonl``."""
    name = document.name
    return document.with_name((name[: -len(".json")] if name.endswith(".json") else name) + ROWS_SUFFIX)


def read_artifact_json(path: Path) -> dict[str, Any]:
    """A run artifact as one JSON object, as a single-file artifact held it: the document, its rows as ``results``.

    For scripts and tests that read the JSON as it is; every row is read into memory (``load_run`` reads them lazily).
    """
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if "results" not in document:
        rows = document.get("rows") or {}
        source = path.with_name(str(rows.get("file"))) if rows.get("file") else rows_path(path)
        document["results"] = [json.loads(line) for line in source.read_bytes().splitlines() if line.strip()]
    return document


class _Counted(BaseModel):
    """A tool call read only to be counted: nothing of it is kept."""

    model_config = ConfigDict(extra="ignore")


#: A row's fields without its transcript, and its tool calls as things to count: validated by pydantic-core
#: straight from the line's bytes, so the skipped fields are parsed in Rust and never become Python objects.
_ScoredRow: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "_ScoredRow",
    __config__=ConfigDict(extra="ignore"),
    **{name: (field.annotation, field) for name, field in QuestionResult.model_fields.items() if name not in TRANSCRIPT_FIELDS},
    tool_calls=(list[_Counted], []),
)


def _scored(line: bytes) -> ScoredResult:
    row = _ScoredRow.model_validate_json(line)
    fields = dict(row.__dict__)
    calls = fields.pop("tool_calls")
    return ScoredResult.of(fields, len(calls))


def _full(line: bytes) -> QuestionResult:
    return QuestionResult.model_validate_json(line)


class FileRows(ResultRows):
    """The rows of a run document, read from its JSON Lines file each time they are iterated.

    ``count``: rows the document says the file holds (``None``: the run did not finish; every complete line is a row,
    and a last line cut short by the end of the run is left out). A row that is not a result, a score out of its
    range, a result recorded twice, or a count that does not match is a :class:`RowError` naming the file and line.
    """

    def __init__(self, path: Path, count: int | None = None) -> None:
        self.path = path
        self.declared = count

    def __len__(self) -> int:
        return self.declared if self.declared is not None else sum(1 for _ in self._lines())

    def __iter__(self) -> Iterator[QuestionResult]:
        return self._read(_full)

    def scored(self) -> Iterator[QuestionResult]:
        """Every row without its transcript (:class:`~pytest_lens.records.results.ScoredResult`)."""
        return self._read(_scored)

    def lines(self) -> Iterator[bytes]:
        """Every row as the file holds it."""
        return (line for _, _, line in self._lines())

    def scored_spans(self) -> Iterator[tuple[QuestionResult, RowSpan]]:
        """Every row without its transcript, with where its bytes are in the file (to copy it without parsing it whole)."""
        spans: list[RowSpan] = []
        for result in self._read(_scored, spans):
            yield result, spans[-1]

    def pick(self, positions: Collection[int]) -> dict[int, QuestionResult]:
        """The rows at ``positions``, read whole (the other lines are skipped, not parsed)."""
        wanted = set(positions)
        found: dict[int, QuestionResult] = {}
        for number, _, line in self._lines():
            if number - 1 in wanted:
                try:
                    found[number - 1] = _full(line)
                except ValidationError as exc:
                    raise RowError(f"{self.path}:{number}: not a pytest-lens result row ({problems(exc, '(row)')})") from None
        return found

    def _read(self, parse: Callable[[bytes], QuestionResult], spans: list[RowSpan] | None = None) -> Iterator[QuestionResult]:
        seen: dict[ItemKey, int] = {}
        for number, start, line in self._lines():
            if spans is not None:
                spans.append((self.path, start, len(line) + 1))
            try:
                result = parse(line)
            except ValidationError as exc:
                raise RowError(f"{self.path}:{number}: not a pytest-lens result row ({problems(exc, '(row)')})") from None
            problem = score_problem(result)
            if problem is not None:
                raise RowError(f"{self.path}:{number}: {problem}; the file is damaged or was not written by pytest-lens")
            earlier = seen.setdefault(result.item_key, number)
            if earlier != number:
                shown = "/".join(map(str, result.item_key))
                raise RowError(f"{self.path}:{number}: duplicates line {earlier} ({shown}); a run has one row per answer")
            yield result

    def _lines(self) -> Iterator[tuple[int, int, bytes]]:
        """``(number, start, row)``: each complete row's line number, offset in the file and bytes (no newline)."""
        try:
            regular_file(self.path)  # never a device, a pipe or a directory
            file = open(self.path, "rb")  # noqa: SIM115 - closed by the with below, once the generator ends
        except JsonDocumentError as exc:
            raise RowError(f"cannot read the run's rows: {exc}") from None
        except OSError as exc:
            raise RowError(f"{self.path}: cannot read the run's rows ({exc.strerror or exc})") from None
        rows = start = 0
        with file:
            while line := file.readline(MAX_ROW_BYTES + 1):
                if len(line) > MAX_ROW_BYTES:
                    raise RowError(f"{self.path}:{rows + 1}: a row longer than {MAX_ROW_BYTES:,} bytes; the file is not a rows file")
                if not line.endswith(b"\n"):  # the run was killed while writing this row: it was never recorded whole
                    if self.declared is not None:
                        raise RowError(f"{self.path}:{rows + 1}: the last row is cut short; the file is damaged")
                    break
                rows += 1
                yield rows, start, line[:-1]
                start += len(line)
        if self.declared is not None and rows != self.declared:
            raise RowError(f"{self.path}: {rows} rows, the run document says {self.declared}; the file is damaged or not this run's")


def write_rows(path: Path, lines: Iterator[bytes]) -> RowsFile:
    """Write ``lines`` (compact JSON rows) to ``path`` whole or not at all (a temporary file renamed over it)."""
    partial = path.with_name(path.name + ".partial")
    digest, count = hashlib.sha256(), 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as file:
            for line in lines:
                data = line + b"\n"
                file.write(data)
                digest.update(data)
                count += 1
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise
    return RowsFile(file=path.name, count=count, sha256=digest.hexdigest())


class RowWriter:
    """A run's rows file while the run runs: every recorded result appended and flushed, then put in case order.

    A row can also be given by where it already is (:meth:`refer`: a shard's rows file, in ``lens merge``): it is copied,
    never parsed again, when the rows are put in order. A result recorded again for the same answer (a watchdog's
    rescue, a rerun) replaces the earlier one then; until then both lines are in the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None
        self._digest = hashlib.sha256()
        #: Each recorded row's key and where its bytes are (this file's own rows included), in the order recorded.
        self._rows: list[tuple[ItemKey, RowSpan]] = []
        self._end = 0
        self._finished: RowsFile | None = None

    @property
    def keys(self) -> set[ItemKey]:
        """The answers recorded so far."""
        return {key for key, _ in self._rows}

    def open(self) -> None:
        """Create the file (empty): from now on a killed run leaves every row written in it."""
        if self._finished is not None:
            raise ValueError(f"{self.path}: the rows were put in order already; a result recorded now would be lost")
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "wb")  # noqa: SIM115 - closed by finish() or close()

    def write(self, result: QuestionResult) -> None:
        """Append ``result``'s row and flush it to the operating system (a killed process keeps it)."""
        self.open()
        assert self._file is not None
        data = result.model_dump_json().encode("utf-8") + b"\n"
        self._file.write(data)
        self._file.flush()
        self._digest.update(data)
        self._rows.append((result.item_key, (self.path, self._end, len(data))))
        self._end += len(data)

    def refer(self, key: ItemKey, span: RowSpan) -> None:
        """Record the row of ``key`` as the bytes at ``span`` of another file, copied when the rows are put in order."""
        if self._finished is not None:
            raise ValueError(f"{self.path}: the rows were put in order already; a result recorded now would be lost")
        self._rows.append((key, span))

    def finish(self, position: Callable[[ItemKey], Any]) -> RowsFile:
        """Close the file, written in the order of ``position`` (a sort key of an item) unless it is so already."""
        if self._finished is not None:
            return self._finished
        self.close()
        latest = {key: span for key, span in self._rows}
        ordered = sorted(latest, key=position)
        in_place = self._end > 0 and all(span[0] == self.path for _, span in self._rows)  # every row this file's own
        if in_place and len(latest) == len(self._rows) and ordered == [key for key, _ in self._rows]:
            self._finished = RowsFile(file=self.path.name, count=len(self._rows), sha256=self._digest.hexdigest())
        else:
            self._finished = write_rows(self.path, _copied([latest[key] for key in ordered]))
        return self._finished

    def close(self) -> None:
        """Close the file as it is (a run that ends without finishing: every row written stays)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def discard(self) -> None:
        """Close and remove the file (it could not be written whole: the rows are written again, whole, at the end)."""
        with contextlib.suppress(OSError):
            self.close()
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)


def _copied(spans: list[RowSpan]) -> Iterator[bytes]:
    """The rows at ``spans``, in that order, without their newlines (each file opened once)."""
    with contextlib.ExitStack() as stack:
        files: dict[Path, IO[bytes]] = {}
        for path, start, length in spans:
            source = files.get(path)
            if source is None:
                source = files[path] = stack.enter_context(open(path, "rb"))
            source.seek(start)
            data = source.read(length)
            if len(data) != length or not data.endswith(b"\n"):
                raise RowError(f"{path}: the row at byte {start} changed since it was read; the file was written meanwhile")
            yield data[:-1]
