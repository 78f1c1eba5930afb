"""What each shard of a run owed, checked against what it recorded, before ``lens merge`` joins them.

Every shard computes the same split of the run's stream groups (:func:`~pytest_lens.runs.slicing.assign_shards`),
so the fan-in knows what each one owed: every question (and repetition) of its groups. A shard's artifact says
what became of each: a result, a record of why there is none (``missing``: selected, never finished), or left out
by pytest's selection (``not_selected``: ``-k``, ``-m``, ``--deselect``, under the selection it records). A merge
that joined shards short of that, or with a result twice, or with a result of another shard's group, would report
a run that never happened: :func:`check_accounts` refuses it, naming the shard, the group and the questions.

The checks read only the shards' records and their results' keys (an iterable of item keys per shard), never how
the results are stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ItemKey", "OwedError", "ShardAccount", "check_accounts", "check_same_split", "describe_selection"]

#: A question's answer: (adapter, scope, budget, question, repetition).
ItemKey = tuple[str, str, str, str, int]

#: How many questions a refusal names before it says how many more there are.
SHOWN = 5


class OwedError(ValueError):
    """A shard did not give what it owed; the message names the shard, the group and the questions."""


@dataclass
class ShardAccount:
    """One shard as the fan-in checks it: its name and record, and the keys of its results."""

    name: str
    index: int
    units: frozenset[str]
    results: Iterable[ItemKey]
    missing: Sequence[ItemKey] = ()
    not_selected: Sequence[ItemKey] = ()
    selection: tuple[str, ...] = ()
    partition: Mapping[str, Any] = field(default_factory=dict)


def describe_selection(selection: Sequence[str]) -> str:
    """The selection arguments a shard recorded, for a message (``none`` when it selected everything)."""
    return " ".join(selection) if selection else "none"


def _group(key: ItemKey) -> str:
    return f"{key[0]}:{key[1]}:{key[2]}"


def _question(key: ItemKey) -> str:
    return key[3] if key[4] == 0 else f"{key[3]}#{key[4]}"


def _by_group(keys: Iterable[ItemKey]) -> str:
    """``group (q1, q2, ... N more); group2 (...)``: the questions of ``keys``, grouped, at most :data:`SHOWN` each."""
    grouped: dict[str, list[str]] = {}
    for key in keys:
        grouped.setdefault(_group(key), []).append(_question(key))
    parts = []
    for group, questions in grouped.items():
        more = f", ... {len(questions) - SHOWN} more" if len(questions) > SHOWN else ""
        parts.append(f"{group} ({len(questions)}: {', '.join(questions[:SHOWN])}{more})")
    return "; ".join(parts)


def _partition(partition: Mapping[str, Any]) -> str:
    durations = partition.get("durations")
    if isinstance(durations, Mapping):
        return f"by the durations of {durations.get('path')} (sha256 {str(durations.get('sha256'))[:12]})"
    return "by estimated cost (no --lens-shard-durations)"


def check_same_split(named: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """Every shard's record of the split (``run.shard.partition``, by shard name) is the first's."""
    first_name, first = named[0]
    for name, partition in named[1:]:
        if partition.get("digest") != first.get("digest"):
            raise OwedError(
                f"the shards were split differently: {first_name} {_partition(first)}, {name} {_partition(partition)}; "
                "their stream groups overlap or leave some out: run every shard with the same --lens-shard-durations (or none)"
            )


def _check_partition(accounts: Sequence[ShardAccount], expected: Mapping[str, int] | None) -> None:
    """The same split in every shard, and each shard's groups those the split gives it."""
    check_same_split([(account.name, account.partition) for account in accounts])
    if expected is None:
        return
    for account in accounts:
        owed = frozenset(unit for unit, shard in expected.items() if shard == account.index)
        if account.units != owed:
            extra, lacking = sorted(account.units - owed), sorted(owed - account.units)
            raise OwedError(
                f"{account.name} (shard {account.index}) recorded the stream groups {', '.join(extra) or 'none'} beyond "
                f"its share, and lacks {', '.join(lacking) or 'none'}: its split is not the one every shard computes from "
                "the run's data here"
            )


def _check_groups(accounts: Sequence[ShardAccount], run_units: Mapping[str, Sequence[ItemKey]]) -> None:
    """Every group of the run in exactly one shard, and no shard with a group the run lacks."""
    owner: dict[str, str] = {}
    for account in accounts:
        for unit in sorted(account.units):
            if unit not in run_units:
                raise OwedError(f"{account.name}: stream group {unit} is not in the run's data here")
            if unit in owner:
                raise OwedError(f"stream group {unit} is in both {owner[unit]} and {account.name}: the shards are not of one split")
            owner[unit] = account.name
    orphans = [unit for unit in run_units if unit not in owner]
    if orphans:
        keys = [key for unit in orphans for key in run_units[unit]]
        raise OwedError(f"no shard ran {len(orphans)} stream group(s) of the run: {_by_group(keys)}")


def _check_selection(accounts: Sequence[ShardAccount]) -> None:
    """Questions left out by pytest's selection only when every shard ran under the same selection."""
    narrowed = [account for account in accounts if account.not_selected]
    if not narrowed:
        return
    for account in narrowed:
        if not account.selection:
            raise OwedError(
                f"{account.name} records {len(account.not_selected)} questions as not selected but no selection: "
                f"{_by_group(account.not_selected)}"
            )
    for account in accounts:
        other = next((found for found in accounts if found.selection != account.selection), None)
        if other is not None and account.not_selected:
            raise OwedError(
                f"{account.name} ran with another selection ({describe_selection(account.selection)}) than "
                f"{other.name} ({describe_selection(other.selection)}): {len(account.not_selected)} questions of its "
                f"stream groups were not run: {_by_group(account.not_selected)}; rerun it as its siblings ran"
            )


def _results_of(account: ShardAccount, owed: set[ItemKey], seen: dict[ItemKey, str]) -> set[ItemKey]:
    """The keys of the shard's results: each once in the run, each of this shard's groups."""
    stray: list[ItemKey] = []
    twice: list[ItemKey] = []
    found: set[ItemKey] = set()
    for key in account.results:
        if key in seen:
            twice.append(key)
        elif key not in owed:
            stray.append(key)
        seen.setdefault(key, account.name)
        found.add(key)
    if twice:
        owners = sorted({seen[key] for key in twice})
        raise OwedError(f"{account.name} has results already given ({', '.join(owners)}): {len(twice)} questions twice: {_by_group(twice)}")
    if stray:
        raise OwedError(
            f"{account.name} (shard {account.index}) has {len(stray)} results of stream groups it does not own: {_by_group(stray)}"
        )
    return found


def _check_owed(account: ShardAccount, run_units: Mapping[str, Sequence[ItemKey]], owed: set[ItemKey], answered: set[ItemKey]) -> None:
    """With the questions it recorded as missing or not selected, the shard accounts for every question it owed."""
    accounted = set(answered)
    for key in [*account.missing, *account.not_selected]:
        if key in accounted:
            raise OwedError(f"{account.name} records question {'/'.join(map(str, key))} twice, or as both answered and not run")
        if key not in owed:
            raise OwedError(f"{account.name}: question {'/'.join(map(str, key))} is not one of its stream groups' here")
        accounted.add(key)
    lacking = [key for unit in sorted(account.units) for key in run_units[unit] if key not in accounted]
    if lacking:
        raise OwedError(
            f"{account.name} (shard {account.index}) lacks {len(lacking)} questions it owed, with no result and no record of "
            f"why: {_by_group(lacking)}; its artifact is incomplete or was edited: rerun the shard"
        )


def check_accounts(
    accounts: Sequence[ShardAccount], run_units: Mapping[str, Sequence[ItemKey]], expected: Mapping[str, int] | None = None
) -> None:
    """Refuse (:class:`OwedError`) shards that do not account for every question of the run exactly once.

    ``run_units``: every stream group of the run and its item keys, as the fan-in computes them from the data;
    ``expected``: the split of a run partitioned by estimated cost, recomputed here (``None`` when the shards
    used measured durations, which the fan-in does not have: then their common split is checked for coverage).
    """
    _check_partition(accounts, expected)
    _check_groups(accounts, run_units)
    _check_selection(accounts)
    owed = [{key for unit in account.units for key in run_units[unit]} for account in accounts]
    seen: dict[ItemKey, str] = {}
    # Every shard's results first: a result in the wrong shard is named where it is, not only where it is lacking.
    answered = [_results_of(account, owes, seen) for account, owes in zip(accounts, owed, strict=True)]
    for account, owes, found in zip(accounts, owed, answered, strict=True):
        _check_owed(account, run_units, owes, found)
