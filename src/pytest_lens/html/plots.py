"""The report's figures, drawn by matplotlib and returned as inline SVG (no network, no files).

Each function takes plain numbers and returns one ``<svg>`` element as text. Figures are made with
:class:`matplotlib.figure.Figure` directly (no pyplot, so no global figure state), text stays text
(``svg.fonttype: none``: smaller, searchable, styled by the page's fonts), and every figure gets its own
hash salt so the ids of two inline SVGs never collide and the same data gives the same bytes.

Report generation is part of a test run's cost, so the figures are cheap: one axes each, margins sized
from the label lengths instead of a layout engine (which draws every figure twice), heatmaps as vector
cells rather than embedded raster images.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "Interval",
    "Series",
    "budget_plot",
    "forest_plot",
    "headline_plot",
    "heatmap",
    "stream_plot",
]

#: Colour-blind-safe categorical colours (Okabe & Ito), one per adapter.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
_XML_DECLARATION = re.compile(r"^<\?xml[^>]*>\s*(<!DOCTYPE[^>]*>\s*)?", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_PLAIN_ID = re.compile(r' id="(?![pm][0-9a-f]{10}")([^"]+)"')
#: Inches per character of a 9-point label (DejaVu Sans averages a little under 0.55 em).
_CHAR_WIDTH = 0.068
_LINE = 0.2


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


@contextmanager
def _figure(name: str, width: float, height: float, *, left_labels: Sequence[str] = (), bottom: float = 0.6) -> Iterator[Figure]:
    """A figure whose single axes leaves room for ``left_labels`` (tick labels) and a bottom axis label."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",
            "svg.hashsalt": f"lens-{name}",
            "font.family": "sans-serif",
            "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
            "font.size": 9.0,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.titlesize": 10.0,
            "axes.titleweight": "bold",
            # A fixed title height: nothing is drawn above our axes, and the automatic placement costs a
            # layout pass over every tick label of the figure on each draw.
            "axes.titley": 1.0,
        }
    ):
        left = 0.3 + _CHAR_WIDTH * max((len(label) for label in left_labels), default=4)
        figure = Figure(figsize=(width, height))
        figure.subplots_adjust(left=min(0.6, left / width), right=1 - 0.2 / width, top=1 - 0.35 / height, bottom=bottom / height)
        yield figure


def _svg(figure: Figure, name: str) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    # Inline in HTML: no XML declaration, and no RDF metadata block (licence and format URIs nobody reads).
    text = _METADATA.sub("", _XML_DECLARATION.sub("", buffer.getvalue()))
    # Element ids must be unique in the page: the hashed ones (clip paths, markers) are, thanks to the salt;
    # the structural ones ("patch_1", "xtick_1") repeat in every figure and nothing refers to them.
    text = _PLAIN_ID.sub(lambda match: f' id="{name}-{match.group(1)}"', text)
    # Drawn at its own size; CSS shrinks it to narrow pages (the viewBox keeps the aspect ratio).
    return text.replace("<svg ", '<svg class="plot" ', 1)


def _whiskers(ax: Axes, y: float, interval: Interval, colour_: str, *, horizontal: bool = True) -> None:
    if interval.low is not None and interval.high is not None:
        if horizontal:
            ax.hlines(y, interval.low, interval.high, color=colour_, linewidth=2.0, alpha=0.8)
        else:
            ax.vlines(y, interval.low, interval.high, color=colour_, linewidth=2.0, alpha=0.8)


def headline_plot(adapters: Sequence[str], composite: Mapping[str, Interval], metrics: Mapping[str, Mapping[str, Interval]]) -> str:
    """One row per score (the composite first, then each metric), one dot per adapter with its CI as a whisker."""
    names = ["composite", *dict.fromkeys(name for by_metric in metrics.values() for name in by_metric)]
    step = 0.8 / max(1, len(adapters))
    height = max(1.8, _LINE * len(names) * max(1.6, len(adapters)) + 0.9)
    with _figure("headline", 8.0, height, left_labels=names) as figure:
        ax = figure.subplots()
        for index, adapter in enumerate(adapters):
            scores = {"composite": composite.get(adapter), **metrics.get(adapter, {})}
            rows = [
                (name, estimate, len(names) - 1 - position + 0.4 - step * (index + 0.5))
                for position, name in enumerate(names)
                if (estimate := scores.get(name)) is not None
            ]
            # One artist per kind and adapter, not one per score: drawing time grows with the number of artists.
            whiskers = [(y, e.low, e.high) for _, e, y in rows if e.low is not None and e.high is not None]
            if whiskers:
                ys, lows, highs = zip(*whiskers, strict=True)
                ax.hlines(ys, lows, highs, color=colour(index), linewidth=2.0, alpha=0.8)
            for composite_row, size in ((True, 8), (False, 5)):
                dots = [(e.value, y) for name, e, y in rows if (name == "composite") == composite_row]
                if dots:
                    xs, ys = zip(*dots, strict=True)
                    label = adapter if composite_row else None
                    ax.plot(xs, ys, "o", linestyle="none", color=colour(index), markersize=size, label=label)
            for name, estimate, y in rows:
                if name == "composite" or len(adapters) == 1:
                    ax.annotate(f"{estimate.value:.3f}", (estimate.value, y), xytext=(6, 3), textcoords="offset points", fontsize=8)
        ax.set_yticks(range(len(names))[::-1], names)
        ax.axhline(len(names) - 1.5, color="#cccccc", linewidth=0.8)
        ax.set_xlim(-0.02, 1.08)
        ax.set_ylim(-0.6, len(names) - 0.4)
        ax.set_xlabel("mean over questions; whiskers: 95% bootstrap CI")
        ax.set_title("headline composite and metrics per adapter", loc="left")
        ax.grid(axis="x", alpha=0.3)
        if len(adapters) > 1:
            ax.legend(loc="lower right", fontsize=8, frameon=False)
        return _svg(figure, "headline")


def heatmap(name: str, rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float | None]], title: str) -> str:
    """A grid of scores in [0, 1] (rows x columns), each cell labelled with its value; empty cells are grey."""
    import matplotlib
    import numpy as np

    grid = np.array([[math.nan if v is None else v for v in row] for row in values], dtype=float)
    longest = max((len(c) for c in columns), default=4)
    rotate = len(columns) > 2 and longest > 8
    width = max(4.0, 0.5 + _CHAR_WIDTH * max(len(r) for r in rows) + max(0.9, 0.09 * longest) * len(columns))
    bottom = 0.35 + (_CHAR_WIDTH * longest * 0.6 if rotate else 0.2)
    height = max(1.6, 0.27 * len(rows) + bottom + 0.5)
    with _figure(name, width, height, left_labels=rows, bottom=bottom) as figure:
        ax = figure.subplots()
        cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#dddddd")
        ax.pcolormesh(np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=1.0, edgecolors="white", linewidth=1.0)
        ax.set_xticks([i + 0.5 for i in range(len(columns))], columns, rotation=30 if rotate else 0, ha="right" if rotate else "center")
        ax.set_yticks([i + 0.5 for i in range(len(rows))], rows)
        ax.invert_yaxis()
        for (i, j), value in np.ndenumerate(grid):
            ax.text(j + 0.5, i + 0.5, "-" if math.isnan(value) else f"{value:.2f}", ha="center", va="center", fontsize=8)
        ax.spines[:].set_visible(False)
        ax.tick_params(length=0)
        # A figure title: the axes of a one-column heatmap is narrower than its title.
        figure.suptitle(title, x=0.02, ha="left", fontsize=10, fontweight="bold")
        return _svg(figure, name)


def stream_plot(name: str, series: Sequence[Series], title: str, xlabel: str) -> str:
    """Each adapter's mean through the stream, one point per checkpoint (point size: questions measured there)."""
    with _figure(name, 8.0, 2.8, left_labels=["0.00"]) as figure:
        ax = figure.subplots()
        for index, line in enumerate(series):
            points = [(x, point) for x, point in line.points if point is not None]
            ax.plot([x for x, _ in points], [p.value for _, p in points], "-", color=colour(index), label=line.label, linewidth=1.5)
            ax.scatter([x for x, _ in points], [p.value for _, p in points], s=[8 + 4 * (p.n or 1) for _, p in points], color=colour(index))
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        ax.grid(alpha=0.3)
        if len(series) > 1:
            ax.legend(loc="best", fontsize=8, frameon=False)
        return _svg(figure, name)


def budget_plot(budgets: Sequence[str], series: Sequence[Series]) -> str:
    """Composite per budget (x: the budgets in order of their result-token cap), one line per adapter, CIs as whiskers."""
    with _figure("budgets", 6.5, 3.0, left_labels=["0.00"]) as figure:
        ax = figure.subplots()
        for index, line in enumerate(series):
            offset = (index - (len(series) - 1) / 2) * 0.06
            xs, ys = [], []
            for x, point in line.points:
                if point is None:
                    continue
                _whiskers(ax, x + offset, point, colour(index), horizontal=False)
                xs.append(x + offset)
                ys.append(point.value)
            ax.plot(xs, ys, "o-", color=colour(index), label=line.label, markersize=5)
        ax.set_xticks(range(len(budgets)), budgets)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("budget")
        ax.set_ylabel("composite (95% CI)")
        ax.set_title("composite across budgets", loc="left")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8, frameon=False)
        return _svg(figure, "budgets")


def forest_plot(name: str, labels: Sequence[str], deltas: Sequence[Interval], title: str, xlabel: str) -> str:
    """Differences with their CIs around a zero line, one row each (significant falls red, rises blue, else grey)."""
    with _figure(name, 7.5, max(1.5, 0.35 * len(labels) + 0.9), left_labels=labels) as figure:
        ax = figure.subplots()
        rows = list(range(len(labels)))[::-1]
        for row, delta in zip(rows, deltas, strict=True):
            significant = delta.low is not None and delta.high is not None and (delta.high < 0 or delta.low > 0)
            tone = ("#D55E00" if delta.value < 0 else "#0072B2") if significant else "#666666"
            _whiskers(ax, row, delta, tone)
            ax.plot([delta.value], [row], "o", color=tone, markersize=6)
            ax.annotate(f"{delta.value:+.3f}", (delta.value, row), xytext=(0, 6), textcoords="offset points", ha="center", fontsize=8)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(rows, labels)
        ax.set_ylim(-0.7, len(labels) - 0.3)
        limit = max([0.05, *(abs(v) for d in deltas for v in (d.value, d.low, d.high) if v is not None)]) * 1.15
        ax.set_xlim(-limit, limit)
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        ax.grid(axis="x", alpha=0.3)
        return _svg(figure, name)
