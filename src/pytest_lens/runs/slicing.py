"""Part of a run: one shard of it (``--lens-shard=I/N``), its finished units kept (``--lens-resume=DIR``), reruns.

A *unit* is one stream group: the questions of one (adapter, scope, budget), every repetition of them included
(they share one ingestion stream, the grouping xdist uses). Units are what shards divide, what a resumable run
keeps, and what a rerun reuses:

- :func:`assign_shards` splits the run's units between N shards, largest estimated cost first, each to the
  least loaded shard (ties to the lower shard, then the earlier unit): deterministic, from the cases alone, so every
  process of every shard (xdist workers included) computes the same split, whatever ``-k`` selects.
- :class:`ResumeStore` keeps each finished unit's results in ``DIR/<unit>.json`` under a content hash of everything
  that determines them (:func:`unit_keys`); a later run reuses a unit whose file has the key it computes now. A run
  that selects part of a unit (``-k``) keeps that part once its selected questions are done; a later run reuses
  those questions and asks the others (a question's result depends on the stream up to its checkpoint alone).
- :class:`RunSlice` is a run's plan: which cases this process runs, which results it reuses, and what its artifact
  records about it (``run.shard``, ``run.resumed``), so that ``lens merge`` can check and join shards.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_lens import __version__
from pytest_lens.records.results import QuestionResult
from pytest_lens.runs.storage import commit_info

if TYPE_CHECKING:
    from pytest_lens.records.cases import LensCase
    from pytest_lens.records.settings import LensSettings
    from pytest_lens.runs.ledger import ResultLedger
    from pytest_lens.runs.setup import RunSetup

__all__ = [
    "OWN_FIELDS",
    "ResumeStore",
    "RunSlice",
    "Unit",
    "adapter_versions",
    "assign_shards",
    "code_revision",
    "estimate_cost",
    "measured_seconds",
    "partition_record",
    "plan_slice",
    "settings_record",
    "unit_keys",
    "units_of",
]

#: What one question costs beside ingestion, in words of episode text (answering, scoring): a rough, fixed estimate;
#: ``--lens-shard-durations`` replaces it with what an earlier run measured.
QUESTION_WORDS = 400

#: Settings that belong to one process of a run, not to what it measures: left out of the settings a shard records.
OWN_FIELDS = frozenset(
    {
        "json_path",
        "html_path",
        "save_name",
        "rootdir",
        "invocation_dir",
        "shard",
        "shard_durations",
        "resume_dir",
        "rerun",
        "concurrency",
        "selection",
    }
)

ItemKey = tuple[str, str, str, str, int]

#: The LLM settings that determine answers and scores (the endpoint's address, key and cache do not).
_MODEL_FIELDS = ("agent_model", "judge_model", "judge", "agent_max_tokens", "judge_max_tokens", "judge_short_max_tokens", "context_tokens")


@dataclass(frozen=True)
class Unit:
    """One stream group: its name (``adapter:scope:budget``), its cases in order, and its estimated cost."""

    name: str
    cases: tuple[LensCase, ...]
    cost: float


def estimate_cost(cases: Sequence[LensCase]) -> float:
    """Words of episode text a unit ingests (up to its last checkpoint) plus :data:`QUESTION_WORDS` per question."""
    scope = cases[0].scope
    last = max(case.checkpoint for case in cases)
    return float(sum(len(episode.text.split()) for episode in scope.stream[:last]) + QUESTION_WORDS * len(cases))


def units_of(cases: Iterable[LensCase], measured: Mapping[str, float] | None = None) -> list[Unit]:
    """The run's units in case order, each with its cost.

    With ``measured`` (seconds per unit from an earlier run), a measured unit costs its seconds and the others
    their estimate scaled by the measured units' seconds per estimated word.
    """
    grouped: dict[str, list[LensCase]] = {}
    for case in cases:
        grouped.setdefault(case.group, []).append(case)
    estimates = {name: estimate_cost(found) for name, found in grouped.items()}
    measured = {name: seconds for name, seconds in (measured or {}).items() if name in estimates and seconds > 0}
    scale = sum(measured.values()) / sum(estimates[name] for name in measured) if measured else 1.0
    return [Unit(name, tuple(found), measured.get(name, estimates[name] * scale)) for name, found in grouped.items()]


def assign_shards(units: Sequence[Unit], total: int) -> dict[str, int]:
    """Each unit's shard (1..``total``): largest cost first, to the least loaded shard (longest-processing-time first)."""
    import heapq

    loads = [(0.0, shard) for shard in range(min(total, len(units)))]  # the least loaded shard (then the lowest) on top
    assigned: dict[str, int] = {}
    order = sorted(range(len(units)), key=lambda index: (-units[index].cost, index))
    for index in order:
        load, shard = heapq.heappop(loads)
        heapq.heappush(loads, (load + units[index].cost, shard))
        assigned[units[index].name] = shard + 1
    return assigned


def measured_seconds(path: Path) -> dict[str, float]:
    """Seconds per unit measured by the run artifact at ``path`` (:class:`ValueError` naming it when unreadable)."""
    from pytest_lens.records.cases import stream_group
    from pytest_lens.runs.storage import load_run

    artifact = load_run(path)
    found: dict[str, float] = {}
    for result in artifact.results.scored():
        name = stream_group(result.adapter, result.scope_id, result.budget)
        found[name] = found.get(name, 0.0) + result.duration_s
    return found


# -- what a shard records ------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """``value`` as JSON data: dataclasses as dicts, paths as strings, tuples and mappings as lists and dicts."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def settings_record(settings: LensSettings) -> dict[str, Any]:
    """What a run measures and how it gates, as JSON data (the per-process fields of :data:`OWN_FIELDS` left out).

    Written into the shard's artifact, so its secrets are masked as the run's other records are: adapter options
    named like secrets, the endpoint's user-info and key-like query parameters, and every known key anywhere.
    Shards masked alike still compare equal, and the fan-in needs none of them (it sends no request).
    """
    from pytest_lens.llm.api_keys import mask_data, mask_secrets, masked_options

    record = {f.name: _plain(getattr(settings, f.name)) for f in fields(settings) if f.name not in OWN_FIELDS}
    for adapter in record["adapters"]:
        adapter["options"] = masked_options(adapter["options"])
    if record["llm"].get("base_url"):
        record["llm"]["base_url"] = mask_secrets(record["llm"]["base_url"])
    masked: dict[str, Any] = mask_data(record)
    return masked


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def adapter_versions(targets: Mapping[str, str]) -> dict[str, str | None]:
    """Per label, the installed distribution and version that provides its adapter (``None``: not installed, e.g. a local module).

    A registered name's distribution is its entry point's; a ``module:Class`` target's is the distribution named like
    its top-level package, when one is installed (a module of the project under test has none: the code revision
    covers it).
    """
    from importlib.metadata import PackageNotFoundError, entry_points, version

    from pytest_lens.contract.registry import ENTRY_POINT_GROUP

    registered = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    found: dict[str, str | None] = {}
    for label, target in targets.items():
        point = registered.get(target)
        if point is not None and point.dist is not None:
            found[label] = f"{point.dist.name} {point.dist.version}"
            continue
        top = target.partition(":")[0].partition(".")[0]
        try:
            found[label] = f"{top} {version(top)}" if ":" in target else None
        except PackageNotFoundError:
            found[label] = None
    return found


def code_revision(rootdir: Path) -> dict[str, Any] | None:
    """The git commit of the rootdir and whether the work tree has changes (``None`` outside git)."""
    found = commit_info(rootdir)
    return None if found is None else {"id": found.id, "dirty": found.dirty}


def unit_keys(setup: RunSetup, units: Sequence[Unit], *, code: dict[str, Any] | None, versions: Mapping[str, str | None]) -> dict[str, str]:
    """Per unit, a content hash of everything that determines its results.

    The scope's dataset file (its SHA-256), the adapter (target, options, control role, mutation and installed
    version), the budget, the agent and the models with their limits (not the endpoint's address: the same model
    elsewhere answers the same), the judge, scoring, weights, gates and headline, the seed, the repetitions,
    pytest-lens's version and the code revision. A changed key reruns that unit only.
    """
    settings, llm = setup.settings, setup.settings.llm
    run = {
        "pytest_lens": __version__,
        "code": code,
        "agent": settings.agent,
        "models": {name: getattr(llm, name) for name in _MODEL_FIELDS},
        "scoring": settings.scoring,
        "weights": _plain(setup.scoring.weights),
        "gates": [f"{gate.metric} < {gate.threshold:g}" for gate in setup.scoring.gates],
        "headline": settings.headline,
        "seed": settings.seed,
        "repeat": settings.repeat,
        "opaque_refs": settings.opaque_refs,
        "call_timeout": settings.call_timeout,
    }
    specs = {spec.label: spec for spec in setup.adapter_specs}
    files = {scope.scope_id: dataset.sha256 for dataset in setup.datasets for scope in dataset.scopes}
    keys: dict[str, str] = {}
    for unit in units:
        case = unit.cases[0]
        spec = specs[case.adapter]
        keys[unit.name] = _digest(
            {
                "run": run,
                "unit": unit.name,
                "adapter": {**_plain(spec), "version": versions.get(spec.label)},
                "dataset": files.get(case.scope.scope_id),
                "suite": case.scope.suite,
                "budget": _plain(case.budget),
            }
        )
    return keys


# -- resumable runs --------------------------------------------------------------------------------


def _file_name(unit: str) -> str:
    """A file name for a unit name (``adapter:scope:budget`` holds characters some file systems refuse)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", unit)[:100]
    return f"{safe}-{hashlib.sha256(unit.encode()).hexdigest()[:10]}.json"


class ResumeStore:
    """``--lens-resume=DIR``: one file per finished unit, ``{"unit", "key", "digest", "results"}``, written whole or not at all.

    ``digest`` is the SHA-256 of the unit, its key and its results: a kept file edited since (a score rewritten,
    a result dropped) no longer matches and its unit runs again. A file that cannot be read (a device, a pipe, too
    large, not JSON) is run again too; one that cannot be written is a warning, and the run goes on.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        #: Why units could not be kept (the first is warned about), by unit.
        self.unwritten: dict[str, str] = {}

    def path(self, unit: str) -> Path:
        """Where ``unit``'s results are kept."""
        return self.directory / _file_name(unit)

    def load(self, unit: str, key: str) -> tuple[list[QuestionResult] | None, str]:
        """The kept results of ``unit`` when their key is ``key``; else ``None`` and why.

        Why: ``absent``, ``changed`` (another key), ``altered`` (the digest does not match), ``unreadable``.
        """
        from pytest_lens.datasets.json_document import JsonDocumentError, read_input, read_json

        path = self.path(unit)
        try:
            data = read_json(read_input(path))
        except FileNotFoundError:
            return None, "absent"
        except (OSError, JsonDocumentError):
            return None, "unreadable"
        if not isinstance(data, dict) or data.get("unit") != unit or not isinstance(data.get("results"), list):
            return None, "unreadable"
        if data.get("key") != key:
            return None, "changed"
        if data.get("digest") != _digest([unit, key, data["results"]]):
            return None, "altered"
        try:
            return [QuestionResult.model_validate(item) for item in data["results"]], "reused"
        except ValueError:
            return None, "unreadable"

    def save(self, unit: str, key: str, results: Sequence[QuestionResult]) -> None:
        """Keep ``unit``'s results: a temporary file renamed into place, so a killed process leaves the old file or the new.

        A directory that cannot hold it (a file in its place, read-only, full) costs the run only its resumability:
        a warning names the directory and the reason once, and no partial file is left.
        """
        from pytest_lens.runs.storage import write_whole

        rows = [result.model_dump(mode="json") for result in results]
        body = {"unit": unit, "key": key, "digest": _digest([unit, key, rows]), "results": rows}
        try:
            write_whole(self.path(unit), json.dumps(body, separators=(",", ":")).encode("utf-8"), own=True)
        except OSError as exc:
            reason = f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
            if not self.unwritten:
                import warnings

                warnings.warn(
                    f"pytest-lens: --lens-resume cannot keep stream group {unit} in {self.directory} ({reason}); "
                    "the run goes on, but what it finishes will not be reused by a later run",
                    stacklevel=2,
                )
            self.unwritten[unit] = reason


def _named(units: Sequence[str], what: str) -> str:
    """`` (2 changed: a, b)``: at most five units named; empty for none."""
    if not units:
        return ""
    more = " ..." if len(units) > 5 else ""
    return f" ({len(units)} {what}: {', '.join(units[:5])}{more})"


def _needs_rerun(result: QuestionResult, mode: str | None) -> bool:
    if mode == "not-measured":
        return result.not_measured is not None or bool(result.scoring_failures)
    if mode == "faults":
        return bool(result.faults)
    return False


@dataclass
class RunSlice:
    """Which of the run's cases this process runs, which kept results it reuses, and what its artifact records."""

    units: list[Unit]
    #: ``(I, N)`` under ``--lens-shard``, and the units of shard I.
    shard: tuple[int, int] | None = None
    mine: frozenset[str] = frozenset()
    store: ResumeStore | None = None
    keys: dict[str, str] = field(default_factory=dict)
    rerun_mode: str | None = None
    #: Kept results recorded without running (by unit), and the kept questions asked again (case ids).
    reused: dict[str, list[QuestionResult]] = field(default_factory=dict)
    rerun_ids: frozenset[str] = frozenset()
    #: Units whose kept file had another key (their inputs changed), or could not be read.
    changed: list[str] = field(default_factory=list)
    #: Units whose kept file was edited since it was written (its digest does not match): run again.
    altered: list[str] = field(default_factory=list)
    code: dict[str, Any] | None = None
    versions: dict[str, str | None] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    #: How the run's groups were split (every shard computes the same: ``lens merge`` checks it) and pytest's selection.
    partition: dict[str, Any] = field(default_factory=dict)
    selection: tuple[str, ...] = ()
    #: The case ids kept results stand for (what this process does not run); on an xdist worker, the controller's.
    reused_ids: frozenset[str] = frozenset()
    #: Units kept in part: a run that selected some of their questions (``-k``) kept those; the rest are asked now.
    partly_reused_units: list[str] = field(default_factory=list)
    _by_unit: dict[str, Unit] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_unit = {unit.name: unit for unit in self.units}

    def owns(self, unit: str) -> bool:
        """Whether ``unit`` belongs to this shard (every unit without ``--lens-shard``)."""
        return self.shard is None or unit in self.mine

    @property
    def owns_nothing(self) -> bool:
        """A shard of more shards than the run has stream groups, given none: its run is empty, not failed."""
        return self.shard is not None and not any(unit.name in self.mine for unit in self.units)

    def keeps(self, case: LensCase) -> bool:
        """Whether this process runs ``case``: its unit is this shard's, and no kept result stands for it."""
        return self.owns(case.group) and case.id not in self.reused_ids

    @property
    def reused_units(self) -> list[str]:
        """Units whose kept results stand whole (no question of them asked again)."""
        return [unit for unit, results in self.reused.items() if len(results) == len(self._by_unit[unit].cases)]


    def worker_plan(self) -> dict[str, Any]:
        """What an xdist worker needs to deselect exactly what this controller reuses (it must not read the directory later)."""
        return {"reused": sorted(self.reused_ids), "rerun": sorted(self.rerun_ids)}

    def follow(self, plan: Mapping[str, Any]) -> None:
        """On an xdist worker: reuse what the controller reuses (:meth:`worker_plan`), results aside."""
        self.reused = {}
        self.reused_ids = frozenset(plan.get("reused", []))
        self.rerun_ids = frozenset(plan.get("rerun", []))

    def note(self, result: QuestionResult, ledger: ResultLedger) -> None:
        """A result was recorded: once every selected question of its unit has one, keep the unit's results (``--lens-resume``).

        A run that selects part of a unit (``-k``) keeps that part; a later run reuses it and asks only the rest.
        """
        from pytest_lens.records.cases import stream_group

        unit = stream_group(result.adapter, result.scope_id, result.budget)
        found = self._by_unit.get(unit)
        if found is None or self.store is None or not self.owns(unit) or result.item_key in self._reused_keys:
            return  # a kept result recorded again adds nothing to keep
        cases = found.cases
        if any(case.item_key in ledger.expected and case.item_key not in ledger.results for case in cases):
            return
        self.store.save(unit, self.keys[unit], [ledger.results[case.item_key] for case in cases if case.item_key in ledger.results])

    @cached_property
    def _reused_keys(self) -> frozenset[ItemKey]:
        return frozenset(result.item_key for results in self.reused.values() for result in results)

    def header(self) -> list[str]:
        """The report header's lines about this slice (shard share, units reused and to run)."""
        lines: list[str] = []
        if self.shard is not None:
            mine = [unit for unit in self.units if unit.name in self.mine]
            cases = sum(len(unit.cases) for unit in mine)
            empty = f" (it owns nothing: {self.shard[1]} shards for {len(self.units)} stream groups; exit 0)" if self.owns_nothing else ""
            share = f"{len(mine)} of {len(self.units)} stream groups, {cases} questions"
            lines.append(f"lens: shard {self.shard[0]}/{self.shard[1]}: {share}{empty}")
        if self.store is not None:
            owned = [unit for unit in self.units if self.owns(unit.name)]
            whole = len(self.reused_units)
            reran = f", {len(self.rerun_ids)} questions asked again (--lens-rerun={self.rerun_mode})" if self.rerun_mode else ""
            changed = _named(self.changed, "changed") + _named(self.altered, "altered since kept (their digest does not match)")
            partly = self.partly_reused_units
            parts = sum(len(self.reused[unit]) for unit in partly)
            kept_part = f", {len(partly)} of them kept in part ({parts} questions reused)" if partly else ""
            lines.append(
                f"lens: resume {self.store.directory}: {whole} of {len(owned)} stream groups reused, "
                f"{len(owned) - whole} to run{kept_part}{changed}{reran}"
            )
        return lines

    def identity(self, ledger: ResultLedger) -> dict[str, Any]:
        """What the artifact records: ``shard`` (for ``lens merge``) and ``resumed``."""
        found: dict[str, Any] = {}
        if self.shard is not None:
            missing = [[*key, ledger.crashed.get(key)] for key in ledger.expected if key not in ledger.results]
            # Questions of its groups pytest's selection left out (``-k``): with ``missing``, what it owed and did not run.
            owed = (case.item_key for unit in self.units if unit.name in self.mine for case in unit.cases)
            not_selected = [list(key) for key in owed if key not in ledger.expected and key not in ledger.results]
            found["shard"] = {
                "index": self.shard[0],
                "total": self.shard[1],
                "units": sorted(self.mine),
                "partition": self.partition,
                "selection": list(self.selection),
                "settings": self.settings,
                "code": self.code,
                "adapter_versions": self.versions,
                "missing": missing,
                "not_selected": not_selected,
                "problems": list(ledger.problems),
            }
        if self.store is not None:
            found["resumed"] = {
                "directory": str(self.store.directory),
                "units_reused": len(self.reused_units),
                "units_reused_in_part": list(self.partly_reused_units),
                "questions_reused": sum(len(results) for results in self.reused.values()),
                "rerun": self.rerun_mode,
                "questions_rerun": sorted(self.rerun_ids),
                "units_altered": list(self.altered),
                "units_not_kept": dict(self.store.unwritten),
            }
        return found


def plan_slice(setup: RunSetup) -> RunSlice | None:
    """The run's slice under ``--lens-shard`` and ``--lens-resume`` (``None`` with neither); kept results loaded."""
    settings = setup.settings
    if settings.shard is None and settings.resume_dir is None:
        return None
    durations = _under(settings.rootdir, settings.shard_durations) if settings.shard_durations else None
    measured = measured_seconds(durations) if durations is not None else None
    units = units_of(setup.cases, measured)
    code = code_revision(settings.rootdir)
    versions = adapter_versions({spec.label: spec.target for spec in setup.adapter_specs})
    found = RunSlice(units, code=code, versions=versions, settings=settings_record(settings), selection=settings.selection)
    if settings.shard is not None:
        index, total = settings.shard
        assigned = assign_shards(units, total)
        found = RunSlice(
            units,
            shard=settings.shard,
            mine=frozenset(unit for unit, shard in assigned.items() if shard == index),
            code=code,
            versions=versions,
            settings=found.settings,
            partition=partition_record(assigned, durations),
            selection=settings.selection,
        )
    if settings.resume_dir is not None:
        found.store = ResumeStore(_under(settings.rootdir, settings.resume_dir))
        found.keys = unit_keys(setup, units, code=code, versions=versions)
        found.rerun_mode = settings.rerun
        _load_kept(found)
    return found


def partition_record(assigned: Mapping[str, int], durations: Path | None) -> dict[str, Any]:
    """How the run's groups were split: a digest of the whole split, and the durations file that balanced it (if any)."""
    record: dict[str, Any] = {"digest": _digest(sorted(assigned.items())), "durations": None}
    if durations is not None:  # read already as a run artifact (a regular file, bounded): hashed in pieces
        with durations.open("rb") as file:
            record["durations"] = {"path": str(durations), "sha256": hashlib.file_digest(file, "sha256").hexdigest()}
    return record


def _load_kept(found: RunSlice) -> None:
    assert found.store is not None
    rerun: set[str] = set()
    reused_ids: set[str] = set()
    for unit in found.units:
        if not found.owns(unit.name):
            continue
        results, why = found.store.load(unit.name, found.keys[unit.name])
        if results is None:
            if why == "altered":
                found.altered.append(unit.name)
            elif why != "absent":
                found.changed.append(unit.name)
            continue
        by_key = {result.item_key: result for result in results}
        if not set(by_key) <= {case.item_key for case in unit.cases}:
            found.changed.append(unit.name)  # the unit's questions changed (e.g. --lens-repeat)
            continue
        # A run that selected part of the unit (-k) kept that part: it is reused, the rest is asked.
        kept = [case for case in unit.cases if case.item_key in by_key]
        if len(kept) < len(unit.cases):
            found.partly_reused_units.append(unit.name)
        again = [case for case in kept if _needs_rerun(by_key[case.item_key], found.rerun_mode)]
        rerun.update(case.id for case in again)
        skip = {case.item_key for case in again}
        found.reused[unit.name] = [by_key[case.item_key] for case in kept if case.item_key not in skip]
        reused_ids.update(case.id for case in kept if case.item_key not in skip)
    found.rerun_ids = frozenset(rerun)
    found.reused_ids = frozenset(reused_ids)


def _under(rootdir: Path, path: Path) -> Path:
    return path if path.is_absolute() else rootdir / path
