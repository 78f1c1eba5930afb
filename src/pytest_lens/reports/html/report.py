"""The HTML report of a run artifact: one self-contained file (inline CSS, JS and figures; nothing fetched at view time).

:func:`render_report` turns a :class:`RunArtifact` (and optionally its baseline) into the page. The numbers
come from the artifact as recorded (summaries, statistics, comparison); only views the artifact has no
table for (composite per scope, coverage per checkpoint, per-question deltas) are computed here, with the
run's own weights and gates. Metrics are listed generically, so a metric added to the artifact appears
in every table and plot without a change here.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel

from pytest_lens.analysis.format import METRIC_LABELS
from pytest_lens.analysis.summary import metric_means, summary_key
from pytest_lens.records.results import AdapterSummary, RunArtifact
from pytest_lens.records.statistics import Estimate
from pytest_lens.reports.html import plots
from pytest_lens.reports.views.transcript import OUTCOMES, Transcript, transcripts
from pytest_lens.reports.views.worst import worst
from pytest_lens.scoring.composite import HardGate, composite
from pytest_lens.scoring.headline import recorded_headline

__all__ = ["GenericSection", "QuestionDeltaRow", "ReportPage", "build_page"]

#: Artifact fields the page shows in their own sections; any other non-empty field gets a generic table.
_KNOWN_FIELDS = frozenset(
    {
        "schema_version",
        "pytest_lens_version",
        "created",
        "run",
        "results",
        "summary",
        "incomplete",
        "dataset_warnings",
        "suite_summaries",
        "machine",
        "commit",
        "statistics",
        "comparison",
        "suite_statistics",
        "suite_comparisons",
        "evidence",
        "verdict",
        "ceiling",
        "suite_ceilings",
    }
)
#: Worst questions listed per adapter in the overview.
OVERVIEW_WORST = 5


@dataclass(frozen=True)
class QuestionDeltaRow:
    """One question of this run against the same question in the baseline (both rescored alike)."""

    transcript: Transcript
    baseline: float
    current: float

    @property
    def delta(self) -> float:
        """The current score (the run's headline) minus the baseline's."""
        return self.current - self.baseline


@dataclass(frozen=True)
class GenericSection:
    """An artifact field this page has no dedicated view for (e.g. a table another feature added), shown as tables."""

    title: str
    tables: list[tuple[str, list[str], list[list[str]]]]
    text: str = ""


@dataclass
class ReportPage:
    """Everything the page shows, computed once."""

    artifact: RunArtifact
    source: str
    keys: list[str]
    summaries: dict[str, AdapterSummary]
    metrics: list[str]
    transcripts: list[Transcript]
    by_key: dict[str, list[Transcript]]
    worst: dict[str, list[Transcript]]
    figures: dict[str, plots.Spec] = field(default_factory=dict)
    question_deltas: list[QuestionDeltaRow] = field(default_factory=list)
    baseline_name: str | None = None
    generic: list[GenericSection] = field(default_factory=list)
    filters: dict[str, list[str]] = field(default_factory=dict)
    stream_axis: str = "episodes ingested"
    #: The run's headline score (``retrieval_score`` or ``composite``): what the CIs, paired tests and baseline
    #: comparison are about, and what the figures show.
    score: str = "composite"

    @cached_property
    def transcript_views(self) -> list[dict[str, Any]]:
        """Every transcript as data; the page's script lays one out when its link is followed."""
        return [item.view() for item in self.transcripts]

    @cached_property
    def anchors(self) -> dict[tuple[str, str, str, str], str]:
        """Result key -> transcript anchor (the first result of a key, for links from comparison tables)."""
        found: dict[tuple[str, str, str, str], str] = {}
        for item in self.transcripts:
            found.setdefault(item.result.key, item.anchor)
        return found


def headline_scoring(page: ReportPage) -> tuple[Mapping[str, float], Sequence[HardGate]]:
    """The weights and gates of the run's headline as the artifact records it, to score a group as the summary does."""
    _, weights, gates = recorded_headline(page.artifact.run)
    return weights, gates


def metric_order(names: set[str]) -> list[str]:
    """Known metrics in the summary's column order, then the others alphabetically."""
    known = [name for name in METRIC_LABELS if name in names]
    return known + sorted(names - set(known))


def _interval(estimate: Estimate | None, fallback: float | None = None) -> plots.Interval | None:
    if estimate is None:
        return None if fallback is None else plots.Interval(fallback)
    return plots.Interval(estimate.value, estimate.low, estimate.high, estimate.n)


def build_page(
    artifact: RunArtifact, *, baseline: RunArtifact | None = None, baseline_name: str | None = None, source: str = ""
) -> ReportPage:
    """Compute every table and figure of the report (``baseline``: for per-question deltas against it)."""
    items = transcripts(artifact)
    summaries = dict(artifact.summary)
    keys = list(summaries)
    lens_items = [item for item in items if item.result.suite == "lens" and item.result.skipped is None]
    by_key: dict[str, list[Transcript]] = defaultdict(list)
    several_budgets = len({r.budget for r in artifact.results}) > 1
    for item in lens_items:
        by_key[summary_key(item.result.adapter, item.result.budget, several_budgets)].append(item)
    metrics = metric_order({name for s in summaries.values() for name in s.metrics})
    page = ReportPage(
        artifact=artifact,
        source=source,
        keys=keys,
        summaries=summaries,
        metrics=metrics,
        transcripts=items,
        by_key=dict(by_key),
        worst=worst(items, OVERVIEW_WORST),
        baseline_name=baseline_name,
    )
    page.filters = {
        "adapter": sorted({item.result.adapter for item in items}),
        "budget": list(dict.fromkeys(item.result.budget for item in items)),
        "scope": list(dict.fromkeys(item.result.scope_id for item in items)),
        "type": sorted({item.result.question_type for item in items}),
        "outcome": [outcome for outcome in OUTCOMES if any(item.outcome == outcome for item in items)],
    }
    if len(page.filters["budget"]) < 2:
        del page.filters["budget"]
    stats = artifact.statistics
    page.score = stats.score if stats is not None else next((s.headline_name for s in summaries.values()), "composite")
    _figures(page)
    if baseline is not None:
        page.question_deltas = question_deltas(items, baseline, *headline_scoring(page))
    page.generic = generic_sections(artifact)
    return page


def _figures(page: ReportPage) -> None:
    artifact = page.artifact
    stats = artifact.statistics
    if page.keys:
        composites: dict[str, plots.Interval] = {}
        metric_intervals: dict[str, dict[str, plots.Interval]] = {}
        for key in page.keys:
            recorded = stats.adapters.get(key) if stats is not None else None
            summary = page.summaries[key]
            headline = _interval(recorded.composite if recorded else None, summary.headline)
            composites[key] = headline or plots.Interval(summary.headline)
            # The paper's composite beside another headline (without a CI: the statistics are the headline's).
            other = {summary.composite_label: plots.Interval(summary.composite)} if page.score != "composite" else {}
            metric_intervals[key] = other | {
                name: interval
                for name in page.metrics
                if (interval := _interval(recorded.metrics.get(name) if recorded else None, summary.metrics.get(name))) is not None
            }
        page.figures["headline"] = plots.headline_plot(page.keys, composites, metric_intervals, score=page.score)
        types = sorted({qtype for s in page.summaries.values() for qtype in s.by_type})
        if types:
            values = [[s.by_type[t].headline if t in s.by_type else None for s in page.summaries.values()] for t in types]
            page.figures["types"] = plots.heatmap("types", types, page.keys, values, f"{page.score} by question type")
        scopes, scope_values = scope_composites(page)
        if scopes:
            page.figures["scopes"] = plots.heatmap("scopes", scopes, page.keys, scope_values, f"{page.score} by scope")
        coverage, page.stream_axis = stream_series(page)
        if coverage:
            page.figures["stream"] = plots.stream_plot("stream", coverage, "evidence coverage through the stream", page.stream_axis)
        budgets = budget_series(page)
        if budgets is not None:
            page.figures["budgets"] = plots.budget_plot(*budgets)
    if stats is not None and stats.pairs:
        several_budgets = len({pair.budget for pair in stats.pairs}) > 1
        labels = [f"{p.second} − {p.first}" + (f" @{p.budget}" if several_budgets else "") for p in stats.pairs]
        deltas = [_interval(p.composite.delta) or plots.Interval(0.0) for p in stats.pairs]
        page.figures["pairs"] = plots.forest_plot("pairs", labels, deltas, f"paired {page.score} differences", "difference (95% CI)")
    comparison = artifact.comparison
    if comparison is not None:
        compared = [entry for entry in comparison.adapters if entry.regression is not None]
        if compared:
            labels = [entry.key for entry in compared]
            deltas = [_interval(entry.regression.delta) or plots.Interval(0.0) for entry in compared if entry.regression]
            title = f"this run − baseline {comparison.baseline.name}"
            page.figures["baseline"] = plots.forest_plot("baseline", labels, deltas, title, f"{page.score} difference (95% CI)")


def scope_composites(page: ReportPage) -> tuple[list[str], list[list[float | None]]]:
    """Rows of scopes, columns of adapter keys: the headline of each group's metric means (as per question type)."""
    weights, gates = headline_scoring(page)
    scopes = list(dict.fromkeys(item.result.scope_id for key in page.keys for item in page.by_key.get(key, [])))
    values: list[list[float | None]] = []
    for scope in scopes:
        row: list[float | None] = []
        for key in page.keys:
            members = [item.result for item in page.by_key.get(key, []) if item.result.scope_id == scope]
            row.append(composite(metric_means(members), weights, gates).value if members else None)
        values.append(row)
    return scopes, values


def stream_series(page: ReportPage) -> tuple[list[plots.Series], str]:
    """Mean evidence coverage per checkpoint (questions with required evidence), one line per adapter key.

    The x axis is episodes ingested when every scope has the same stream length, else the percentage of
    the stream ingested (so scopes of different lengths line up). Empty when there is nothing to draw.
    """
    lengths = {item.stream_length for items in page.by_key.values() for item in items}
    by_count = len(lengths) == 1 and None not in lengths
    axis = "episodes ingested (checkpoint)" if by_count else "share of the stream ingested (%)"

    def position(item: Transcript) -> float:
        if by_count or item.stream_length is None:
            return float(item.result.checkpoint)
        return round(100.0 * item.result.checkpoint / item.stream_length, 1)

    coverage: list[plots.Series] = []
    for key in page.keys:
        groups: dict[float, list[float]] = defaultdict(list)
        for item in page.by_key.get(key, []):
            if "evidence_coverage" in item.result.metrics:
                groups[position(item)].append(item.result.metrics["evidence_coverage"])
        points = [(x, plots.Interval(sum(values) / len(values), n=len(values))) for x, values in sorted(groups.items())]
        coverage.append(plots.Series(key, points))
    if sum(len(series.points) for series in coverage) < 2:
        return [], axis
    return coverage, axis


def budget_series(page: ReportPage) -> tuple[list[str], list[plots.Series]] | None:
    """Composite per budget for each adapter, when the run measured several budgets."""
    caps = {b.get("name"): b.get("result_token_cap", 0) for b in page.artifact.run.budgets or []}
    budgets = sorted({s.budget for s in page.summaries.values()}, key=lambda name: (caps.get(name, 0), name))
    if len(budgets) < 2:
        return None
    stats = page.artifact.statistics
    series = []
    for adapter in dict.fromkeys(s.adapter for s in page.summaries.values()):
        points: list[tuple[float, plots.Interval | None]] = []
        for index, budget in enumerate(budgets):
            key = summary_key(adapter, budget, True)
            summary = page.summaries.get(key)
            estimate = stats.adapters[key].composite if stats is not None and key in stats.adapters else None
            points.append((float(index), _interval(estimate, summary.headline if summary else None)))
        series.append(plots.Series(adapter, points))
    return budgets, series


def question_deltas(
    items: Sequence[Transcript], baseline: RunArtifact, weights: Mapping[str, float], gates: Sequence[HardGate]
) -> list[QuestionDeltaRow]:
    """Every question of this run also in the baseline, both rescored with this run's weights and gates; largest drops first."""
    from pytest_lens.analysis.run import question_composite

    before = {r.key: r for r in baseline.results if r.skipped is None}
    rows = [
        QuestionDeltaRow(item, question_composite(before[item.result.key], weights, gates), question_composite(item.result, weights, gates))
        for item in items
        if item.result.skipped is None and item.result.key in before
    ]
    return sorted(rows, key=lambda row: (row.delta, row.transcript.test_id))


def generic_sections(artifact: RunArtifact) -> list[GenericSection]:
    """A section per artifact field this page has no view for, so additions to the artifact are never invisible."""
    sections = []
    for name in type(artifact).model_fields:
        if name in _KNOWN_FIELDS:
            continue
        value = getattr(artifact, name)
        if value in (None, [], {}, ""):
            continue
        data = _plain(value)
        sections.append(GenericSection(name.replace("_", " "), *_tables(data)))
    return sections


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _rows_table(title: str, rows: list[dict[str, Any]]) -> tuple[str, list[str], list[list[str]]]:
    headers = list(dict.fromkeys(key for row in rows for key in row))
    return title, headers, [[_cell(row.get(h)) for h in headers] for row in rows]


def _tables(data: Any) -> tuple[list[tuple[str, list[str], list[list[str]]]], str]:
    """Lists of objects become tables, objects of objects one table each (or one keyed table); anything else JSON text."""
    if isinstance(data, list) and data and all(isinstance(row, dict) for row in data):
        return [_rows_table("", data)], ""
    if isinstance(data, dict) and data:
        if all(isinstance(v, dict) for v in data.values()) and all(
            not isinstance(x, dict | list) for v in data.values() for x in v.values()
        ):
            return [_rows_table("", [{"": key, **value} for key, value in data.items()])], ""
        tables = []
        scalars = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
        if scalars:
            tables.append(("", ["field", "value"], [[k, _cell(v)] for k, v in scalars.items()]))
        for key, value in data.items():
            if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
                tables.append(_rows_table(key, value))
            elif isinstance(value, dict) and value:
                tables.append((key, ["field", "value"], [[k, _cell(v)] for k, v in value.items()]))
        return tables, ""
    return [], json.dumps(data, indent=2, ensure_ascii=False)
