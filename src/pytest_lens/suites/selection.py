"""Which suites a run holds: choosing bundled data, filtering datasets, per-suite scoring and summaries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_lens.datasets.loader import LoadedDataset
from pytest_lens.engine import Scoring
from pytest_lens.results import AdapterSummary, QuestionResult
from pytest_lens.suites import LENS, SELECTABLE, SUITES, load_suite
from pytest_lens.suites.base import Suite, SuiteReport, summarize_suite

__all__ = ["SuiteRun", "default_dataset_paths", "keep_suites"]


def default_dataset_paths(suites: Sequence[str]) -> list[Path]:
    """The bundled files of the selected suites (LENS when none is selected); :class:`ValueError` naming a bad suite."""
    from lens_fixtures.datasets import bundled_suite_paths

    paths: list[Path] = []
    for suite in suites or (LENS,):
        if suite not in SELECTABLE:
            hint = f"; {suite} data is imported: `lens import {suite} PATH --out FILE`, then --lens-dataset=FILE" if suite in SUITES else ""
            raise ValueError(f"no bundled data for suite {suite!r} (bundled: {', '.join(SELECTABLE)}){hint}")
        found = bundled_suite_paths(suite)
        if not found:
            raise ValueError(f"the bundled data of suite {suite!r} is missing from lens_fixtures")
        paths.extend(found)
    return paths


def keep_suites(datasets: list[LoadedDataset], suites: Sequence[str]) -> list[LoadedDataset]:
    """Datasets whose suite was selected (all of them when none was)."""
    if not suites:
        return datasets
    kept = [d for d in datasets if d.dataset.suite in suites]
    if not kept:
        present = ", ".join(sorted({d.dataset.suite for d in datasets}))
        raise ValueError(f"none of the datasets belongs to suite(s) {', '.join(suites)} (their suites: {present})")
    return kept


@dataclass
class SuiteRun:
    """The sibling suites of a run (every suite but LENS found in its datasets)."""

    suites: dict[str, Suite] = field(default_factory=dict)
    _scoring: dict[str, Scoring] = field(default_factory=dict, repr=False)

    @classmethod
    def for_datasets(cls, datasets: Sequence[LoadedDataset]) -> SuiteRun:
        """The suites named by ``datasets`` other than LENS, in first-seen order."""
        names = dict.fromkeys(d.dataset.suite for d in datasets if d.dataset.suite != LENS)
        return cls({name: load_suite(name) for name in names})

    def scoring(self, suite: str, lens: Scoring) -> Scoring:
        """How questions of ``suite`` are scored (``lens`` for LENS questions)."""
        if suite not in self.suites:
            return lens
        if suite not in self._scoring:
            self._scoring[suite] = self.suites[suite].scoring()
        return self._scoring[suite]

    def summaries(self, results: Sequence[QuestionResult]) -> dict[str, dict[str, AdapterSummary]]:
        """Per suite with results, its per (adapter, budget) summaries."""
        out: dict[str, dict[str, AdapterSummary]] = {}
        for name, suite in self.suites.items():
            members = [r for r in results if r.suite == name]
            if members:
                out[name] = summarize_suite(suite, members)
        return out

    def reports(self, results: Sequence[QuestionResult], agent: str) -> list[SuiteReport]:
        """One summary section per suite with results."""
        summaries = self.summaries(results)
        return [
            SuiteReport(self.suites[name], by_key, [r for r in results if r.suite == name], agent=agent)
            for name, by_key in summaries.items()
        ]
