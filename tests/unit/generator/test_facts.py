from __future__ import annotations

from datetime import date

from pytest_lens.generator.facts import date_fact, reading_fact, reading_text, value_fact
from pytest_lens.generator.spec import SeriesSpec
from pytest_lens.scoring.metrics import fact_matched
from pytest_lens.text import normalize

LATENCY = SeriesSpec("geo-lookup", "p99 latency", 180, "ms")
RATE = SeriesSpec("checkout", "error rate", 0.12, "%", decimals=2)


def test_a_reading_is_printed_the_way_its_key_fact_quotes_it() -> None:
    assert reading_text(LATENCY, "1450") == "p99 latency 1450 ms"
    assert reading_text(RATE, "2.40") == "error rate 2.40%"
    line = normalize("- geo-lookup: p99 latency 1450 ms | timeouts 3")
    assert fact_matched(reading_fact(LATENCY, "1450"), line)


def test_reading_aliases_accept_other_number_and_phrase_forms() -> None:
    fact = reading_fact(LATENCY, "1450")
    for answer in ("the p99 latency reached 1,450 ms", "p99 latency of 1450ms", "p99 latency rose to 1450 milliseconds"):
        assert fact_matched(fact, normalize(answer)), answer
    assert not fact_matched(fact, normalize("p99 latency 145 ms"))
    assert fact_matched(reading_fact(RATE, "2.40"), normalize("an error rate of 2.4%"))


def test_a_value_fact_is_the_bare_recorded_value() -> None:
    fact = value_fact(LATENCY, "182")
    assert fact.fact == "182 ms"
    assert fact_matched(fact, normalize("It recorded 182 milliseconds."))
    assert not fact_matched(fact, normalize("It recorded 1820 ms."))


def test_date_aliases_avoid_prefix_matches() -> None:
    assert date_fact(date(2025, 3, 8)).patterns == ("2025-03-08", "March 8", "Mar 8")
    first = date_fact(date(2025, 3, 1))
    assert first.aliases == ("March 1st", "Mar 1st")
    assert not fact_matched(first, normalize("it started on March 14"))
    assert fact_matched(first, normalize("report of 2025-03-01"))
