"""The report's figures as Vega-Lite specifications, drawn by the browser when the page is opened.

Each function takes plain numbers and returns one Vega-Lite spec (a JSON-ready dict with its data inline).
The page carries the specs as JSON and the Vega and Vega-Lite libraries themselves (vendored under
``assets/vendor``, BSD-3-Clause), and draws every figure as SVG when it is viewed: the report stays one
file that fetches nothing, and writing it imports no plotting library. (matplotlib drew these figures
before; importing it and drawing four figures cost 0.7-1.0 s of CPU, 11-17% of the run it reported.)

Specs are data: user text (adapter names, question types, scope ids) only ever appears as data values
and titles, never as a field name or an expression, so no label can change what a figure computes.
The same numbers give the same spec, key for key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Interval",
    "Series",
    "budget_plot",
    "forest_plot",
    "headline_plot",
    "heatmap",
    "stream_plot",
]

Spec = dict[str, Any]

#: Colour-blind-safe categorical colours (Okabe & Ito), one per adapter.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
#: Significant falls, significant rises, and the rest, in a forest plot.
TONES = {"fall": "#D55E00", "rise": "#0072B2", "not significant": "#666666"}
MISSING_CELL = "#dddddd"
#: What every figure shares: the page's fonts, no frame around the plot area, titles on the left.
CONFIG: Spec = {
    "font": "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif",
    "view": {"stroke": None},
    "axis": {"labelFontSize": 11, "titleFontSize": 11, "titleFontWeight": "normal", "gridOpacity": 0.5},
    "legend": {"labelFontSize": 11, "title": None, "orient": "bottom"},
    "title": {"anchor": "start", "fontSize": 13, "offset": 8},
}


@dataclass(frozen=True)
class Interval:
    """A value with an optional confidence interval and its count."""

    value: float
    low: float | None = None
    high: float | None = None
    n: int | None = None


@dataclass(frozen=True)
class Series:
    """One line of a line plot: a label and its (x, y) points; ``y`` may be ``None`` where nothing was measured."""

    label: str
    points: Sequence[tuple[float, Interval | None]]


def colour(index: int) -> str:
    """The palette colour of the ``index``-th adapter."""
    return PALETTE[index % len(PALETTE)]


def _spec(title: str, data: list[dict[str, Any]], **body: Any) -> Spec:
    return {"title": title, "config": CONFIG, "data": {"values": data}, **body}


def _adapter_colour(adapters: Sequence[str]) -> Spec:
    """A colour channel mapping each adapter to its palette colour, in the given order; a legend only for several."""
    names = list(dict.fromkeys(adapters))
    channel: Spec = {
        "field": "adapter",
        "type": "nominal",
        "scale": {"domain": names, "range": [colour(i) for i in range(len(names))]},
    }
    if len(names) < 2:
        channel["legend"] = None
    return channel


def _row(label: str, estimate: Interval, **extra: Any) -> dict[str, Any]:
    return {"label": label, "value": estimate.value, "low": estimate.low, "high": estimate.high, "n": estimate.n, **extra}


def _tooltip(*fields: tuple[str, str]) -> list[Spec]:
    return [{"field": name, "title": title, **({"format": ".3f"} if name in ("value", "low", "high") else {})} for name, title in fields]


#: A tooltip's interval fields.
_CI = (("low", "low"), ("high", "high"))
#: Heatmap cells whose label is white: the colour scale's dark ends (deep red, deep green).
_DARK_CELL = "datum.value !== null && (datum.value < 0.2 || datum.value > 0.85)"
#: Whiskers only where an interval was computed.
_HAS_INTERVAL = {"filter": "isValid(datum.low) && isValid(datum.high)"}


def headline_plot(
    adapters: Sequence[str],
    headline: Mapping[str, Interval],
    metrics: Mapping[str, Mapping[str, Interval]],
    *,
    score: str = "composite",
) -> Spec:
    """One row per score (the run's headline ``score`` first, then each metric), one dot per adapter with its CI as a whisker."""
    names = [score, *dict.fromkeys(name for by_metric in metrics.values() for name in by_metric if name != score)]
    data = []
    for adapter in adapters:
        scores = {**metrics.get(adapter, {}), score: headline.get(adapter)}
        for name in names:
            estimate = scores.get(name)
            if estimate is not None:
                show = name == score or len(adapters) == 1
                data.append(_row(name, estimate, adapter=adapter, main=name == score, text=f"{estimate.value:.3f}" if show else ""))
    y = {"field": "label", "type": "nominal", "sort": names, "title": None}
    offset = {"field": "adapter", "type": "nominal", "sort": list(adapters)}
    # Scores lie in [0, 1]; a metric outside it (a differential metric can be negative) widens the axis.
    seen = [v for row in data for v in (row["value"], row["low"], row["high"]) if v is not None]
    x_scale = {"domain": [min([0.0, *seen]), max([1.08, *seen])], "nice": False}
    return _spec(
        f"headline ({score}) and metrics per adapter",
        data,
        width=600,
        height={"step": 14, "for": "offset"},
        encoding={"y": y, "yOffset": offset, "color": _adapter_colour(adapters)},
        layer=[
            {
                "transform": [_HAS_INTERVAL],
                "mark": {"type": "rule", "strokeWidth": 2, "opacity": 0.8},
                "encoding": {"x": {"field": "low", "type": "quantitative", "scale": x_scale}, "x2": {"field": "high"}},
            },
            {
                "mark": {"type": "point", "filled": True, "opacity": 1},
                "encoding": {
                    "x": {
                        "field": "value",
                        "type": "quantitative",
                        "scale": x_scale,
                        "title": "mean over questions; whiskers: 95% t interval",
                    },
                    "size": {"condition": {"test": "datum.main", "value": 90}, "value": 35},
                    "tooltip": _tooltip(("adapter", "adapter"), ("label", "score"), ("value", "mean"), *_CI, ("n", "n")),
                },
            },
            {
                "mark": {"type": "text", "align": "left", "dx": 7, "dy": -5, "fontSize": 10, "color": "#333333"},
                "encoding": {"x": {"field": "value", "type": "quantitative", "scale": x_scale}, "text": {"field": "text"}},
            },
        ],
    )


def heatmap(name: str, rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float | None]], title: str) -> Spec:
    """A grid of scores in [0, 1] (rows x columns), each cell labelled with its value; empty cells are grey with a dash."""
    data = [
        {"row": row, "column": column, "value": value, "text": "-" if value is None else f"{value:.2f}"}
        for row, cells in zip(rows, values, strict=True)
        for column, value in zip(columns, cells, strict=True)
    ]
    longest = max((len(c) for c in columns), default=4)
    cell = {"type": "rect", "stroke": "white", "strokeWidth": 1}
    return _spec(
        title,
        data,
        name=name,
        width={"step": max(56, min(140, 8 * longest))},
        height={"step": 24},
        encoding={
            "x": {
                "field": "column",
                "type": "nominal",
                "sort": list(columns),
                "title": None,
                "axis": {"labelAngle": -30 if len(columns) > 2 and longest > 8 else 0, "ticks": False, "domain": False},
            },
            "y": {"field": "row", "type": "nominal", "sort": list(rows), "title": None, "axis": {"ticks": False, "domain": False}},
        },
        layer=[
            {"transform": [{"filter": "datum.value === null"}], "mark": {**cell, "color": MISSING_CELL}},
            {
                "transform": [{"filter": "datum.value !== null"}],
                "mark": cell,
                "encoding": {
                    "color": {
                        "field": "value",
                        "type": "quantitative",
                        "scale": {"domain": [0, 1], "scheme": "redyellowgreen"},
                        "legend": {"orient": "right", "gradientLength": 80},
                    },
                    "tooltip": _tooltip(("row", "row"), ("column", "adapter"), ("value", "composite")),
                },
            },
            {
                "mark": {"type": "text", "fontSize": 11},
                "encoding": {
                    "text": {"field": "text"},
                    "color": {"condition": {"test": _DARK_CELL, "value": "white"}, "value": "#222222"},
                },
            },
        ],
    )


def _x_y_lines(series: Sequence[Series]) -> list[dict[str, Any]]:
    return [_row(f"{x:g}", point, adapter=line.label, x=x) for line in series for x, point in line.points if point is not None]


def stream_plot(name: str, series: Sequence[Series], title: str, xlabel: str) -> Spec:
    """Each adapter's mean through the stream, one point per checkpoint (point size: questions measured there)."""
    x = {"field": "x", "type": "quantitative", "title": xlabel}
    y = {"field": "value", "type": "quantitative", "scale": {"domain": [0, 1]}, "title": None}
    return _spec(
        title,
        _x_y_lines(series),
        name=name,
        width=600,
        height=200,
        encoding={"x": x, "y": y, "color": _adapter_colour([line.label for line in series])},
        layer=[
            {"mark": {"type": "line", "strokeWidth": 1.5}},
            {
                "mark": {"type": "point", "filled": True, "opacity": 1},
                "encoding": {
                    "size": {"field": "n", "type": "quantitative", "title": "questions", "legend": None},
                    "tooltip": _tooltip(("adapter", "adapter"), ("x", xlabel), ("value", "mean"), ("n", "questions")),
                },
            },
        ],
    )


def budget_plot(budgets: Sequence[str], series: Sequence[Series]) -> Spec:
    """Composite per budget (x: the budgets in order of their result-token cap), one line per adapter, CIs as whiskers."""
    data = [
        _row(budgets[int(x)], point, adapter=line.label, budget=budgets[int(x)])
        for line in series
        for x, point in line.points
        if point is not None
    ]
    adapters = [line.label for line in series]
    y_scale = {"domain": [0, 1]}
    return _spec(
        "composite across budgets",
        data,
        width={"step": 28, "for": "offset"},
        height=220,
        encoding={
            "x": {"field": "budget", "type": "nominal", "sort": list(budgets), "title": "budget", "axis": {"labelAngle": 0}},
            "xOffset": {"field": "adapter", "type": "nominal", "sort": adapters, "scale": {"paddingOuter": 1.5}},
            "color": _adapter_colour(adapters) | {"legend": {}},
        },
        layer=[
            {
                "transform": [_HAS_INTERVAL],
                "mark": {"type": "rule", "strokeWidth": 2, "opacity": 0.8},
                "encoding": {"y": {"field": "low", "type": "quantitative", "scale": y_scale}, "y2": {"field": "high"}},
            },
            {
                "mark": {"type": "line", "point": {"filled": True, "size": 40}},
                "encoding": {
                    "y": {"field": "value", "type": "quantitative", "scale": y_scale, "title": "composite (95% CI)"},
                    "tooltip": _tooltip(("adapter", "adapter"), ("budget", "budget"), ("value", "composite"), *_CI),
                },
            },
        ],
    )


def _tone(delta: Interval) -> str:
    significant = delta.low is not None and delta.high is not None and (delta.high < 0 or delta.low > 0)
    if not significant:
        return "not significant"
    return "fall" if delta.value < 0 else "rise"


def forest_plot(name: str, labels: Sequence[str], deltas: Sequence[Interval], title: str, xlabel: str) -> Spec:
    """Differences with their CIs around a zero line, one row each (significant falls red, rises blue, else grey)."""
    data = [_row(label, delta, tone=_tone(delta), text=f"{delta.value:+.3f}") for label, delta in zip(labels, deltas, strict=True)]
    limit = max([0.05, *(abs(v) for d in deltas for v in (d.value, d.low, d.high) if v is not None)]) * 1.15
    x_scale = {"domain": [-limit, limit], "nice": False}
    tone = {"field": "tone", "type": "nominal", "scale": {"domain": list(TONES), "range": list(TONES.values())}, "legend": None}
    y = {"field": "label", "type": "nominal", "sort": list(labels), "title": None}
    rows: list[Spec] = [
        {
            "transform": [_HAS_INTERVAL],
            "mark": {"type": "rule", "strokeWidth": 2, "opacity": 0.8},
            "encoding": {"x": {"field": "low", "type": "quantitative", "scale": x_scale}, "x2": {"field": "high"}},
        },
        {
            "mark": {"type": "point", "filled": True, "size": 60, "opacity": 1},
            "encoding": {
                "x": {"field": "value", "type": "quantitative", "scale": x_scale, "title": xlabel},
                "tooltip": _tooltip(("label", "pair"), ("value", "difference"), *_CI, ("tone", "")),
            },
        },
        {
            "mark": {"type": "text", "dy": -10, "fontSize": 10},
            "encoding": {"x": {"field": "value", "type": "quantitative", "scale": x_scale}, "text": {"field": "text"}},
        },
    ]
    for layer in rows:
        layer["encoding"] |= {"y": y, "color": tone}
    # The zero line spans the plot: a layer of its own with no row channel.
    zero = {
        "mark": {"type": "rule", "color": "black", "strokeWidth": 0.8},
        "encoding": {"x": {"datum": 0, "type": "quantitative", "scale": x_scale}},
    }
    return _spec(title, data, name=name, width=560, height={"step": 30}, layer=[zero, *rows])
