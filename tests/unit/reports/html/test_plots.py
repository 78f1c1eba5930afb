"""The report's figures as Vega-Lite specs: the numbers each carries, their order and colours, and that user text
stays data. That Vega draws them (every kind, without a console error) is tested in a real browser:
tests/integration/test_html_browser.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pytest_lens.reports.html import plots
from pytest_lens.reports.html.plots import PALETTE, Interval, Series


def _values(spec: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = spec["data"]["values"]
    return rows


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _program(spec: dict[str, Any]) -> set[str]:
    """Every field name and expression the spec computes with (everything but its data, titles, sort orders and domains)."""
    return {
        value
        for key, value in _walk({k: v for k, v in spec.items() if k != "data"})
        if key in ("field", "filter", "test", "expr", "calculate") and isinstance(value, str)
    }


def test_headline_carries_each_adapter_s_scores_with_their_intervals() -> None:
    spec = plots.headline_plot(
        ["bm25", "null"],
        {"bm25": Interval(0.8, 0.7, 0.9, 8), "null": Interval(0.0, 0.0, 0.0, 8)},
        {"bm25": {"evidence_grounding": Interval(1.0)}, "null": {"evidence_grounding": Interval(0.0)}},
    )
    rows = {(row["adapter"], row["label"]): row for row in _values(spec)}
    assert rows["bm25", "composite"] == {
        "label": "composite",
        "value": 0.8,
        "low": 0.7,
        "high": 0.9,
        "n": 8,
        "adapter": "bm25",
        "main": True,
        "text": "0.800",
    }
    # Several adapters: only the composites are labelled with their value; a metric without a CI has no whisker.
    assert rows["bm25", "evidence_grounding"]["text"] == "" and rows["bm25", "evidence_grounding"]["low"] is None
    assert spec["encoding"]["y"]["sort"] == ["composite", "evidence_grounding"]
    colour = spec["encoding"]["color"]
    assert colour["scale"] == {"domain": ["bm25", "null"], "range": list(PALETTE[:2])} and "legend" not in colour
    assert spec["layer"][1]["encoding"]["x"]["scale"]["domain"] == [0.0, 1.08]
    wide = plots.headline_plot(["bm25"], {"bm25": Interval(0.5)}, {"bm25": {"advantage": Interval(-0.4, -0.6, -0.2)}})
    assert wide["layer"][1]["encoding"]["x"]["scale"]["domain"] == [-0.6, 1.08]  # a negative metric stays on the plot
    single = plots.headline_plot(["bm25"], {"bm25": Interval(0.8)}, {"bm25": {"evidence_grounding": Interval(1.0)}})
    assert [row["text"] for row in _values(single)] == ["0.800", "1.000"] and single["encoding"]["color"]["legend"] is None


def test_same_numbers_same_spec_and_an_empty_cell_is_a_dash() -> None:
    grid = [[0.5, None], [1.0, 0.0]]
    first = plots.heatmap("types", ["a", "b"], ["bm25", "null"], grid, "by type")
    assert json.dumps(first) == json.dumps(plots.heatmap("types", ["a", "b"], ["bm25", "null"], grid, "by type"))
    assert [(row["row"], row["column"], row["text"]) for row in _values(first)] == [
        ("a", "bm25", "0.50"),
        ("a", "null", "-"),
        ("b", "bm25", "1.00"),
        ("b", "null", "0.00"),
    ]
    assert first["encoding"]["y"]["sort"] == ["a", "b"] and first["encoding"]["x"]["sort"] == ["bm25", "null"]
    missing, present, _ = first["layer"]
    assert missing["mark"]["color"] == plots.MISSING_CELL and present["encoding"]["color"]["scale"]["domain"] == [0, 1]


def test_lines_skip_what_was_not_measured_and_keep_the_budget_order() -> None:
    stream = plots.stream_plot("stream", [Series("bm25", [(8.0, Interval(0.5, n=2)), (12.0, None), (16.0, Interval(1.0, n=1))])], "t", "x")
    assert [(row["x"], row["value"], row["n"]) for row in _values(stream)] == [(8.0, 0.5, 2), (16.0, 1.0, 1)]
    assert stream["encoding"]["color"]["legend"] is None  # one adapter: no legend needed
    budgets = plots.budget_plot(["4k", "16k"], [Series("bm25", [(0.0, Interval(0.4, 0.3, 0.5)), (1.0, Interval(0.8))]), Series("null", [])])
    assert [(row["adapter"], row["budget"], row["low"]) for row in _values(budgets)] == [("bm25", "4k", 0.3), ("bm25", "16k", None)]
    assert budgets["encoding"]["x"]["sort"] == ["4k", "16k"] and budgets["encoding"]["color"]["scale"]["domain"] == ["bm25", "null"]


def test_forest_colours_only_significant_differences() -> None:
    deltas = [Interval(-1.0, -1.0, -1.0), Interval(0.2, 0.1, 0.3), Interval(-0.1, -0.3, 0.1), Interval(0.05)]
    spec = plots.forest_plot("pairs", ["fall", "rise", "spans zero", "no interval"], deltas, "paired", "difference")
    assert [(row["label"], row["tone"], row["text"]) for row in _values(spec)] == [
        ("fall", "fall", "-1.000"),
        ("rise", "rise", "+0.200"),
        ("spans zero", "not significant", "-0.100"),
        ("no interval", "not significant", "+0.050"),
    ]
    zero, whiskers, *_ = spec["layer"]
    assert zero["encoding"]["x"]["datum"] == 0
    assert whiskers["encoding"]["x"]["scale"]["domain"] == [-1.15, 1.15]  # symmetric around zero, a margin past the largest


def test_user_text_is_data_never_a_field_or_an_expression() -> None:
    evil = "x', datum.value) || alert(1) || ('"
    specs = [
        plots.headline_plot([evil, "null"], {evil: Interval(0.5, 0.4, 0.6), "null": Interval(0.0)}, {evil: {evil: Interval(0.1)}}),
        plots.heatmap("types", [evil], [evil], [[0.5]], evil),
        plots.stream_plot("stream", [Series(evil, [(1.0, Interval(0.5, n=1))])], evil, evil),
        plots.budget_plot([evil, "16k"], [Series(evil, [(0.0, Interval(0.5)), (1.0, Interval(0.6))])]),
        plots.forest_plot("pairs", [evil], [Interval(0.1, 0.0, 0.2)], evil, evil),
    ]
    for spec in specs:
        assert any(evil in json.dumps(row) for row in _values(spec))
        assert not any(evil in text for text in _program(spec)), _program(spec)
