"""Load LENS-format JSON files into typed, validated scopes ready to stream."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from pytest_lens.datasets.json_document import JsonDocumentError, read_input
from pytest_lens.datasets.labels import LABELS_SUFFIX, LabelsError, is_labels_file, labels_path, meta_labels, read_labels
from pytest_lens.datasets.models import Dataset, Episode, KeyFact, Question
from pytest_lens.datasets.scope_dir import (
    SPEC_FILE,
    ScopeDirectoryError,
    find_scope_dirs,
    looks_like_scope_dir,
    older_layout,
    read_scope_dir,
)
from pytest_lens.datasets.validator import (
    LABEL_META_KEYS,
    DatasetIssue,
    Severity,
    field_path,
    schema_message,
    stream_order,
    validate_dataset,
)

__all__ = [
    "DATASET_KINDS",
    "DatasetError",
    "LoadedDataset",
    "LoadedScope",
    "expand_dataset_paths",
    "load_dataset",
    "load_datasets",
]


class DatasetError(ValueError):
    """A dataset file cannot be used; ``issues`` say where and why."""

    def __init__(self, issues: Sequence[DatasetIssue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


@dataclass(frozen=True)
class LoadedScope:
    """One scope in stream order with its questions and the defects that touch them."""

    scope_id: str
    stream: tuple[Episode, ...]
    questions: tuple[Question, ...]
    source: str
    suite: str
    defects: dict[str, tuple[str, ...]] = field(default_factory=dict)
    label_keys: frozenset[str] = frozenset()
    ids_leak_labels: bool = False
    #: Episode id -> is signal, for the scorer only (``signal_precision``); ``None`` when the data has no labels.
    signal_labels: Mapping[str, bool] | None = None
    _positions: dict[str, int] = field(init=False, repr=False, compare=False)
    _printed: dict[str, int | None] = field(init=False, repr=False, compare=False)
    #: Stream index -> normalised episode text, filled on demand (by index: scoring threads may fill it at once).
    _normalized: dict[int, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        positions = {episode.episode_id: index for index, episode in enumerate(self.stream, start=1)}
        object.__setattr__(self, "_positions", positions)
        object.__setattr__(self, "_printed", {})
        object.__setattr__(self, "_normalized", {})

    @property
    def checkpoints(self) -> list[int]:
        """The distinct checkpoints of this scope's questions, ascending."""
        return sorted({question.checkpoint_after for question in self.questions})

    def position(self, episode_id: str) -> int | None:
        """1-based stream position of an episode, ``None`` if it is not in this scope."""
        return self._positions.get(episode_id)

    def available_refs(self, checkpoint: int) -> frozenset[str]:
        """Ids of the episodes ingested once ``checkpoint`` is reached."""
        return frozenset(episode.episode_id for episode in self.stream[:checkpoint])

    def fact_printed(self, fact: KeyFact, checkpoint: int) -> bool:
        """Whether one of the first ``checkpoint`` episodes prints ``fact`` or one of its aliases (normalised substring).

        A key fact no episode prints (a free-text finding such as "connection pool exhaustion") can
        only be recognised by a judge, never by matching an answer against it.
        """
        return any((at := self._first_printed(pattern)) is not None and at <= checkpoint for pattern in fact.patterns)

    def _first_printed(self, pattern: str) -> int | None:
        """1-based position of the first episode printing ``pattern``, computed once per pattern."""
        from pytest_lens.text import normalize

        if pattern not in self._printed:
            wanted = normalize(pattern)
            found: int | None = None
            if wanted:
                for index, episode in enumerate(self.stream):
                    text = self._normalized.get(index)
                    if text is None:  # two threads may both normalise it; neither can shift another episode's slot
                        text = self._normalized[index] = normalize(episode.text)
                    if wanted in text:
                        found = index + 1
                        break
            self._printed[pattern] = found
        return self._printed[pattern]


@dataclass(frozen=True)
class LoadedDataset:
    """A validated dataset file."""

    path: str
    sha256: str
    dataset: Dataset
    issues: tuple[DatasetIssue, ...]
    scopes: tuple[LoadedScope, ...]

    @property
    def warnings(self) -> list[DatasetIssue]:
        """Defects the run survives."""
        return [issue for issue in self.issues if issue.severity is Severity.WARNING]


def expand_dataset_paths(paths: Iterable[Path]) -> list[Path]:
    """Files named directly, plus every ``*.json`` file (sorted; ``*.labels.json`` sidecars excepted) in directories named.

    A LENS scope directory (``spec.yaml`` + ``generated/``, see :mod:`pytest_lens.datasets.scope_dir`) is
    one dataset; a directory holding scope directories contributes each of them. A format prefix
    (``locomo:PATH``, see :mod:`pytest_lens.datasets.importers`) stays on the files it names.
    """
    from pytest_lens.datasets.importers import split_format

    files: list[Path] = []
    for named in paths:
        fmt, path = split_format(named)
        if fmt is None and looks_like_scope_dir(path):
            files.append(path)
        elif path.is_dir():
            # NAME.labels.json sidecars hold ground truth for the scorer; they are not datasets.
            found = sorted(
                Path(f"{fmt}:{p}") if fmt else p for p in path.iterdir() if p.suffix == ".json" and p.is_file() and not is_labels_file(p)
            )
            if fmt is None:
                found.extend(find_scope_dirs(path))
            if not found:
                raise DatasetError(
                    [
                        DatasetIssue(
                            str(path),
                            "-",
                            "empty_directory",
                            f"directory holds no .json dataset files and no scope directories ({SPEC_FILE} + generated/)",
                            Severity.ERROR,
                        )
                    ]
                )
            files.extend(found)
        elif path.exists():  # a file; a device or pipe is refused by name when read (read_input), not "no such file"
            files.append(named)
        else:
            raise DatasetError([DatasetIssue(str(path), "-", "not_found", "no such file or directory", Severity.ERROR)])
    return files


def load_dataset(path: Path | str, *, strict: bool = False) -> LoadedDataset:
    """Parse, validate and order one dataset file.

    Raises :class:`DatasetError` for malformed input, and for warnings too when ``strict``.
    Files in a sibling benchmark's format (LoCoMo, LongMemEval, MEME, MemoryAgentBench; detected, or
    named by a ``format:`` prefix) are imported on the fly.
    """
    from pytest_lens.datasets.importers import DocumentError, parse_document, split_format

    fmt, path = split_format(path)
    if fmt is None and path.is_dir():
        return _load_scope_dir(path, strict=strict)
    where = str(path)
    try:
        raw = read_input(path)
    except OSError as exc:
        raise DatasetError([DatasetIssue(where, "-", "unreadable", str(exc), Severity.ERROR)]) from None
    except JsonDocumentError as exc:
        raise DatasetError([DatasetIssue(where, "-", exc.code, str(exc), Severity.ERROR)]) from None
    try:
        document = parse_document(raw, path)
    except DocumentError as exc:
        raise DatasetError([DatasetIssue(where, "-", exc.code, str(exc), Severity.ERROR)]) from None
    try:
        dataset = _imported(fmt, document, where)
        if dataset is None:
            if not (isinstance(document, dict) and "scopes" in document):
                raise DatasetError([_not_a_dataset(where, document)])
            dataset = Dataset.model_validate(document)
    except ValidationError as exc:
        raise DatasetError(
            [DatasetIssue(where, field_path(error["loc"]), "schema", schema_message(error), Severity.ERROR) for error in exc.errors()]
        ) from None
    issues = validate_dataset(dataset, where)
    sidecar = _sidecar_labels(path, dataset, issues)
    blocking = [issue for issue in issues if issue.severity is Severity.ERROR or strict]
    if blocking:
        raise DatasetError(blocking)
    return LoadedDataset(
        path=where,
        sha256=hashlib.sha256(raw).hexdigest(),
        dataset=dataset,
        issues=tuple(issues),
        scopes=tuple(_scopes(dataset, where, issues, sidecar)),
    )


def load_datasets(paths: Iterable[Path], *, strict: bool = False) -> list[LoadedDataset]:
    """Load every file (directories expanded); a scope id may be defined only once overall.

    :class:`DatasetError` carries the issues of every unusable file, not only the first one's.
    """
    loaded: list[LoadedDataset] = []
    unusable: list[DatasetIssue] = []
    for path in expand_dataset_paths(paths):
        try:
            loaded.append(load_dataset(path, strict=strict))
        except DatasetError as exc:
            unusable.extend(exc.issues)
    if unusable:
        raise DatasetError(unusable)
    first_seen: dict[str, str] = {}
    clashes: list[DatasetIssue] = []
    for item in loaded:
        for scope in item.scopes:
            if scope.scope_id in first_seen:
                clashes.append(
                    DatasetIssue(
                        item.path,
                        "scopes[].scope_id",
                        "duplicate_scope_id",
                        f"scope {scope.scope_id!r} is also defined in {first_seen[scope.scope_id]}",
                        Severity.ERROR,
                    )
                )
            else:
                first_seen[scope.scope_id] = item.path
    if clashes:
        raise DatasetError(clashes)
    return loaded


def _load_scope_dir(path: Path, *, strict: bool) -> LoadedDataset:
    """A scope directory read, validated like any dataset, its defects pointed at the files they are about.

    A directory in the reference's first layout (compiled lists, no episode files) is skipped with a warning:
    the V2 harness cannot read it either, and its scope is released as a LENS JSON file.
    """
    if older_layout(path):
        skipped = DatasetIssue(
            str(path),
            "-",
            "older_layout",
            "skipped: a scope directory of the first LENS release (generated/episodes.json, no generated/episodes/*.txt); "
            "its scope is released as a LENS JSON file (datasets/scope_NN_with_distractors.json), use that",
            Severity.WARNING,
        )
        if strict:
            raise DatasetError([skipped])
        return LoadedDataset(path=str(path), sha256="", dataset=Dataset(scopes=()), issues=(skipped,), scopes=())
    try:
        directory = read_scope_dir(path)
    except ScopeDirectoryError as exc:
        raise DatasetError(exc.issues) from None
    # The labels in meta are ours (kept for scoring, stripped by the bridge): only the ids' leak is worth a warning.
    found = [issue for issue in validate_dataset(directory.dataset, str(path)) if issue.code != "label_meta"]
    issues = [*directory.issues, *(directory.where(issue) for issue in found)]
    blocking = [issue for issue in issues if issue.severity is Severity.ERROR or strict]
    if blocking:
        raise DatasetError(blocking)
    return LoadedDataset(
        path=str(path),
        sha256=directory.sha256,
        dataset=directory.dataset,
        issues=tuple(issues),
        scopes=tuple(_scopes(directory.dataset, str(path), [*directory.issues, *found], {})),
    )


def _imported(fmt: str | None, document: object, where: str) -> Dataset | None:
    """The dataset imported from a foreign format, or ``None`` for LENS-format documents."""
    from pytest_lens.datasets.importers import ImportFormatError, detect_format, import_document

    fmt = detect_format(document) if fmt is None else fmt
    if fmt is None or fmt == "lens":
        return None
    try:
        return import_document(fmt, document, where)
    except ImportFormatError as exc:
        raise DatasetError([DatasetIssue(where, exc.field, f"import_{fmt}", f"not a valid {fmt} file: {exc}", Severity.ERROR)]) from None


#: What a dataset path may name (the message for a file that is none of them).
DATASET_KINDS = (
    'a LENS dataset ({"scopes": [...], "questions": [...]}), a LENS scope directory (spec.yaml + generated/), '
    "or a LoCoMo, LongMemEval, MEME or MemoryAgentBench file (detected, or named FORMAT:PATH with FORMAT one of "
    "locomo, longmemeval, meme, mab)"
)


def _not_a_dataset(where: str, document: object) -> DatasetIssue:
    """The issue for a JSON document of no known kind, with a hint when it looks like a labels sidecar."""
    message = f'not a dataset: no "scopes" and no other known format; a dataset is {DATASET_KINDS}'
    if isinstance(document, dict) and isinstance(document.get("episodes"), dict):
        message += f'. It looks like a labels file ("episodes" by id): name it NAME{LABELS_SUFFIX} beside the dataset NAME.json'
    return DatasetIssue(where, "-", "not_a_dataset", message, Severity.ERROR)


def _sidecar_labels(path: Path, dataset: Dataset, issues: list[DatasetIssue]) -> dict[str, bool]:
    """The dataset's ``NAME.labels.json`` labels (empty without one); malformed -> :class:`DatasetError`, stray ids -> a warning."""
    sidecar = labels_path(path)
    if not sidecar.is_file():
        return {}
    try:
        labels = read_labels(sidecar)
    except LabelsError as exc:
        raise DatasetError([DatasetIssue(str(sidecar), exc.field, "labels", exc.detail, Severity.ERROR)]) from None
    known = {episode.episode_id for scope in dataset.scopes for episode in scope.episodes}
    stray = sorted(set(labels) - known)
    if stray:
        shown = ", ".join(stray[:3]) + (f" and {len(stray) - 3} more" if len(stray) > 3 else "")
        issues.append(
            DatasetIssue(
                str(sidecar), "episodes", "labels_unknown_ref", f"labels for episodes not in {path.name}: {shown}", Severity.WARNING
            )
        )
    return labels


def _scopes(dataset: Dataset, where: str, issues: list[DatasetIssue], sidecar: Mapping[str, bool]) -> Iterable[LoadedScope]:
    defects: dict[str, list[str]] = {}
    leaking_fields = {issue.field.split(".episodes")[0] for issue in issues if issue.code == "id_label_leak"}
    for issue in issues:
        if issue.question_id is not None and issue.severity is Severity.WARNING:
            defects.setdefault(issue.question_id, [])
            if issue.code not in defects[issue.question_id]:
                defects[issue.question_id].append(issue.code)
    for index, scope in enumerate(dataset.scopes):
        questions = tuple(q for q in dataset.questions if q.scope_id == scope.scope_id)
        yield LoadedScope(
            scope_id=scope.scope_id,
            stream=tuple(stream_order(scope.episodes)),
            questions=questions,
            source=where,
            suite=dataset.suite,
            defects={q.question_id: tuple(defects[q.question_id]) for q in questions if q.question_id in defects},
            label_keys=frozenset(key for episode in scope.episodes for key in episode.meta) | LABEL_META_KEYS,
            ids_leak_labels=f"scopes[{index}]" in leaking_fields,
            signal_labels=_scope_labels(scope.episodes, sidecar),
        )


def _scope_labels(episodes: Sequence[Episode], sidecar: Mapping[str, bool]) -> dict[str, bool] | None:
    """A scope's labels: its episodes' ``meta``, then the sidecar's; ``None`` when neither labels any of them."""
    labels = {episode.episode_id: sidecar[episode.episode_id] for episode in episodes if episode.episode_id in sidecar}
    labels.update(meta_labels(episodes))
    return labels or None
