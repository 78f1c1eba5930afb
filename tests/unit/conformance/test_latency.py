from __future__ import annotations

import pytest

from pytest_lens.conformance.latency import ALL_METHODS, ceiling_for, latency_stats, over_ceiling, parse_ceilings


def test_ceilings_parse_per_method_and_for_all() -> None:
    assert parse_ceilings(["0.5", "search=0.2,ingest=1"]) == {ALL_METHODS: 0.5, "search": 0.2, "ingest": 1.0}
    assert ceiling_for({"search": 0.2}, "search") == 0.2
    assert ceiling_for({"search": 0.2}, "ingest") == 1.0  # the default
    assert ceiling_for({ALL_METHODS: 3.0}, "ingest") == 3.0


@pytest.mark.parametrize(
    ("entry", "message"), [("fast", "expected SECONDS"), ("search=0", "positive"), ("=1", "empty method"), ("nan", "positive")]
)
def test_bad_ceilings_say_what_is_wrong(entry: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_ceilings([entry])


def test_stats_use_nearest_rank_percentiles() -> None:
    (stat,) = latency_stats({"search": [float(i) for i in range(1, 101)], "never": []})
    assert (stat.method, stat.calls, stat.p50, stat.p95, stat.max) == ("search", 100, 50.0, 95.0, 100.0)


def test_a_method_is_over_its_ceiling_when_its_p95_is() -> None:
    stats = latency_stats({"search": [0.01] * 94 + [0.5] * 6, "ingest": [0.01] * 96 + [0.5] * 4})
    (line,) = over_ceiling(stats, {ALL_METHODS: 0.1})
    assert line.startswith("search() p95 500.0 ms exceeds the ceiling of 100 ms (100 calls")
