"""Temporal intent in a query and how close an event is to it (Cognis §5.1 and §5.5).

A query has temporal intent when it names a day ("on January 20th",
"2024-02-01") or points at the recent past ("current", "latest", "last week").
Relative references are resolved against ``now``, which for a replayed stream
is the newest episode's timestamp, so scores are deterministic. A "when did..."
question has intent but no reference point, and so gets no boost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["TemporalReference", "parse_timestamp", "temporal_reference", "temporal_score"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", re.IGNORECASE)
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
_LAST_N = re.compile(r"\b(?:last|past|previous)\s+(\d{1,3})\s+(day|week|month)s?\b", re.IGNORECASE)
_RELATIVE: list[tuple[re.Pattern[str], float, float]] = [
    # (pattern, days before now of the reference point, window in days)
    (re.compile(r"\btoday\b", re.IGNORECASE), 0, 1),
    (re.compile(r"\byesterday\b", re.IGNORECASE), 1, 1),
    (re.compile(r"\b(?:last|past|previous|this)\s+week\b", re.IGNORECASE), 0, 7),
    (re.compile(r"\b(?:last|past|previous|this)\s+month\b", re.IGNORECASE), 0, 30),
    (re.compile(r"\b(?:current(?:ly)?|latest|recent(?:ly)?|right now|lately|at present)\b", re.IGNORECASE), 0, 7),
]
_UNITS = {"day": 1, "week": 7, "month": 30}


@dataclass(frozen=True)
class TemporalReference:
    """The span a query points at (a whole day, or an instant), and how many days outside it still count as close."""

    start: datetime
    end: datetime
    window_days: float

    def distance_days(self, moment: datetime) -> float:
        """Days between ``moment`` and the span (0 inside it)."""
        if moment < self.start:
            return (self.start - moment).total_seconds() / 86_400
        if moment > self.end:
            return (moment - self.end).total_seconds() / 86_400
        return 0.0


def parse_timestamp(value: str) -> datetime | None:
    """An ISO 8601 timestamp as a naive UTC datetime (``None`` if it is not one)."""
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def temporal_reference(query: str, now: datetime | None) -> TemporalReference | None:
    """The query's temporal reference: a named day (closeness fades over one day), or a relative one resolved against ``now``."""
    day = _explicit_date(query, now)
    if day is not None:
        return TemporalReference(day, day + timedelta(days=1), 1.0)
    if now is None:
        return None
    last_n = _LAST_N.search(query)
    if last_n:
        return TemporalReference(now, now, max(1.0, float(int(last_n.group(1)) * _UNITS[last_n.group(2).lower()])))
    for pattern, days_before, window in _RELATIVE:
        if pattern.search(query):
            moment = now - timedelta(days=days_before)
            return TemporalReference(moment, moment, window)
    return None


def temporal_score(event: datetime | None, reference: TemporalReference) -> float:
    """``max(0.1, 1 - distance / window)`` (Cognis eq. 3); an undated event scores the floor."""
    if event is None:
        return 0.1
    return max(0.1, 1.0 - reference.distance_days(event) / reference.window_days)


def _explicit_date(query: str, now: datetime | None) -> datetime | None:
    iso = _ISO_DATE.search(query)
    if iso:
        return _date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    for pattern, month_group, day_group in ((_MONTH_DAY, 1, 2), (_DAY_MONTH, 2, 1)):
        match = pattern.search(query)
        if match:
            month, day = _MONTHS[match.group(month_group).lower()], int(match.group(day_group))
            if match.group(3):
                return _date(int(match.group(3)), month, day)
            # No year: the most recent such day not after now (or this calendar year without a now).
            year = now.year if now is not None else datetime.now(UTC).year
            candidate = _date(year, month, day)
            if candidate is not None and now is not None and candidate > now:
                candidate = _date(year - 1, month, day)
            return candidate
    return None


def _date(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day)  # the start of the named day
    except ValueError:
        return None
