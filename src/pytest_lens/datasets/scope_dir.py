"""LENS scope directories (the reference's "V2" layout) as one stream in our dataset model.

A scope directory holds ``spec.yaml`` (scope id, ``episodes.timeline`` {start, interval}, the arc,
...), ``generated/episodes/signal_NNN.txt`` and ``distractor_<theme>_NNN.txt`` (one episode per file)
and ``generated/questions.json`` (LENS questions whose ``checkpoint_after`` counts **signal** episodes).

The reference harness defines the memory at checkpoint *c* as the signal episodes with ordinal <= *c*
plus the first *c* distractors in (ordinal, id) order. Our model asks a question after the first *N*
episodes of one stream, so the stream interleaves the two kinds on the spec's timeline: signal episode
with ordinal *o* in slot *o*, the *k*-th distractor (in (ordinal, id) order) in slot *k* just after it.
Every prefix that ends after a slot's distractor is then exactly the reference's set for that slot, and a
question at signal checkpoint *c* is asked after ``#(signal ordinals <= c) + min(c, #distractors)``
episodes (:func:`stream_checkpoint`). File naming, ordinals and ids follow the reference loader: ids
``<scope_id>_ep_NNN`` for signal files and ``<scope_id>_<file stem>`` for the others; any ``.txt`` not
named ``distractor_*`` counts as signal, its ordinal being the trailing number of its name (0 without one).

Timestamps come from the timeline: slot *s* (1-based) starts at ``start + (s - 1) * interval``, at 10:00
when ``start`` is a date (as the reference's compiled episode lists have it), and a slot's distractor
follows its signal episode half an hour (or half an interval, if shorter) later. The signal/distractor
label (and the distractor's theme, the signal episode's arc phase) goes into ``meta``, exactly as in LENS
JSON files: the bridge strips it from everything the agent sees, and because the ids tell the two kinds
apart the agent sees opaque aliases instead (:mod:`pytest_lens.execution.bridge`).
"""

from __future__ import annotations

import hashlib
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pytest_lens.datasets.json_document import JsonDocumentError, read_json
from pytest_lens.datasets.models import Dataset, Episode, Question, Scope
from pytest_lens.datasets.validator import DatasetIssue, Severity, field_path, schema_message

__all__ = [
    "EPISODES_DIR",
    "QUESTIONS_FILE",
    "SPEC_FILE",
    "EpisodeFile",
    "ScopeDirectory",
    "ScopeDirectoryError",
    "find_scope_dirs",
    "is_scope_dir",
    "looks_like_scope_dir",
    "older_layout",
    "read_scope_dir",
    "stream_checkpoint",
]

SPEC_FILE = "spec.yaml"
#: The most values ``spec.yaml`` may stand for with its YAML aliases expanded (a spec has a few hundred).
MAX_SPEC_VALUES = 100_000
QUESTIONS_FILE = "generated/questions.json"
EPISODES_DIR = "generated/episodes"

#: Where a date-only timeline puts its episodes (the reference's compiled lists use 10:00 and 10:30).
_DAY_TIME = time(10, 0)
_DISTRACTOR_OFFSET = timedelta(minutes=30)
_ORDINAL = re.compile(r"(\d+)\.txt$")
_SIGNAL_NAME = re.compile(r"^signal_\d+\.txt$")
_DISTRACTOR_NAME = re.compile(r"^distractor_(?P<theme>.+)_\d+\.txt$")
_INTERVAL = re.compile(r"^\s*(?P<count>\d+)\s*(?P<unit>m|min|mins|minutes?|h|hours?|d|days?|w|weeks?)\s*$", re.IGNORECASE)
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


class ScopeDirectoryError(ValueError):
    """A scope directory that cannot be used; ``issues`` name the file and field at fault."""

    def __init__(self, issues: list[DatasetIssue]) -> None:
        self.issues = issues
        super().__init__("\n".join(str(issue) for issue in issues))


def is_scope_dir(path: Path) -> bool:
    """A directory with a ``spec.yaml``."""
    return path.is_dir() and (path / SPEC_FILE).is_file()


def looks_like_scope_dir(path: Path) -> bool:
    """A directory with a ``spec.yaml`` or a ``generated/`` folder (a scope directory, perhaps a broken one)."""
    return path.is_dir() and ((path / SPEC_FILE).exists() or (path / "generated").is_dir())


def older_layout(path: Path) -> bool:
    """A scope directory of the reference's first release: compiled ``generated/episodes.json``, no ``generated/episodes/``.

    The reference's V2 harness cannot read these (scopes 01-06 of its ``datasets/scopes/``); their episodes and
    questions are released as LENS JSON files (``datasets/scope_NN_with_distractors.json``).
    """
    return (path / "generated" / "episodes.json").is_file() and not (path / EPISODES_DIR).exists()


def find_scope_dirs(path: Path) -> list[Path]:
    """``path`` itself when it is a scope directory, else its subdirectories that look like one, sorted by name."""
    if looks_like_scope_dir(path):
        return [path]
    return sorted(child for child in path.iterdir() if looks_like_scope_dir(child))


@dataclass(frozen=True)
class EpisodeFile:
    """One ``generated/episodes/*.txt`` file as the reference loader reads it."""

    name: str
    episode_id: str
    ordinal: int
    is_distractor: bool
    text: str

    @property
    def theme(self) -> str | None:
        """The distractor theme named in the file name (``distractor_<theme>_NNN.txt``)."""
        match = _DISTRACTOR_NAME.match(self.name)
        return match.group("theme") if self.is_distractor and match else None


@dataclass(frozen=True)
class ScopeDirectory:
    """A scope directory read into our model: the dataset, a content hash, the defects found on the way."""

    path: Path
    dataset: Dataset
    sha256: str
    issues: tuple[DatasetIssue, ...]
    signal: tuple[EpisodeFile, ...]
    distractors: tuple[EpisodeFile, ...]

    def where(self, issue: DatasetIssue) -> DatasetIssue:
        """``issue`` (found by the generic validator on :attr:`dataset`) pointed at the file it is about.

        ``questions[i]...`` becomes ``generated/questions.json`` ``[i]...``; ``scopes[0].episodes[k]...``
        becomes the episode's ``.txt`` file.
        """
        field = issue.field
        if field.startswith("questions["):
            moved = _moved(issue, self.path / QUESTIONS_FILE, field.removeprefix("questions"))
            question = next((q for q in self.dataset.questions if q.question_id == issue.question_id), None)
            if question is not None and "checkpoint" in issue.message:
                # The generic validator counts stream positions; the file counts signal episodes.
                signal = question.meta.get("signal_checkpoint")
                return replace(moved, message=f"{moved.message} (stream position {question.checkpoint_after} = signal checkpoint {signal})")
            return moved
        match = re.match(r"^scopes\[0\]\.episodes\[(\d+)\]\.?(.*)$", field)
        if match:
            episode = self.dataset.scopes[0].episodes[int(match.group(1))]
            name = _file_of(episode, self.signal + self.distractors)
            return _moved(issue, self.path / EPISODES_DIR / name, match.group(2) or "-")
        if field.startswith("scopes[0].episodes"):
            return _moved(issue, self.path / EPISODES_DIR, field.removeprefix("scopes[0].episodes").lstrip(".") or "-")
        return issue


def stream_checkpoint(signal_ordinals: Iterable[int], n_distractors: int, checkpoint: int) -> int:
    """Stream position of the reference's checkpoint ``checkpoint``: signal ordinals <= it, plus that many distractors."""
    return sum(1 for ordinal in signal_ordinals if ordinal <= checkpoint) + min(max(checkpoint, 0), n_distractors)


def read_scope_dir(path: Path) -> ScopeDirectory:
    """Read one scope directory; :class:`ScopeDirectoryError` (every error found) when it cannot be used."""
    reader = _Reader(path)
    return reader.read()


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[DatasetIssue] = []
        self.warnings: list[DatasetIssue] = []
        self.digest = hashlib.sha256()

    def error(self, where: Path, field: str, code: str, message: str, question_id: str | None = None) -> None:
        self.errors.append(DatasetIssue(str(where), field, code, message, Severity.ERROR, question_id))

    def warn(self, where: Path, field: str, code: str, message: str, question_id: str | None = None) -> None:
        self.warnings.append(DatasetIssue(str(where), field, code, message, Severity.WARNING, question_id))

    def fail(self) -> ScopeDirectoryError:
        return ScopeDirectoryError(self.errors)

    def raw(self, relative: str) -> bytes | None:
        where = self.path / relative
        refused = self.refusal(where)
        if refused is not None:
            self.error(where, "-", "refused_file", f"not read: {refused}")
            return None
        if not where.is_file():
            what = "directory" if relative == EPISODES_DIR else "file"
            self.error(where, "-", "missing_file", f"the scope directory has no {relative} {what}")
            return None
        try:
            data = where.read_bytes()
        except OSError as exc:
            self.error(where, "-", "unreadable", str(exc))
            return None
        self.digest.update(relative.encode() + b"\0" + data + b"\0")
        return data

    def refusal(self, where: Path) -> str | None:
        """Why ``where`` is not read (``None``: read it, or report it missing).

        Only regular files inside the scope directory are read: a symbolic link is followed only to a regular file
        inside it (an episode linked to ``/proc/self/environ`` put the process's environment, API keys included,
        into the artifact), and devices, FIFOs, directories and dangling or looping links are refused by name.
        """
        try:
            real = where.resolve(strict=True)
        except FileNotFoundError:
            return "a symbolic link to nothing (it dangles)" if where.is_symlink() else None
        except (OSError, RuntimeError):
            return "a symbolic link that loops, or cannot be followed"
        try:
            root = self.path.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        if real != root and root not in real.parents:
            return f"a symbolic link to {real}, outside the scope directory {root}"
        try:
            mode = real.stat().st_mode
        except OSError as exc:
            return f"cannot be examined: {exc.strerror or exc}"
        if stat.S_ISREG(mode):
            return None
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        return f"{kind}, not a regular file"

    def read(self) -> ScopeDirectory:
        spec = self._spec()
        episodes_dir = self.path / EPISODES_DIR
        if not episodes_dir.is_dir():
            self.error(episodes_dir, "-", "missing_file", f"the scope directory has no {EPISODES_DIR}/ directory")
        raw_questions = self.raw(QUESTIONS_FILE)
        if spec is None or self.errors:
            raise self.fail()
        scope_id = self._scope_id(spec)
        start, interval = self._timeline(spec)
        files = self._episode_files(scope_id)
        questions_doc = self._questions_document(raw_questions)
        if self.errors or start is None or interval is None or questions_doc is None:
            raise self.fail()
        signal = tuple(sorted((f for f in files if not f.is_distractor), key=lambda f: (f.ordinal, f.episode_id)))
        distractors = tuple(sorted((f for f in files if f.is_distractor), key=lambda f: (f.ordinal, f.episode_id)))
        self._check_files(spec, signal, distractors)
        phases = self._phases(spec)
        slots = max([file.ordinal for file in signal] + [len(distractors)], default=1)
        try:
            start + (slots - 1) * interval + min(_DISTRACTOR_OFFSET, interval / 2)
        except OverflowError:
            self.error(
                self.path / SPEC_FILE,
                "episodes.timeline",
                "invalid_timeline",
                f"{slots} slots from {start.isoformat()} every {_shown(spec['episodes']['timeline'].get('interval'))} run past "
                f"the year {datetime.max.year}, the last date a timestamp can hold",
            )
            raise self.fail() from None
        episodes = self._episodes(scope_id, start, interval, signal, distractors, phases)
        questions = self._questions(questions_doc, scope_id, signal, distractors, spec)
        if self.errors:
            raise self.fail()
        dataset = Dataset(scopes=(Scope(scope_id=scope_id, episodes=tuple(episodes)),), questions=tuple(questions))
        return ScopeDirectory(self.path, dataset, self.digest.hexdigest(), tuple(self.warnings), signal, distractors)

    # -- spec.yaml ---------------------------------------------------------------------------
    def _spec(self) -> dict[str, Any] | None:
        import yaml

        raw = self.raw(SPEC_FILE)
        if raw is None:
            return None
        where = self.path / SPEC_FILE
        loader = yaml.SafeLoader(raw)
        try:
            node = loader.get_single_node()
            expanded = _expanded_size(node)
            if expanded > MAX_SPEC_VALUES:
                # Aliases (``*a``) repeat a node wherever they appear: a few lines can stand for billions of values,
                # which printing or walking the spec would then build.
                self.error(
                    where,
                    "-",
                    "too_large",
                    f"expands to more than {MAX_SPEC_VALUES:,} values through YAML aliases (a spec has a few hundred); "
                    "write the values out or use fewer aliases",
                )
                return None
            spec = loader.construct_document(node) if node is not None else None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "-"
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            self.error(where, at, "invalid_yaml", f"not valid YAML: {problem}")
            return None
        except RecursionError:  # PyYAML composes nested collections recursively: depth is bounded by the stack
            self.error(where, "-", "too_deep", "nested too deeply (a spec nests a few levels)")
            return None
        finally:
            loader.dispose()
        if not isinstance(spec, dict):
            self.error(where, "-", "invalid_spec", f"expected a mapping at the top level, got {type(spec).__name__}")
            return None
        return spec

    def _scope_id(self, spec: Mapping[str, Any]) -> str:
        scope_id = spec.get("scope_id", self.path.name)
        if not isinstance(scope_id, str) or not scope_id.strip():
            self.error(self.path / SPEC_FILE, "scope_id", "invalid_spec", f"expected a non-empty string, got {_shown(scope_id)}")
            return self.path.name
        return scope_id

    def _timeline(self, spec: Mapping[str, Any]) -> tuple[datetime | None, timedelta | None]:
        where = self.path / SPEC_FILE
        episodes = spec.get("episodes")
        timeline = episodes.get("timeline") if isinstance(episodes, dict) else None
        if not isinstance(timeline, dict):
            self.error(where, "episodes.timeline", "missing_timeline", "missing: {start, interval} is needed to date the episodes")
            return None, None
        start = _start(timeline.get("start"))
        if start is None:
            problem = f"expected a date or date-time, got {_shown(timeline.get('start'))}"
            self.error(where, "episodes.timeline.start", "invalid_timeline", problem)
        interval = _interval(timeline.get("interval"))
        if interval is None:
            self.error(
                where,
                "episodes.timeline.interval",
                "invalid_timeline",
                f"expected a positive duration like '4d', '12h', '1w' or '30m', got {_shown(timeline.get('interval'))}",
            )
        return start, interval

    def _phases(self, spec: Mapping[str, Any]) -> dict[int, list[str]]:
        """Signal ordinal -> the arc phases whose ``episodes`` range holds it (ranges may overlap)."""
        arc = spec.get("arc")
        phases: dict[int, list[str]] = {}
        if arc is None:
            return phases
        if not isinstance(arc, list):
            self.warn(self.path / SPEC_FILE, "arc", "invalid_arc", "expected a list of phases; episodes get no phase label")
            return phases
        for index, phase in enumerate(arc):
            span = _RANGE.match(str(phase.get("episodes", ""))) if isinstance(phase, dict) else None
            if not isinstance(phase, dict) or not isinstance(phase.get("id"), str) or span is None:
                self.warn(self.path / SPEC_FILE, f"arc[{index}]", "invalid_arc", "expected {id, episodes: 'A-B'}; skipped")
                continue
            first = int(span.group(1))
            last = int(span.group(2) or first)
            for ordinal in range(first, last + 1):
                phases.setdefault(ordinal, []).append(phase["id"])
        return phases

    # -- generated/episodes ----------------------------------------------------------------------
    def _episode_files(self, scope_id: str) -> list[EpisodeFile]:
        directory = self.path / EPISODES_DIR
        files: list[EpisodeFile] = []
        seen: dict[str, str] = {}
        for file in sorted(directory.iterdir()):
            if file.suffix != ".txt":
                continue  # the reference reads only .txt files; one that is not a regular file is refused by name
            data = self.raw(f"{EPISODES_DIR}/{file.name}")
            if data is None:
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.error(file, "-", "invalid_text", f"not UTF-8 text: {exc}")
                continue
            is_distractor = file.name.startswith("distractor_")
            match = _ORDINAL.search(file.name)
            ordinal = int(match.group(1)) if match else 0
            episode_id = f"{scope_id}_{file.stem}" if is_distractor else f"{scope_id}_ep_{ordinal:03d}"
            if not (_DISTRACTOR_NAME if is_distractor else _SIGNAL_NAME).match(file.name):
                kind = "a distractor" if is_distractor else "a signal episode"
                self.warn(
                    file,
                    "-",
                    "unexpected_episode_file",
                    f"named neither signal_NNN.txt nor distractor_<theme>_NNN.txt; read as {kind} with ordinal {ordinal}, "
                    "as the reference does",
                )
            if episode_id in seen:
                self.error(
                    file, "-", "duplicate_episode_id", f"gets episode id {episode_id!r}, like {seen[episode_id]} (same signal ordinal)"
                )
                continue
            seen[episode_id] = file.name
            if not text.strip():
                self.warn(file, "-", "empty_episode", "the episode is empty")
            files.append(EpisodeFile(file.name, episode_id, ordinal, is_distractor, text))
        if not files and not self.errors:
            self.error(directory, "-", "empty_scope", "holds no .txt episode files")
        return files

    def _check_files(self, spec: Mapping[str, Any], signal: tuple[EpisodeFile, ...], distractors: tuple[EpisodeFile, ...]) -> None:
        where = self.path / SPEC_FILE
        episodes = spec.get("episodes")
        expected = episodes.get("count") if isinstance(episodes, dict) else None
        if isinstance(expected, int) and not isinstance(expected, bool):
            missing = sorted(set(range(1, expected + 1)) - {f.ordinal for f in signal})
            if missing:
                names = ", ".join(f"signal_{n:03d}.txt" for n in missing[:5]) + (" ..." if len(missing) > 5 else "")
                self.warn(
                    self.path / EPISODES_DIR,
                    "-",
                    "missing_signal_episode",
                    f"spec.yaml's episodes.count is {expected} but {len(missing)} signal ordinal(s) have no file: {names}",
                )
            elif len(signal) != expected:
                self.warn(where, "episodes.count", "count_mismatch", f"says {expected} signal episodes; {len(signal)} files found")
        block = spec.get("distractors")
        wanted = block.get("count") if isinstance(block, dict) else None
        if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted != len(distractors):
            self.warn(where, "distractors.count", "count_mismatch", f"says {wanted} distractors; {len(distractors)} files found")

    def _episodes(
        self,
        scope_id: str,
        start: datetime,
        interval: timedelta,
        signal: tuple[EpisodeFile, ...],
        distractors: tuple[EpisodeFile, ...],
        phases: Mapping[int, list[str]],
    ) -> list[Episode]:
        offset = min(_DISTRACTOR_OFFSET, interval / 2)
        items: list[tuple[datetime, Episode]] = []
        for file in signal:
            at = start + (file.ordinal - 1) * interval
            meta: dict[str, Any] = {"episode_type": "signal"}
            if phases.get(file.ordinal):
                meta["phase"] = "+".join(phases[file.ordinal])
            items.append((at, Episode(episode_id=file.episode_id, scope_id=scope_id, timestamp=at, text=file.text, meta=meta)))
        for rank, file in enumerate(distractors, start=1):
            at = start + (rank - 1) * interval + offset
            meta = {"episode_type": "distractor"}
            if file.theme:
                meta["theme"] = file.theme
            items.append((at, Episode(episode_id=file.episode_id, scope_id=scope_id, timestamp=at, text=file.text, meta=meta)))
        # Stream order: by slot, a slot's signal episode before its distractor (no two share a timestamp).
        return [episode for _, episode in sorted(items, key=lambda item: item[0])]

    # -- generated/questions.json -------------------------------------------------------------------
    def _questions_document(self, raw: bytes | None) -> list[Any] | None:
        if raw is None:
            return None
        where = self.path / QUESTIONS_FILE
        try:
            document = read_json(raw)
        except JsonDocumentError as exc:
            self.error(where, "-", exc.code, str(exc))
            return None
        if isinstance(document, dict) and isinstance(document.get("questions"), list):
            document = document["questions"]
        if not isinstance(document, list):
            self.error(where, "-", "schema", f"expected a list of questions, got {type(document).__name__}")
            return None
        return document

    def _questions(
        self,
        document: list[Any],
        scope_id: str,
        signal: tuple[EpisodeFile, ...],
        distractors: tuple[EpisodeFile, ...],
        spec: Mapping[str, Any],
    ) -> list[Question]:
        where = self.path / QUESTIONS_FILE
        # The question's own scope id is not needed here: the file sits in the scope directory (a mismatch is warned).
        filled = [{**item, "scope_id": scope_id} if isinstance(item, dict) else item for item in document]
        try:
            parsed = TypeAdapter(list[Question]).validate_python(filled)
        except ValidationError as exc:
            for error in exc.errors():
                self.error(where, field_path(error["loc"]), "schema", schema_message(error))
            return []
        ordinals = [f.ordinal for f in signal]
        last_signal = max(ordinals, default=0)
        questions: list[Question] = []
        for index, (item, question) in enumerate(zip(document, parsed, strict=True)):
            qid, checkpoint = question.question_id, question.checkpoint_after
            named_scope = item.get("scope_id")
            if named_scope is not None and named_scope != scope_id:
                self.warn(where, f"[{index}].scope_id", "question_scope_mismatch", f"says {named_scope!r}; the scope is {scope_id!r}", qid)
            if checkpoint < 1:
                self.error(
                    where, f"[{index}].checkpoint_after", "unreachable_checkpoint", "counts signal episodes and must be at least 1", qid
                )
                continue
            if checkpoint > last_signal:
                self.warn(
                    where,
                    f"[{index}].checkpoint_after",
                    "checkpoint_after_last_signal",
                    f"checkpoint {checkpoint} is past the last signal episode (ordinal {last_signal})",
                    qid,
                )
            meta = {**question.meta, "signal_checkpoint": checkpoint}
            position = stream_checkpoint(ordinals, len(distractors), checkpoint)
            questions.append(question.model_copy(update={"checkpoint_after": position, "meta": meta}))
        self._compare_with_spec(spec, document)
        return questions

    def _compare_with_spec(self, spec: Mapping[str, Any], document: list[Any]) -> None:
        """Warn when spec.yaml's questions and questions.json disagree (the reference reads questions.json)."""
        listed = spec.get("questions")
        if not isinstance(listed, list):
            return
        in_spec = {q.get("id"): q.get("checkpoint_after") for q in listed if isinstance(q, dict) and q.get("id")}
        in_file = {q.get("question_id"): q.get("checkpoint_after") for q in document if isinstance(q, dict)}
        differ = sorted(str(qid) for qid in in_spec.keys() ^ in_file.keys())
        moved = sorted(str(qid) for qid in in_spec.keys() & in_file.keys() if in_spec[qid] != in_file[qid])
        if differ or moved:
            parts = ([f"in one file only: {', '.join(differ[:5])}"] if differ else []) + (
                [f"different checkpoint_after: {', '.join(moved[:5])}"] if moved else []
            )
            self.warn(
                self.path / QUESTIONS_FILE,
                "-",
                "stale_questions",
                f"differs from spec.yaml's questions ({'; '.join(parts)}); questions.json is used, as by the reference",
            )


def _start(value: Any) -> datetime | None:
    """A timeline start: a YAML date (at 10:00), a YAML date-time, or the ISO text of either."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime.combine(value, _DAY_TIME)
    if isinstance(value, str):
        text = value.strip()
        try:
            return datetime.combine(date.fromisoformat(text), _DAY_TIME)
        except ValueError:
            pass
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            return None
    return None


def _interval(value: Any) -> timedelta | None:
    """``4d``, ``12h``, ``1w``, ``30m`` (a positive whole number of a unit)."""
    match = _INTERVAL.match(value) if isinstance(value, str) else None
    if match is None or int(match.group("count")) < 1:
        return None
    unit = _UNITS[match.group("unit")[0].lower()]
    try:
        return timedelta(**{unit: int(match.group("count"))})
    except OverflowError:  # past timedelta's 999,999,999 days
        return None


def _shown(value: Any) -> str:
    """``value`` as an error message quotes it: short, whatever it holds (a spec's value may be huge)."""
    import reprlib

    return reprlib.repr(value)


def _expanded_size(root: Any) -> int:
    """How many values a YAML node stands for once its aliases are expanded (capped just past :data:`MAX_SPEC_VALUES`).

    An alias is the node it names, so a node reached twice counts twice: the count of what constructing, printing or
    walking the document would touch. Counted once per distinct node, so a bomb costs no more than its text.
    """
    import yaml

    if root is None:
        return 0
    too_many = MAX_SPEC_VALUES + 1
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, counted_children = stack.pop()
        key = id(node)
        children = [] if isinstance(node, yaml.ScalarNode) else _node_children(node)
        if counted_children:
            open_nodes.discard(key)
            sizes[key] = min(too_many, 1 + sum(sizes.get(id(child), too_many) for child in children))
        elif key in open_nodes:  # the node contains itself (``&a [*a]``): endless once expanded
            sizes[key] = too_many
        elif key not in sizes:
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children)
    return sizes[id(root)]


def _node_children(node: Any) -> list[Any]:
    import yaml

    return [item for pair in node.value for item in pair] if isinstance(node, yaml.MappingNode) else list(node.value)


def _file_of(episode: Episode, files: tuple[EpisodeFile, ...]) -> str:
    return next((f.name for f in files if f.episode_id == episode.episode_id), episode.episode_id)


def _moved(issue: DatasetIssue, path: Path, field: str) -> DatasetIssue:
    return DatasetIssue(str(path), field or "-", issue.code, issue.message, issue.severity, issue.question_id)
