"""Which suites a run holds: choosing bundled data, filtering datasets, per-suite scoring and summaries."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_lens.datasets.loader import LoadedDataset
from pytest_lens.records.results import LENS, AdapterSummary, QuestionResult, scored_results
from pytest_lens.scoring.scorer import Scoring
from pytest_lens.suites import SELECTABLE, SUITES, load_suite
from pytest_lens.suites.base import Suite, SuiteJudge, SuiteJudging, SuiteReport, summarize_suite

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient
    from pytest_lens.records.identity import RunIdentity
    from pytest_lens.records.results import RunArtifact
    from pytest_lens.records.statistics import BaselineComparison, BaselineInfo, RunStatistics

__all__ = ["SuiteRun", "default_dataset_paths", "keep_suites"]


def default_dataset_paths(suites: Sequence[str]) -> list[Path]:
    """The bundled files of the selected suites (LENS when none is selected); :class:`ValueError` naming a bad suite."""
    from pytest_lens.datasets.bundled import bundled_suite_paths

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
    """The sibling suites of a run (every suite but LENS found in its datasets).

    ``llm_judge`` is the judge model's client under ``--lens-judge=llm``: suites with an LLM
    judging protocol (MEME, LongMemEval) judge through it; the others, and every suite without it, keep
    their mechanical scorers.
    """

    suites: dict[str, Suite] = field(default_factory=dict)
    llm_judge: ChatClient | None = None
    _judging: dict[str, SuiteJudging] = field(default_factory=dict, repr=False)
    _scoring: dict[str, Scoring] = field(default_factory=dict, repr=False)

    @classmethod
    def for_datasets(cls, datasets: Sequence[LoadedDataset], llm_judge: ChatClient | None = None) -> SuiteRun:
        """The suites named by ``datasets`` other than LENS, in first-seen order."""
        names = dict.fromkeys(d.dataset.suite for d in datasets if d.dataset.suite != LENS)
        return cls({name: load_suite(name) for name in names}, llm_judge)

    def judging(self, suite: str) -> SuiteJudging:
        """The judge and scorers of ``suite`` (a sibling suite of this run), built once."""
        if suite not in self._judging:
            self._judging[suite] = self.suites[suite].judging(self.llm_judge)
        return self._judging[suite]

    def judge(self, suite: str) -> SuiteJudge | None:
        """What scores ``suite``'s questions (``None`` for LENS and suites not in this run)."""
        return self.judging(suite).judge if suite in self.suites else None

    def scoring(self, suite: str, lens: Scoring) -> Scoring:
        """How questions of ``suite`` are scored (``lens`` for LENS questions)."""
        if suite not in self.suites:
            return lens
        if suite not in self._scoring:
            self._scoring[suite] = self.suites[suite].scoring(self.judging(suite))
        return self._scoring[suite]

    def summaries(self, results: Sequence[QuestionResult]) -> dict[str, dict[str, AdapterSummary]]:
        """Per suite with results, its per (adapter, budget) summaries."""
        out: dict[str, dict[str, AdapterSummary]] = {}
        for name, suite in self.suites.items():
            members = [r for r in results if r.suite == name]
            if members:
                out[name] = summarize_suite(suite, members)
        return out

    def statistics(self, results: Sequence[QuestionResult], *, seed: int) -> dict[str, RunStatistics]:
        """Per suite with results: its score's t interval per adapter and paired tests between adapters.

        Each suite's statistics see its questions through :meth:`Suite.analysis` (MEME: credited
        after-probes), so every CI is a CI of the score its section shows.
        """
        from pytest_lens.analysis.run import analyze_run

        out: dict[str, RunStatistics] = {}
        for name, suite in self.suites.items():
            analysis = suite.analysis()
            members = analysis.prepare([r for r in results if r.suite == name])
            if members:
                out[name] = analyze_run(
                    members,
                    analysis.weights,
                    analysis.gates,
                    seed=seed,
                    group_metrics=analysis.group_metrics,
                    question_weights=analysis.question_weights,
                    strata=analysis.strata,
                )
        return out

    def comparisons(
        self,
        results: Sequence[QuestionResult],
        run: RunIdentity,
        baseline: RunArtifact,
        info: BaselineInfo,
        *,
        alpha: float,
        max_drop: float | None,
        seed: int,
        accepted: Collection[str] = (),
    ) -> dict[str, BaselineComparison]:
        """Per suite with questions in this run and in ``baseline``: this run against it, paired by question."""
        from pytest_lens.analysis.baseline import compare_with_baseline

        out: dict[str, BaselineComparison] = {}
        in_baseline = {r.suite for r in scored_results(baseline.results)}
        for name, suite in self.suites.items():
            if name not in in_baseline or not any(r.suite == name for r in results):
                continue
            analysis = suite.analysis()
            out[name] = compare_with_baseline(
                results,
                run,
                baseline,
                info,
                analysis.weights,
                analysis.gates,
                alpha=alpha,
                max_drop=max_drop,
                seed=seed,
                group_metrics=analysis.group_metrics,
                suite=name,
                question_weights=analysis.question_weights,
                prepare=analysis.prepare,
                strata=analysis.strata,
                accepted=accepted,
            )
        return out

    def reports(
        self,
        results: Sequence[QuestionResult],
        agent: str,
        *,
        statistics: Mapping[str, RunStatistics] | None = None,
        comparisons: Mapping[str, BaselineComparison] | None = None,
        alpha: float = 0.05,
        gating: bool = False,
        encoding: str | None = "utf-8",
    ) -> list[SuiteReport]:
        """One summary section per suite with results (with its statistics and baseline comparison when given)."""
        summaries = self.summaries(results)
        return [
            SuiteReport(
                self.suites[name],
                by_key,
                [r for r in results if r.suite == name],
                agent=agent,
                judge=self.judging(name).judge.description,
                statistics=(statistics or {}).get(name),
                comparison=(comparisons or {}).get(name),
                alpha=alpha,
                gating=gating,
                encoding=encoding,
            )
            for name, by_key in summaries.items()
        ]
