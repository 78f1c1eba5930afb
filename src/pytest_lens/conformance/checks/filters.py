"""``filters.fields`` and ``filters.date_range``: declared filters narrow search results as their types say.

Filter fields are matched against the ``meta`` given at ingest under the same
name (the only per-episode data an adapter is handed besides text and
timestamp). Matching is equality by type: strings and enums exactly (case
counts), numbers and integers numerically (``2 == 2.0``), booleans as booleans,
dates as ISO ``YYYY-MM-DD`` strings. An episode without the field matches no
value. The date range (``supports_date_range``) takes ``start_date`` and/or
``end_date`` as ISO dates and keeps episodes whose timestamp's date, as written
in the timestamp, lies within them, both ends included.

A filtered search must return only matching episodes (synthetic refs are not
judged), and must not drop a matching episode that the same search without the
filter returned: the corpus is never larger than ``max_results_per_search``, so
nothing is cut off by the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from hypothesis import strategies as st

from pytest_lens.conformance.checks.search import describe_call
from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.samples import SampleEpisode, abbreviate, show_ids
from pytest_lens.conformance.strategies import MARKER_WORD, marked_prose, scope_ids, simple_id, simple_timestamp
from pytest_lens.conformance.subject import Subject
from pytest_lens.contract.adapter import CapabilityManifest, FilterField

__all__ = ["FILTERS_DATE_RANGE", "FILTERS_FIELDS", "matches"]

MAX_CORPUS = 12
_MISSING = object()
_STRING_VALUES = ("north", "south", "North", "east west", "ünïcode", "1")
_DATES = st.dates(date(2020, 1, 1), date(2020, 1, 8)).map(date.isoformat)


def _values(field: FilterField) -> st.SearchStrategy[Any]:
    kind = field.field_type
    if kind == "enum":
        return st.sampled_from(list(field.enum_values or ["?"]))
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(-2, 2)
    if kind == "number":
        return st.one_of(st.integers(-2, 2), st.sampled_from([0.5, 1.0, -1.5]))
    if kind == "date":
        return _DATES
    return st.sampled_from(_STRING_VALUES)


def matches(field_type: str, stored: Any, wanted: Any) -> bool:
    """Whether an episode whose meta holds ``stored`` matches the filter value ``wanted``."""
    if stored is _MISSING:
        return False
    if field_type == "boolean":
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if field_type in ("number", "integer"):
        numeric = (int, float)
        return not isinstance(stored, bool) and isinstance(stored, numeric) and not isinstance(wanted, bool) and stored == wanted
    return isinstance(stored, str) and isinstance(wanted, str) and stored == wanted


@dataclass(frozen=True)
class FieldExample:
    """Episodes with values for the declared filter fields, then one filtered search."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    field: str
    value: Any


def _field_examples(manifest: CapabilityManifest) -> st.SearchStrategy[FieldExample]:
    fields = manifest.filter_fields
    size = min(manifest.max_results_per_search, MAX_CORPUS)

    @st.composite
    def meta(draw: st.DrawFn) -> dict[str, Any]:
        return {field.name: draw(_values(field)) for field in fields if draw(st.integers(0, 4))}  # the field is absent 1 time in 5

    @st.composite
    def build(draw: st.DrawFn) -> FieldExample:
        count = draw(st.integers(1, size))
        episodes = tuple(SampleEpisode(simple_id(i), simple_timestamp(i), draw(marked_prose(8)), draw(meta())) for i in range(count))
        field = draw(st.sampled_from(fields))
        present: list[Any] = [e.meta[field.name] for e in episodes if field.name in e.meta]
        reuse: int = draw(st.integers(0, 3))  # mostly a value some episode holds, sometimes any value
        value: Any = draw(st.sampled_from(present)) if present and reuse else draw(_values(field))
        return FieldExample(draw(scope_ids()), episodes, field.name, value)

    return build()


def _judge(
    subject: Subject, context: ClauseContext, filters: dict[str, Any], matching: set[str], describe: dict[str, str], what: str
) -> None:
    limit = context.max_results
    unfiltered = subject.search(MARKER_WORD, None, limit)
    filtered = subject.search(MARKER_WORD, filters, limit)
    synthetic = set(subject.synthetic_refs())
    call = describe_call(MARKER_WORD, filters, limit)
    for result in filtered:
        if result.ref_id not in matching and result.ref_id not in synthetic:
            shown = describe.get(result.ref_id, "was never ingested")
            raise ClauseViolation(f"{call} returned {abbreviate(result.ref_id)}, whose {what} {shown}: it does not match the filter")
    kept = {result.ref_id for result in filtered}
    dropped = [r.ref_id for r in unfiltered if r.ref_id in matching and r.ref_id not in kept]
    if dropped:
        raise ClauseViolation(
            f"{call} dropped {show_ids(dropped)} ({what} {describe[dropped[0]]}), which match the filter and which the same search "
            f"without filters returned"
        )


def _check_field(context: ClauseContext, example: FieldExample) -> None:
    field = next(f for f in context.manifest.filter_fields if f.name == example.field)
    matching = {e.episode_id for e in example.episodes if matches(field.field_type, e.meta.get(field.name, _MISSING), example.value)}
    describe = {e.episode_id: (f"is {abbreviate(e.meta[field.name])}" if field.name in e.meta else "is absent") for e in example.episodes}
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        _judge(subject, context, {field.name: example.value}, matching, describe, f"{field.name} ({field.field_type})")


FILTERS_FIELDS = Clause(
    id="filters.fields",
    contract=(
        "every declared filter field narrows search results as its type says: only episodes whose ingest meta holds an equal "
        "value are returned, and none of those the unfiltered search found is dropped"
    ),
    method="search",
    examples=_field_examples,
    check=_check_field,
    applies=lambda manifest: None if manifest.filter_fields else "the manifest declares no filter_fields",
)


@dataclass(frozen=True)
class DateRangeExample:
    """Episodes on nearby dates, then a search with ``start_date`` and/or ``end_date``."""

    scope_id: str
    episodes: tuple[SampleEpisode, ...]
    start_date: str | None
    end_date: str | None


_NEARBY = st.datetimes(datetime(2020, 1, 1), datetime(2020, 1, 8, 23, 59, 59))


def _date_range_examples(manifest: CapabilityManifest) -> st.SearchStrategy[DateRangeExample]:
    size = min(manifest.max_results_per_search, MAX_CORPUS)

    @st.composite
    def build(draw: st.DrawFn) -> DateRangeExample:
        count = draw(st.integers(1, size))
        episodes = tuple(SampleEpisode(simple_id(i), draw(_NEARBY).isoformat(), draw(marked_prose(8))) for i in range(count))
        start, end = draw(st.one_of(st.none(), _DATES)), draw(st.one_of(st.none(), _DATES))
        if start is None and end is None:
            start = draw(_DATES)
        return DateRangeExample(draw(scope_ids()), episodes, start, end)

    return build()


def _check_date_range(context: ClauseContext, example: DateRangeExample) -> None:
    filters = {key: value for key, value in (("start_date", example.start_date), ("end_date", example.end_date)) if value is not None}

    def inside(timestamp: str) -> bool:
        day = timestamp[:10]
        return (example.start_date is None or day >= example.start_date) and (example.end_date is None or day <= example.end_date)

    matching = {e.episode_id for e in example.episodes if inside(e.timestamp)}
    describe = {e.episode_id: f"is {e.timestamp!r}" for e in example.episodes}
    with context.fresh() as subject:
        subject.load(example.scope_id, example.episodes)
        _judge(subject, context, filters, matching, describe, "timestamp")


FILTERS_DATE_RANGE = Clause(
    id="filters.date_range",
    contract=(
        "with supports_date_range, filters start_date/end_date (ISO dates, both ends included) keep exactly the episodes whose "
        "timestamp falls on those days: none outside, none the unfiltered search found dropped"
    ),
    method="search",
    examples=_date_range_examples,
    check=_check_date_range,
    applies=lambda manifest: None if manifest.supports_date_range else "the manifest does not declare supports_date_range",
)
