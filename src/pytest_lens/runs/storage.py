"""Saved runs: ``--lens-save`` writes, ``--lens-baseline`` and ``lens compare`` find and load.

Like pytest-benchmark's storage: ``<root>/<machine-id>/0001_NAME.json``, numbered per
machine kind, each a complete :class:`~pytest_lens.records.results.RunArtifact` (the run document, its rows beside it
in ``0001_NAME.rows.jsonl``) carrying machine, commit and dataset hashes, so a later run can tell what it is compared
with. Single-file artifacts written before the rows streamed (every result inline) still load.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from pytest_lens.datasets.json_document import JsonDocumentError, read_input, read_json
from pytest_lens.records.results import (
    ARTIFACT_SCHEMA_VERSION,
    INLINE_ROWS_SCHEMA_VERSION,
    CommitInfo,
    ListRows,
    MachineInfo,
    RowsFile,
    RunArtifact,
    score_problem,
)
from pytest_lens.records.rows import FileRows, RowError, problems, rows_path, write_rows
from pytest_lens.records.statistics import BaselineInfo

__all__ = [
    "Baseline",
    "OutputError",
    "RunStore",
    "SavedRun",
    "SavedRunError",
    "artifact_problem",
    "commit_info",
    "load_run",
    "machine_info",
    "open_baseline",
    "resolve_run",
    "write_document",
    "write_run",
    "write_whole",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SAVED = re.compile(r"^(\d{4,})_(.+)\.json$")


class SavedRunError(ValueError):
    """A saved run cannot be written, found or read; the message names the file or name and what to do."""


class OutputError(OSError):
    """An output file (artifact, HTML report, saved run) could not be written; nothing of it was left behind."""


def write_whole(path: Path, data: bytes, *, own: bool = False) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file renamed over it, removed if writing fails.

    A reader (or a parallel CI job) never sees half a file, a process that dies meanwhile leaves the earlier copy
    whole, and a full disk leaves no truncated file or ``.partial`` behind: :class:`OutputError` says what happened.
    ``own``: the temporary file is this process's (its pid in the name), for files several runs may write at once.
    """
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial" if own else f"{path.name}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as file:
            file.write(data)
        os.replace(partial, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise OutputError(exc.errno, exc.strerror or str(exc), str(path)) from None


def machine_info() -> MachineInfo:
    """The machine this process runs on."""
    return MachineInfo(
        node=platform.node(),
        system=platform.system(),
        release=platform.release(),
        machine=platform.machine(),
        processor=platform.processor(),
        python_implementation=platform.python_implementation(),
        python_version=platform.python_version(),
        cpu_count=os.cpu_count(),
    )


def commit_info(directory: Path) -> CommitInfo | None:
    """The git commit checked out at ``directory`` (``None`` outside a git work tree or without git)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=directory, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return CommitInfo(id=commit, branch=None if branch in (None, "HEAD") else branch, dirty=bool(status))


@dataclass(frozen=True)
class SavedRun:
    """One file in the store."""

    path: Path
    number: int
    name: str

    @property
    def label(self) -> str:
        """``0001_main``."""
        return self.path.stem


#: A run document past this size holds its rows inline (a single-file artifact: a streamed document is kilobytes).
_INLINE_CHECKED = 64 << 20
#: Memory that parsing such a document takes, per byte of it: 4.5 for real rows (transcripts), 8 for short rows.
_PARSE_FACTOR = 4


def _free_memory() -> int | None:
    """Bytes this process can still take: the least of what the machine has available and its address-space limit.

    ``None`` where neither is known (no ``/proc``).
    """

    def field(name: str, key: str) -> int | None:
        with contextlib.suppress(OSError, ValueError, StopIteration), open(name, encoding="ascii") as file:
            return next(int(line.split()[1]) for line in file if line.startswith(key)) * 1024
        return None

    found = [field("/proc/meminfo", "MemAvailable:")]
    with contextlib.suppress(ImportError):  # no resource module off Unix
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit != resource.RLIM_INFINITY and (used := field("/proc/self/status", "VmSize:")) is not None:
            found.append(limit - used)
    known = [value for value in found if value is not None]
    return min(known) if known else None


def _too_large_to_parse(path: Path) -> str | None:
    """Why a single-file artifact cannot be read here (parsed whole, it would not fit in memory), or ``None``.

    Parsing past the memory there is aborts the process (pydantic-core) or is a ``MemoryError`` at best: said first.
    """
    with contextlib.suppress(OSError):
        size = path.stat().st_size
        free = _free_memory() if size > _INLINE_CHECKED else None
        if free is not None and size * _PARSE_FACTOR > free:
            return (
                f"{path}: the run artifact ({size:,} bytes, its rows inline) needs about {size * _PARSE_FACTOR >> 20:,} MB "
                f"to read, and this process has {max(free, 0) >> 20:,} MB free"
            )
    return None


def load_run(path: Path) -> RunArtifact:
    """Read a run artifact: the document, its rows read lazily from the file beside it (or inline, in a single-file one).

    :class:`SavedRunError` names the file and the first field at fault; a row at fault is named when it is read
    (:class:`~pytest_lens.records.rows.RowError`).
    """
    if (refused := _too_large_to_parse(path)) is not None:
        raise SavedRunError(refused)
    try:
        document = read_json(read_input(path))  # a regular file, bounded: never /dev/zero, a FIFO or a directory
    except OSError as exc:
        raise SavedRunError(f"{path}: cannot read the run artifact ({exc.strerror or exc})") from None
    except JsonDocumentError as exc:
        if exc.code in ("not_a_file", "too_large"):
            raise SavedRunError(f"cannot read the run artifact: {exc}") from None
        raise SavedRunError(f"{path}: not a pytest-lens run artifact ({exc})") from None
    inline = isinstance(document, dict) and "results" in document
    try:
        artifact = RunArtifact.model_validate(document if inline or not isinstance(document, dict) else {**document, "results": []})
    except ValidationError as exc:
        raise SavedRunError(f"{path}: not a pytest-lens run artifact ({problems(exc, '(document)')})") from None
    problem = artifact_problem(artifact, inline=inline)
    if problem is not None:
        raise SavedRunError(f"{path}: {problem}; the file is damaged or was not written by pytest-lens")
    if artifact.rows is not None and not inline:
        artifact.results = FileRows(path.parent / artifact.rows.file, artifact.rows.count)
    return artifact


def artifact_problem(artifact: RunArtifact, *, inline: bool = True) -> str | None:
    """The first value a comparison would misread, as ``field: what is wrong`` (``None`` if there is none).

    The model checks types; this checks what a valid artifact holds: its schema version, where its rows are, and (for
    rows inline) scores in their ranges and one result per answer. A rows file's rows are checked as they are read.
    """
    version = artifact.schema_version
    if version > ARTIFACT_SCHEMA_VERSION or version < INLINE_ROWS_SCHEMA_VERSION:
        newer = "a newer" if version > ARTIFACT_SCHEMA_VERSION else "an unknown"
        known = f"{INLINE_ROWS_SCHEMA_VERSION} to {ARTIFACT_SCHEMA_VERSION}"
        return f"schema_version: {version} is {newer} artifact format (this pytest-lens reads {known})"
    if not inline:
        if artifact.rows is None:
            return "rows: missing (a run document names the file of its per-question rows)"
        if Path(artifact.rows.file).name != artifact.rows.file or artifact.rows.file in ("", ".", ".."):
            return f"rows.file: {artifact.rows.file!r} is not a file name (the rows file is beside its run document)"
        return None
    seen: dict[tuple[str, str, str, str, int], int] = {}
    for index, result in enumerate(artifact.results):
        where = f"results[{index}]"
        first = seen.setdefault(result.item_key, index)
        if first != index:
            adapter, scope, budget, question, repetition = result.item_key
            return (
                f"{where}: duplicates results[{first}] (adapter {adapter}, scope {scope}, budget {budget}, question {question}, "
                f"repetition {repetition}); a run has one result per answer"
            )
        problem = score_problem(result)
        if problem is not None:
            return f"{where}.{problem}"
    return None


def write_document(path: Path, artifact: RunArtifact, rows: RowsFile) -> None:
    """Write ``artifact``'s run document (indented JSON) naming its rows file, whole or not at all."""
    document = artifact.model_copy(update={"rows": rows, "schema_version": ARTIFACT_SCHEMA_VERSION})
    write_whole(path, (document.model_dump_json(indent=2) + "\n").encode("utf-8"))


def write_run(path: Path, artifact: RunArtifact) -> RowsFile:
    """Write ``artifact``: its rows to the file beside ``path`` (:func:`~pytest_lens.records.rows.rows_path`), then the document.

    The rows are copied line by line (a loaded run's rows are never all in memory); each file is written whole or not
    at all. :class:`OutputError` when either cannot be written.
    """
    try:
        rows = write_rows(rows_path(path), artifact.results.lines())
    except OSError as exc:
        raise OutputError(exc.errno, exc.strerror or str(exc), str(rows_path(path))) from None
    write_document(path, artifact, rows)
    return rows


class RunStore:
    """Saved runs under ``root`` (by default ``.lens`` in the rootdir), one directory per machine kind."""

    def __init__(self, root: Path, machine_id: str | None = None) -> None:
        self.root = root
        self.machine_id = machine_id or machine_info().machine_id

    @property
    def machine_dir(self) -> Path:
        """Where this machine's runs are saved."""
        return self.root / self.machine_id

    def saved(self) -> list[SavedRun]:
        """Every saved run: this machine's first, then other machines', each by number."""
        found: list[tuple[int, SavedRun]] = []
        if not self.root.is_dir():
            return []
        for directory in sorted(p for p in self.root.iterdir() if p.is_dir()):
            other = 0 if directory.name == self.machine_id else 1
            for path in directory.glob("*.json"):
                match = _SAVED.match(path.name)
                if match:
                    found.append((other, SavedRun(path, int(match.group(1)), match.group(2))))
        return [run for _, run in sorted(found, key=lambda item: (item[0], item[1].path.parent.name, item[1].number))]

    def save(self, artifact: RunArtifact, name: str) -> Path:
        """Write ``artifact`` as the next numbered run called ``name`` (its rows beside it); returns the document's path."""
        if not _NAME.match(name):
            raise SavedRunError(f"--lens-save={name!r}: use letters, digits, '.', '_' or '-' (starting with a letter or digit)")
        self.machine_dir.mkdir(parents=True, exist_ok=True)
        numbers = [int(m.group(1)) for p in self.machine_dir.glob("*.json") if (m := _SAVED.match(p.name))]
        path = self.machine_dir / f"{max(numbers, default=0) + 1:04d}_{name}.json"
        write_run(path, artifact)
        return path

    def find(self, reference: str) -> SavedRun:
        """A saved run by ``NAME`` (the latest of that name), ``NNNN`` or ``NNNN_NAME``; this machine's runs first."""
        runs = self.saved()
        for matches in (
            [run for run in runs if run.label == reference],
            [run for run in runs if reference.isdigit() and run.number == int(reference)],
            [run for run in runs if run.name == reference],
        ):
            if matches:
                same_machine = [run for run in matches if run.path.parent.name == self.machine_id]
                pool = same_machine or matches
                return max(pool, key=lambda run: run.number)
        available = ", ".join(f"{run.path.parent.name}/{run.label}" for run in runs[-8:]) or "none"
        raise SavedRunError(f"no saved run {reference!r} under {self.root} (saved: {available}); save one with --lens-save={reference}")


def resolve_run(reference: str, store: RunStore, search_dirs: tuple[Path, ...] = ()) -> tuple[Path, str]:
    """A baseline given as a file path (absolute, or relative to one of ``search_dirs``) or a saved-run name.

    Returns the path and a display name (``0001_main`` for saved runs, the file name otherwise).
    """
    candidate = Path(reference).expanduser()
    paths = [candidate] if candidate.is_absolute() else [directory / candidate for directory in search_dirs] or [candidate]
    for path in paths:
        if path.is_file():
            return path, path.name
    if candidate.suffix == ".json" or os.sep in reference:
        for path in paths:
            if path.exists():  # there, but not a file a run could be read from: say what it is
                raise SavedRunError(f"baseline {reference!r} is {_kind_of(path)} ({path}), not a run artifact file")
        raise SavedRunError(f"baseline file {reference!r} does not exist (looked in: {', '.join(str(p) for p in paths)})")
    saved = store.find(reference)
    return saved.path, saved.label


def _kind_of(path: Path) -> str:
    """What a path that is not a regular file is, in words."""
    import stat

    mode = path.stat().st_mode
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    ]
    return next((words for test, words in kinds if test(mode)), "not a regular file")


@dataclass(frozen=True)
class Baseline:
    """A loaded baseline run and where it came from."""

    artifact: RunArtifact
    info: BaselineInfo


def open_baseline(reference: str, store: RunStore, search_dirs: tuple[Path, ...] = (), *, scored: bool = False) -> Baseline:
    """Find and load ``reference`` (a saved-run name or an artifact path); :class:`SavedRunError` if impossible.

    ``scored``: for computing (comparisons, power): its rows are read once, without their transcripts
    (:meth:`~pytest_lens.records.results.ResultRows.scored`), into memory; a row at fault is a :class:`SavedRunError`.
    """
    path, name = resolve_run(reference, store, search_dirs)
    artifact = load_run(path)
    if scored:
        try:
            artifact = artifact.model_copy(update={"results": ListRows(artifact.results.scored())})
        except RowError as exc:
            raise SavedRunError(str(exc)) from None
    return Baseline(
        artifact,
        BaselineInfo(
            name=name,
            path=str(path),
            created=artifact.created,
            commit=artifact.commit.id if artifact.commit else None,
            machine=artifact.machine.machine_id if artifact.machine else None,
        ),
    )
