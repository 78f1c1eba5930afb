"""Which suites a run holds: choosing bundled data, filtering datasets, per-suite scoring and summaries."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
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
    from pytest_lens.records.identity import RecordedHeadline, RunIdentity
    from pytest_lens.records.results import RunArtifact
    from pytest_lens.records.statistics import BaselineComparison, BaselineInfo, Ceiling, RunStatistics

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
    their mechanical scorers. ``retrieval`` names the suites headed by the retrieval score (their own
    score beside it): see :func:`~pytest_lens.scoring.headline.suite_uses_retrieval`.
    """

    suites: dict[str, Suite] = field(default_factory=dict)
    llm_judge: ChatClient | None = None
    retrieval: frozenset[str] = frozenset()
    _judging: dict[str, SuiteJudging] = field(default_factory=dict, repr=False)
    _scoring: dict[str, Scoring] = field(default_factory=dict, repr=False)

    @classmethod
    def for_datasets(
        cls, datasets: Sequence[LoadedDataset], llm_judge: ChatClient | None = None, *, headline: str = "auto", llm_agent: bool = False
    ) -> SuiteRun:
        """The suites named by ``datasets`` other than LENS, in first-seen order.

        ``headline`` is ``--lens-headline``; ``llm_agent``: a model writes the answers (``--lens-agent=llm``).
        """
        from pytest_lens.scoring.headline import suite_uses_retrieval

        names = dict.fromkeys(d.dataset.suite for d in datasets if d.dataset.suite != LENS)
        run = cls({name: load_suite(name) for name in names}, llm_judge)
        by_model = {name: llm_agent or run.judging(name).judge.name == "llm" for name in names}
        run.retrieval = frozenset(name for name in names if suite_uses_retrieval(headline, answers_by_model=by_model[name]))
        return run

    @classmethod
    def recorded(cls, names: Iterable[str], run: RunIdentity) -> SuiteRun:
        """The suites ``names`` headed as ``run`` (an artifact's identity) records (their own scores for older runs)."""
        from pytest_lens.scoring.headline import QuestionHeadlines

        names = list(dict.fromkeys(names))
        return cls({name: load_suite(name) for name in names}, retrieval=QuestionHeadlines.of_run(run).retrieval_suites & set(names))

    def headline(self, suite: str) -> RecordedHeadline:
        """The headline of ``suite``'s section, as the artifact records it."""
        from pytest_lens.records.identity import RecordedHeadline
        from pytest_lens.scoring.headline import retrieval_headline

        chosen = retrieval_headline() if suite in self.retrieval else self.suites[suite].own_headline()
        return RecordedHeadline(name=chosen.name, weights=dict(chosen.weights), gates=list(chosen.gates))

    def describe(self, suite: str) -> str:
        """What heads ``suite``'s section, in words."""
        from pytest_lens.scoring.headline import retrieval_headline

        return retrieval_headline().description if suite in self.retrieval else self.suites[suite].headline

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
                out[name] = summarize_suite(suite, members, name in self.retrieval)
        return out

    def statistics(self, results: Sequence[QuestionResult], *, seed: int) -> dict[str, RunStatistics]:
        """Per suite with results: its score's t interval per adapter and paired tests between adapters.

        Each suite's statistics see its questions through :meth:`Suite.analysis` (MEME: credited
        after-probes), so every CI is a CI of the score its section shows.
        """
        from pytest_lens.analysis.run import analyze_run

        out: dict[str, RunStatistics] = {}
        for name, suite in self.suites.items():
            analysis = suite.analysis(name in self.retrieval)
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
                    score=self.headline(name).name,
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
            analysis = suite.analysis(name in self.retrieval)
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
                score=self.headline(name).name,
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
        ceilings: Mapping[str, Ceiling] | None = None,
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
                retrieval=name in self.retrieval,
                ceiling=(ceilings or {}).get(name),
            )
            for name, by_key in summaries.items()
        ]
