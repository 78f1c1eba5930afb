"""``lens merge``: N shards' artifacts (``--lens-shard=I/N``) joined into the one run they split, and gated like it.

The shards are checked first (:func:`check_shards`): every shard of one split, each once, run with the same
settings, code revision, adapter versions, pytest-lens version and data. Then the run is set up again from the
settings the shards recorded (datasets loaded and their hashes checked, adapters, judge, scoring, baseline), every
shard's per-question rows are recorded into it as a single run records its questions, and the run is finished the
same way: every summary, statistic, paired test, sensitivity table, baseline comparison and gate is computed from
those rows by the code a single run uses, never from the shards' own figures. The exit status is the one the single
run's pytest would have had: 1 when the verdict fails or a question failed its test, else 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_lens.records.cases import LensCase
from pytest_lens.records.options import parse_recorded, parse_shard
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.records.rows import FileRows, RowError, RowSpan
from pytest_lens.records.settings import LensSettings
from pytest_lens.runs.owed import ItemKey, OwedError, ShardAccount, check_accounts, check_same_split
from pytest_lens.runs.report import RunOutcome
from pytest_lens.runs.session import LensSession
from pytest_lens.runs.setup import LensConfigError, open_run
from pytest_lens.runs.slicing import assign_shards, code_revision, units_of

__all__ = ["MergedRun", "ShardError", "check_owed", "check_shards", "merge_shards", "settings_from_record"]


class ShardError(ValueError):
    """The shards cannot be joined; the message names the shard and the field at fault."""


@dataclass(frozen=True)
class MergedRun:
    """The joined run: its session (results, analysis), how it finished, and the exit status a single run would have."""

    session: LensSession
    outcome: RunOutcome
    exit_code: int


def _shard_of(name: str, artifact: RunArtifact) -> dict[str, Any]:
    """The shard's record, its fields of the right types (:class:`ShardError` naming the one that is not)."""
    shard = artifact.run.shard
    if not isinstance(shard, dict) or not isinstance(shard.get("index"), int) or not isinstance(shard.get("total"), int):
        raise ShardError(f"{name} is not a shard's artifact: run each shard with --lens-shard=I/N and --lens-json=PATH")
    try:
        parse_shard(f"{shard['index']}/{shard['total']}")
    except ValueError as exc:
        raise ShardError(f"{name}: run.shard.index/total {exc.args[0].removeprefix('must be ')}") from None
    code = shard.get("code")
    if code is not None and not (isinstance(code, dict) and isinstance(code.get("id"), str)):
        raise ShardError(f"{name}: run.shard.code is {_shown(code)}, not {{'id': COMMIT, 'dirty': ...}} or null")
    if not isinstance(shard.get("settings"), dict):
        raise ShardError(f"{name}: run.shard.settings is {_shown(shard.get('settings'))}, not the shard's settings")
    problems = shard.get("problems", [])
    if not isinstance(problems, list) or not all(isinstance(problem, str) for problem in problems):
        raise ShardError(f"{name}: run.shard.problems is {_shown(problems)}, not a list of lines")
    return shard


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _same(field: str, values: Sequence[tuple[str, Any]]) -> None:
    """Refuse shards that differ in ``field``, naming the first two that differ and their values."""
    first_name, first = values[0]
    for name, value in values[1:]:
        if value != first:
            raise ShardError(f"shards differ in {field}: {first_name} has {_shown(first)}, {name} has {_shown(value)}; rerun them alike")


def check_shards(shards: Sequence[tuple[str, RunArtifact]]) -> dict[str, Any]:
    """The shards' common record (of the first); :class:`ShardError` naming what is missing, duplicated or different."""
    if not shards:
        raise ShardError("no shard given")
    records = [(name, _shard_of(name, artifact)) for name, artifact in shards]
    totals = sorted({record["total"] for _, record in records})
    if len(totals) > 1:
        shown = ", ".join(f"{name} is {record['index']}/{record['total']}" for name, record in records)
        raise ShardError(f"shards of different splits ({shown}): merge the N shards of one --lens-shard=I/N run")
    total = totals[0]
    by_index: dict[int, list[str]] = {}
    for name, record in records:
        by_index.setdefault(record["index"], []).append(name)
    twice = {index: names for index, names in by_index.items() if len(names) > 1}
    if twice:
        shown = "; ".join(f"shard {index}/{total} in {', '.join(names)}" for index, names in sorted(twice.items()))
        raise ShardError(f"duplicated shard: {shown}; give each shard once")
    missing = [index for index in range(1, total + 1) if index not in by_index]
    if missing:
        given = ", ".join(f"{record['index']}/{total} ({name})" for name, record in sorted(records, key=lambda r: r[1]["index"]))
        raise ShardError(f"missing shard {', '.join(f'{index}/{total}' for index in missing)} (given: {given}); every shard is needed")
    _same("code revision", [(name, record.get("code")) for name, record in records])
    _same("pytest-lens version", [(name, artifact.pytest_lens_version) for name, artifact in shards])
    _same("adapter versions", [(name, record.get("adapter_versions")) for name, record in records])
    settings = [(name, _measured_settings(record.get("settings") or {})) for name, record in records]
    for key in dict.fromkeys(key for _, found in settings for key in found):
        _same(f"setting {key!r}", [(name, found.get(key)) for name, found in settings])
    for name, artifact in shards[1:]:
        _same("datasets (path and sha256)", [(shards[0][0], _data(shards[0][1])), (name, _data(artifact))])
    partitions = [(name, record.get("partition")) for name, record in records]
    try:  # before the groups are compared: a split of its own is why a shard's groups overlap its siblings'
        check_same_split([(name, found) for name, found in partitions if isinstance(found, dict)])
    except OwedError as exc:
        raise ShardError(str(exc)) from None
    owner: dict[str, str] = {}
    for name, record in records:
        for unit in record.get("units", []):
            if unit in owner:
                raise ShardError(f"stream group {unit} is in both {owner[unit]} and {name}: the shards are not of one split")
            owner[unit] = name
    return records[0][1]


#: LLM settings each shard may set its own way: where its request cache is, how many requests it sends at once.
_PER_PROCESS_LLM = ("cache_path", "max_connections")


def _measured_settings(found: Mapping[str, Any]) -> dict[str, Any]:
    """A shard's settings without what each process may choose for itself."""
    llm = found.get("llm")
    if not isinstance(llm, Mapping):
        return dict(found)
    return {**found, "llm": {key: value for key, value in llm.items() if key not in _PER_PROCESS_LLM}}


def _data(artifact: RunArtifact) -> list[tuple[Any, Any]]:
    return [(d.get("path"), d.get("sha256")) for d in artifact.run.datasets or []]


def settings_from_record(record: Mapping[str, Any], **own: Any) -> LensSettings:
    """The settings a shard recorded (:func:`pytest_lens.runs.slicing.settings_record`), with this process's ``own`` fields.

    Every field is checked as its option is (:func:`~pytest_lens.records.options.parse_recorded`): :class:`ShardError`
    names the field and the option at fault.
    """
    from pytest_lens.controls.plan import mutant_names

    try:
        found = parse_recorded(record)
        if found["mutants"]:
            mutant_names(found["mutants"])
    except ValueError as exc:
        raise ShardError(f"the shards' settings cannot be used: {exc}") from None
    return LensSettings(**found, **own)


def _key(name: str, field: str, value: Any) -> ItemKey:
    """One item key of a shard's record (``[adapter, scope, budget, question, repetition]``), or :class:`ShardError`."""
    if (
        not isinstance(value, list | tuple)
        or len(value) != 5
        or not all(isinstance(part, str) for part in value[:4])
        or not isinstance(value[4], int)
        or isinstance(value[4], bool)
    ):
        raise ShardError(f"{name}: run.shard.{field} holds {_shown(value)}, not [adapter, scope, budget, question, repetition]")
    return (value[0], value[1], value[2], value[3], value[4])


def _entries(name: str, shard: Mapping[str, Any], field: str) -> list[Any]:
    found = shard.get(field)
    if not isinstance(found, list):
        raise ShardError(f"{name}: run.shard.{field} is {_shown(found)}, not a list: the shard was written by another pytest-lens")
    return found


def _missing(name: str, shard: Mapping[str, Any]) -> list[tuple[ItemKey, str | None]]:
    """A shard's selected questions with no result, each with the xdist worker it crashed (``None``: it did not)."""
    found: list[tuple[ItemKey, str | None]] = []
    for entry in _entries(name, shard, "missing"):
        if not isinstance(entry, list) or len(entry) != 6:
            raise ShardError(f"{name}: run.shard.missing holds {_shown(entry)}, not [adapter, scope, budget, question, repetition, worker]")
        found.append((_key(name, "missing", entry[:5]), None if entry[5] is None else str(entry[5])))
    return found


def _account(name: str, artifact: RunArtifact, keys: Iterable[ItemKey]) -> ShardAccount:
    shard = _shard_of(name, artifact)
    units = _entries(name, shard, "units")
    selection = _entries(name, shard, "selection")
    partition = shard.get("partition")
    if not all(isinstance(unit, str) for unit in units) or not all(isinstance(arg, str) for arg in selection):
        raise ShardError(f"{name}: run.shard.units and run.shard.selection must hold strings")
    if not isinstance(partition, dict):
        raise ShardError(f"{name}: run.shard.partition is {_shown(partition)}: the shard was written by another pytest-lens")
    return ShardAccount(
        name,
        int(shard["index"]),
        frozenset(units),
        keys,
        missing=[key for key, _ in _missing(name, shard)],
        not_selected=[_key(name, "not_selected", entry) for entry in _entries(name, shard, "not_selected")],
        selection=tuple(selection),
        partition=partition,
    )


def check_owed(
    shards: Sequence[tuple[str, RunArtifact]], cases: Sequence[LensCase], total: int, keys: Mapping[str, Iterable[ItemKey]]
) -> None:
    """Every question of the run (``cases``, as this checkout has them) once in the shards, as each owed it.

    ``keys``: each shard's results' item keys, by shard name. :class:`ShardError` naming the shard, the group and the
    questions (see :mod:`pytest_lens.runs.owed`).
    """
    accounts = [_account(name, artifact, keys[name]) for name, artifact in shards]
    units = units_of(cases)
    run_units = {unit.name: [case.item_key for case in unit.cases] for unit in units}
    by_estimate = all(account.partition.get("durations") is None for account in accounts)
    try:
        check_accounts(accounts, run_units, assign_shards(units, total) if by_estimate else None)
    except OwedError as exc:
        raise ShardError(str(exc)) from None


def _rows_of(name: str, artifact: RunArtifact) -> list[tuple[QuestionResult, RowSpan | None]]:
    """A shard's rows, read without their transcripts, each with where its bytes are (``None``: inline in an old artifact).

    The merged run's rows file is these bytes copied, never a row parsed whole and written again: 10^5 rows of
    7 kB are read at the cost of their scores (see docs/performance.md).
    """
    found = artifact.results
    try:
        if isinstance(found, FileRows):
            return list(found.scored_spans())
        return [(result, None) for result in found]
    except RowError as exc:
        raise ShardError(f"{name}: {exc}") from None


def merge_shards(
    shards: Sequence[tuple[str, RunArtifact]],
    *,
    rootdir: Path,
    out: Path | None,
    html: Path | None = None,
    save: str | None = None,
    encoding: str | None = "utf-8",
) -> MergedRun:
    """Join checked shards into one run, finished as a single run is (``out``: its artifact; ``html``: its report; ``save``: its name)."""
    record = check_shards(shards)
    here = code_revision(rootdir)
    if here is not None and record.get("code") is not None and here["id"] != record["code"].get("id"):
        raise ShardError(
            f"the fan-in's checkout {rootdir} is at commit {here['id'][:12]}, the shards ran at {str(record['code'].get('id'))[:12]}: "
            "merge in a checkout of the shards' commit (the run is set up again from it)"
        )
    settings = settings_from_record(
        record["settings"], rootdir=rootdir, invocation_dir=rootdir, json_path=out, html_path=html, save_name=save
    )
    try:
        session = LensSession(open_run(settings))
    except LensConfigError as exc:
        raise ShardError(f"cannot set the run up again here (the fan-in needs the shards' checkout and environment): {exc}") from None
    recorded = {d.get("path"): d.get("sha256") for d in shards[0][1].run.datasets or []}
    for dataset in session.setup.datasets:
        if dataset.path in recorded and recorded[dataset.path] != dataset.sha256:
            shards_sha = str(recorded[dataset.path])[:12]
            raise ShardError(f"dataset {dataset.path} changed since the shards ran (sha256 {dataset.sha256[:12]}, shards: {shards_sha})")
    session.merged_from = [name for name, _ in shards]
    rows = {name: _rows_of(name, artifact) for name, artifact in shards}  # each shard's rows file read once
    keys = {name: [result.item_key for result, _ in found] for name, found in rows.items()}
    check_owed(shards, session.cases, int(record["total"]), keys)
    cases = {case.item_key: case for case in session.cases}
    ledger = session.ledger
    for name, artifact in shards:
        shard = _shard_of(name, artifact)
        for result, source in rows[name]:
            ledger.expect([cases[result.item_key]])
            session.record(result, source)
        for key, worker in _missing(name, shard):
            ledger.expect([cases[key]])
            if worker is not None:
                session.record_crash(cases[key], worker)
        if shard.get("problems"):
            session.add_problems(shard["problems"])
    outcome = session.finish(encoding=encoding)
    failed_tests = any(result.failed and result.skipped is None for result in ledger.results.values())
    return MergedRun(session, outcome, 1 if outcome.exit_code or failed_tests or ledger.missing() else 0)
