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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_lens.llm.settings import LLMSettings
from pytest_lens.records.results import RunArtifact
from pytest_lens.records.settings import AdapterSpec, LensSettings
from pytest_lens.runs.report import RunOutcome
from pytest_lens.runs.session import LensSession
from pytest_lens.runs.setup import LensConfigError, open_run
from pytest_lens.runs.slicing import code_revision

__all__ = ["MergedRun", "ShardError", "check_shards", "merge_shards", "settings_from_record"]


class ShardError(ValueError):
    """The shards cannot be joined; the message names the shard and the field at fault."""


@dataclass(frozen=True)
class MergedRun:
    """The joined run: its session (results, analysis), how it finished, and the exit status a single run would have."""

    session: LensSession
    outcome: RunOutcome
    exit_code: int


def _shard_of(name: str, artifact: RunArtifact) -> dict[str, Any]:
    shard = artifact.run.shard
    if not isinstance(shard, dict) or not isinstance(shard.get("index"), int) or not isinstance(shard.get("total"), int):
        raise ShardError(f"{name} is not a shard's artifact: run each shard with --lens-shard=I/N and --lens-json=PATH")
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
    """The settings a shard recorded (:func:`pytest_lens.runs.slicing.settings_record`), with this process's ``own`` fields."""
    found = dict(record)
    llm = dict(found.pop("llm", {}) or {})
    if "cache_path" in llm:
        llm["cache_path"] = Path(llm["cache_path"])
    adapters = tuple(AdapterSpec(a["label"], a["target"], dict(a.get("options") or {})) for a in found.pop("adapters", []))
    for name in ("datasets",):
        found[name] = tuple(Path(p) for p in found.get(name, ()))
    for name in ("budgets", "suites"):
        if name in found:
            found[name] = tuple(found[name])
    if found.get("mutants") is not None:
        found["mutants"] = tuple(found["mutants"])
    if "storage" in found:
        found["storage"] = Path(found["storage"])
    try:
        return LensSettings(adapters=adapters, llm=LLMSettings(**llm), **found, **own)
    except TypeError as exc:  # a field this version does not know
        raise ShardError(f"the shards' settings cannot be read by this pytest-lens: {exc}") from None


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
    cases = {case.item_key: case for case in session.cases}
    ledger = session.ledger
    for name, artifact in shards:
        shard = _shard_of(name, artifact)
        for result in artifact.results:
            if result.item_key not in cases:
                raise ShardError(f"{name}: question {'/'.join(map(str, result.item_key))} is not in the run's data here")
            ledger.expect([cases[result.item_key]])
            session.record(result)
        for *key, worker in shard.get("missing", []):
            item = (str(key[0]), str(key[1]), str(key[2]), str(key[3]), int(key[4]))
            if item not in cases:
                raise ShardError(f"{name}: question {'/'.join(map(str, item))} is not in the run's data here")
            ledger.expect([cases[item]])
            if worker is not None:
                session.record_crash(cases[item], str(worker))
        if shard.get("problems"):
            session.add_problems(shard["problems"])
    outcome = session.finish(encoding=encoding)
    failed_tests = any(result.failed and result.skipped is None for result in ledger.results.values())
    return MergedRun(session, outcome, 1 if outcome.exit_code or failed_tests or ledger.missing() else 0)
