from __future__ import annotations

from datetime import datetime

import pytest

from lens_fixtures.adapters.temporal import parse_timestamp, temporal_reference, temporal_score

NOW = datetime(2024, 2, 13, 10, 30)


@pytest.mark.parametrize(
    ("query", "start"),
    [
        ("What were the key operational events on January 20th?", datetime(2024, 1, 20)),
        ("What was the CDN hit rate reported on February 1st?", datetime(2024, 2, 1)),
        ("Anything on 3 Feb?", datetime(2024, 2, 3)),
        ("What happened on 2023-12-31?", datetime(2023, 12, 31)),
        ("Incidents on March 5, 2022", datetime(2022, 3, 5)),
        ("What happened on December 24th?", datetime(2023, 12, 24)),  # no year: the last such day before now
    ],
)
def test_named_days(query: str, start: datetime) -> None:
    reference = temporal_reference(query, NOW)
    assert reference is not None
    assert (reference.start, reference.end.date().toordinal() - reference.start.date().toordinal()) == (start, 1)
    assert reference.window_days == 1


@pytest.mark.parametrize(
    ("query", "days_before", "window"),
    [
        ("What is the current impact on checkout?", 0, 7),
        ("Show the latest alerts", 0, 7),
        ("What happened yesterday?", 1, 1),
        ("Errors over the last 3 days", 0, 3),
        ("Any incidents last month?", 0, 30),
    ],
)
def test_relative_references_resolve_against_the_stream_now(query: str, days_before: int, window: float) -> None:
    reference = temporal_reference(query, NOW)
    assert reference is not None
    assert (NOW - reference.start).days == days_before
    assert reference.window_days == window


@pytest.mark.parametrize(
    "query", ["When did geo-lookup latency first start degrading?", "Is there evidence of DNS failure?", "Based on the logs so far?"]
)
def test_no_reference_point_no_boost(query: str) -> None:
    assert temporal_reference(query, NOW) is None


def test_relative_terms_need_a_now() -> None:
    assert temporal_reference("what is current?", None) is None


def test_scores_fade_linearly_outside_the_span_to_a_floor() -> None:
    reference = temporal_reference("events on January 20th", NOW)
    assert reference is not None
    assert temporal_score(datetime(2024, 1, 20, 10), reference) == 1.0
    assert temporal_score(datetime(2024, 1, 21, 12), reference) == pytest.approx(0.5)
    assert temporal_score(datetime(2024, 1, 19, 12), reference) == pytest.approx(0.5)
    assert temporal_score(datetime(2024, 1, 25), reference) == 0.1
    assert temporal_score(None, reference) == 0.1


def test_timestamps_parse_to_naive_utc() -> None:
    assert parse_timestamp("2024-01-15T10:00:00") == datetime(2024, 1, 15, 10)
    assert parse_timestamp("2024-01-15T10:00:00+02:00") == datetime(2024, 1, 15, 8)
    assert parse_timestamp("2024-01-15T10:00:00Z") == datetime(2024, 1, 15, 10)
    assert parse_timestamp("last tuesday") is None
