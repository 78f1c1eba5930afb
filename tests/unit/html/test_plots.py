from __future__ import annotations

import re

from pytest_lens.html import plots
from pytest_lens.html.plots import Interval, Series


def _ids(svg: str) -> set[str]:
    return set(re.findall(r' id="([^"]+)"', svg))


def test_headline_draws_each_adapter_with_its_interval() -> None:
    svg = plots.headline_plot(
        ["bm25", "null"],
        {"bm25": Interval(0.8, 0.7, 0.9, 8), "null": Interval(0.0, 0.0, 0.0, 8)},
        {"bm25": {"evidence_grounding": Interval(1.0)}, "null": {"evidence_grounding": Interval(0.0)}},
    )
    assert svg.startswith('<svg class="plot"') and "<?xml" not in svg and "<metadata>" not in svg
    # Text stays text (svg.fonttype none): labels are searchable and styled by the page.
    for label in ("composite", "evidence_grounding", "bm25", "null", "0.800"):
        assert f">{label}</text>" in svg


def test_same_numbers_same_bytes_and_ids_never_collide_across_figures() -> None:
    grid = [[0.5, None], [1.0, 0.0]]
    first = plots.heatmap("types", ["a", "b"], ["bm25", "null"], grid, "by type")
    assert first == plots.heatmap("types", ["a", "b"], ["bm25", "null"], grid, "by type")
    other = plots.heatmap("scopes", ["a", "b"], ["bm25", "null"], grid, "by scope")
    assert _ids(first) and not _ids(first) & _ids(other)
    # Every local reference (clip paths, markers) points at an id of its own figure.
    for svg in (first, other):
        assert set(re.findall(r'(?:url\(|href=")#([^")]+)', svg)) <= _ids(svg)
    assert ">0.50</text>" in first and ">-</text>" in first  # every cell labelled, the empty one with a dash


def test_lines_and_forest() -> None:
    stream = plots.stream_plot("stream", [Series("bm25", [(8.0, Interval(0.5, n=2)), (12.0, None), (16.0, Interval(1.0, n=1))])], "t", "x")
    assert ">bm25</text>" not in stream  # one adapter: no legend needed
    budgets = plots.budget_plot(["4k", "16k"], [Series("bm25", [(0.0, Interval(0.4, 0.3, 0.5)), (1.0, Interval(0.8))]), Series("null", [])])
    assert ">4k</text>" in budgets and ">null</text>" in budgets
    forest = plots.forest_plot("pairs", ["null − bm25"], [Interval(-1.0, -1.0, -1.0)], "paired", "difference")
    assert ">-1.000</text>" in forest and "#d55e00" in forest.lower()  # a significant fall is drawn in the fall colour
