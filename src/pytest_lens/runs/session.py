"""The LENS session: settings, datasets and cases in; results, summary, verdict and artifact out.

Plain Python: the pytest plugin translates hooks into calls on this object.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_lens.agents import Agent, agent_class
from pytest_lens.analysis.summary import mark_not_comparable, summarize
from pytest_lens.answering.engine import run_case
from pytest_lens.contract.registry import AdapterLoadError, accepts_keyword, load_adapter_class
from pytest_lens.datasets.loader import DatasetError, LoadedDataset, LoadedScope, load_datasets
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.llm.errors import LLMCacheError
from pytest_lens.llm.services import LLMServices
from pytest_lens.llm.settings import display_url
from pytest_lens.llm.stats import LLMCounts, counting
from pytest_lens.records.budget import Budget, parse_budget
from pytest_lens.records.cases import LensCase, build_cases
from pytest_lens.records.results import LENS, AdapterFault, AdapterSummary, QuestionResult, RecordedVerdict, RunArtifact
from pytest_lens.records.settings import AdapterSpec, ControlRole, LensSettings
from pytest_lens.reports.terminal import LensReport, ReportSection, Verdict
from pytest_lens.runs.evidence import collect_evidence
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, HardGate
from pytest_lens.scoring.headline import choose_headline
from pytest_lens.scoring.scorer import GroupMetric, QuestionScorer, Scoring
from pytest_lens.suites.selection import SuiteRun, default_dataset_paths, keep_suites

if TYPE_CHECKING:
    from pytest_lens.analysis.gates import GateCheck
    from pytest_lens.answering.concurrency import ConcurrentRunner
    from pytest_lens.judging.judge import Judge
    from pytest_lens.records.statistics import BaselineComparison, RepetitionVariance, RunStatistics, Sensitivity
    from pytest_lens.reports.views.worst import WorstQuestions
    from pytest_lens.runs.storage import Baseline, RunStore

__all__ = ["LensConfigError", "LensSession", "bundled_dataset_paths"]


#: Why an artifact lacks statistics, comparison and verdict. numpy (OpenBLAS) is first imported when they are computed,
#: and a process whose memory an adapter exhausted dies there, without an exception: so the artifact is written first
#: without them, then again whole. This one stays only when the run died in between.
PENDING = (
    "written before the statistics, the baseline comparison and the verdict; the run ended before they were computed "
    "(e.g. out of memory importing numpy): every result and summary here is complete"
)

#: How long the LLM warm-up waits for the first request before importing what answering needs anyway (seconds).
_FIRST_REQUEST_WAIT_S = 5.0


class LensConfigError(ValueError):
    """The run cannot be set up; the message says which option or file and what to do."""


def bundled_dataset_paths() -> list[Path]:
    """The datasets shipped in ``lens_fixtures`` (used when no ``--lens-dataset`` is given)."""
    from pytest_lens.datasets.bundled import bundled_dataset_paths as bundled

    return bundled()


class LensSession:
    """One pytest session's LENS run (on the controller, or on one xdist worker)."""

    def __init__(self, settings: LensSettings, datasets: list[LoadedDataset], budgets: list[Budget]) -> None:
        self.settings = settings
        self.datasets = datasets
        self.budgets = budgets
        gates: list[HardGate] = list(DEFAULT_GATES)
        if settings.gate_budget:
            gates.append(HardGate("budget_compliance", 0.5))
        self.llm = LLMServices(settings.llm, seed=settings.seed, rootdir=settings.rootdir)
        #: The background thread building the LLM client (:meth:`warm_up`), when one was started.
        self._llm_warm_up: threading.Thread | None = None
        self._agent: Agent | None = None
        self._judge: Judge | None = self._make_judge()
        scorers, self.group_metrics = self._judging()
        self.scoring = Scoring(dict(settings.weights or DEFAULT_WEIGHTS), tuple(gates), scorers)
        #: The score CIs, paired tests, baselines and --lens-fail-under are about (pytest_lens.scoring.headline).
        self.headline = choose_headline(
            settings.headline,
            judged=self._judge is not None,
            weights=self.scoring.weights,
            gates=self.scoring.gates,
            group_metrics=self.group_metrics,
        )
        #: Sibling suites present in the data (MEME, MemoryAgentBench, imported benchmarks), by name.
        self.suites = SuiteRun.for_datasets(datasets, llm_judge=self.llm.judge_client() if settings.llm.judge == "llm" else None)
        #: The user's adapters, then what ``--lens-controls`` adds (null, random, mutants), each with its own label.
        self.adapter_specs: tuple[AdapterSpec, ...] = self._plan_adapters()
        self._controls: dict[str, ControlRole] = {spec.label: spec.control for spec in self.adapter_specs if spec.control is not None}
        self.cases: list[LensCase] = build_cases([a.label for a in self.adapter_specs], self.scopes, budgets, settings.repeat)
        #: Results and selected cases by (adapter, scope, budget, question, repetition).
        self.results: dict[tuple[str, str, str, str, int], QuestionResult] = {}
        self.expected: dict[tuple[str, str, str, str, int], LensCase] = {}
        #: Selected cases whose test killed its xdist worker (``os._exit``, a segfault), and which worker: no result, ever.
        self.crashed: dict[tuple[str, str, str, str, int], str] = {}
        #: Run-level problems found outside the results (e.g. the xdist grouping self-check); each fails the verdict.
        self.problems: list[str] = []
        #: The ``--lens-baseline`` run, loaded by :meth:`open`.
        self.baseline: Baseline | None = None
        #: Statistics and comparison computed from the results so far (cleared by :meth:`record`).
        self._derived: dict[str, Any] = {}
        #: Cases this process will run (:meth:`plan`), and the concurrent runner of each runtime.
        self._planned: list[LensCase] = []
        self._plan_by_budget = False
        self._runners: dict[int, ConcurrentRunner] = {}

    @classmethod
    def open(cls, settings: LensSettings) -> LensSession:
        """Validate adapters, budgets and datasets; :class:`LensConfigError` on anything unusable."""
        for spec in settings.adapters:
            try:
                adapter_class = load_adapter_class(spec.target, settings.import_paths)
            except AdapterLoadError as exc:
                raise LensConfigError(f"--lens-adapter={spec.target}: {exc}") from None
            rejected = [name for name in spec.options if not accepts_keyword(adapter_class, name)]
            if rejected:
                raise LensConfigError(
                    f"--lens-adapter-option: adapter {spec.label!r} ({spec.target}) does not accept {', '.join(sorted(rejected))}"
                )
        _check_llm_settings(settings)
        try:
            agent_class(settings.agent)
        except ValueError as exc:
            raise LensConfigError(f"--lens-agent: {exc}") from None
        from pytest_lens.datasets.importers import resolve_dataset_path

        try:
            paths = [resolve_dataset_path(p, settings.rootdir) for p in settings.datasets] or default_dataset_paths(settings.suites)
        except ValueError as exc:
            raise LensConfigError(f"--lens-suite: {exc}") from None
        try:
            datasets = load_datasets(paths, strict=settings.strict)
        except DatasetError as exc:
            details = "\n".join(f"  {issue}" for issue in exc.issues[:20])
            more = f"\n  ... and {len(exc.issues) - 20} more" if len(exc.issues) > 20 else ""
            files = list(dict.fromkeys(issue.path for issue in exc.issues))
            what = "the dataset" if len(files) == 1 else f"{len(files)} dataset files ({', '.join(files)})"
            raise LensConfigError(f"--lens-dataset: cannot use {what}:\n{details}{more}") from None
        if settings.datasets:
            try:
                datasets = keep_suites(datasets, settings.suites)
            except ValueError as exc:
                raise LensConfigError(f"--lens-suite: {exc}") from None
        _check_repeat(settings, datasets)
        session = cls(settings, datasets, [parse_budget(b) for b in settings.budgets])
        try:
            _ = session.agent  # built now: a misconfigured agent is one usage error, not a failure per question
            if settings.llm.configured:
                session.llm.cache.check()
        except (ValueError, LLMCacheError) as exc:
            raise LensConfigError(f"--lens-agent={settings.agent}: {exc}" if isinstance(exc, ValueError) else str(exc)) from None
        if settings.baseline:
            from pytest_lens.runs.storage import SavedRunError, open_baseline

            try:
                session.baseline = open_baseline(settings.baseline, session.run_store(), (settings.rootdir, Path.cwd()))
            except SavedRunError as exc:
                raise LensConfigError(f"--lens-baseline: {exc}") from None
        return session

    def _plan_adapters(self) -> tuple[AdapterSpec, ...]:
        if not self.settings.controls:
            return tuple(self.settings.adapters)
        from pytest_lens.controls.plan import ControlsError, plan_controls

        try:
            return plan_controls(
                self.settings.adapters,
                seed=self.settings.seed,
                mutants=self.settings.mutants,
                first_checkpoints={scope.scope_id: scope.checkpoints[0] for scope in self.scopes if scope.checkpoints},
            )
        except (ControlsError, ValueError) as exc:
            raise LensConfigError(str(exc)) from None

    @property
    def scopes(self) -> list[LoadedScope]:
        """Every scope of every dataset, in load order."""
        return [scope for dataset in self.datasets for scope in dataset.scopes]

    @property
    def agent(self) -> Agent:
        """The answering agent of this process (created on first use)."""
        if self._agent is None:
            cls = agent_class(self.settings.agent)
            options = {"lens_llm": self.llm.agent_client()} if accepts_keyword(cls, "lens_llm", via_kwargs=False) else {}
            self._agent = cls(**options)
        return self._agent

    def new_runtime(self, storage_root: Path) -> LensRuntime:
        """Adapter instances for this process, storing under ``storage_root``."""
        return LensRuntime(
            {spec.label: spec for spec in self.adapter_specs},
            storage_root,
            call_timeout=self.settings.call_timeout,
            opaque_refs=self.settings.opaque_refs,
            lens_llm=self.llm.component_client(),
        )

    def run(self, case: LensCase, runtime: LensRuntime) -> QuestionResult:
        """Answer and score one case (a sibling suite's question with that suite's scoring).

        With a concurrency above 1 the case is answered together with the other planned
        cases of its (adapter, scope) stream (see :mod:`pytest_lens.answering.concurrency`); the result is the same.
        """
        if self.concurrency > 1:
            return self._runner(runtime).result(case)
        with counting() as used:
            result = run_case(case, runtime, self.agent, self._scoring_for(case))
        return self._finish(case, result, used.snapshot())

    def close(self) -> None:
        """Release what the session holds open (the LLM request cache's connection)."""
        self.llm.close()

    # -- concurrent questions ----------------------------------------------------------------
    @property
    def concurrency(self) -> int:
        """Questions answered at once (``--lens-concurrency``; else the agent's ``default_concurrency``, else 1)."""
        if self.settings.concurrency is not None:
            return self.settings.concurrency
        default = getattr(self.agent, "default_concurrency", 1)
        return default if isinstance(default, int) and default > 0 else 1

    def plan(self, cases: Iterable[LensCase], *, by_budget: bool = False) -> None:
        """The cases this process will run (pytest's selection): concurrent runs answer a stream's planned questions together.

        ``by_budget``: on an xdist worker, which receives whole (adapter, scope, budget) groups.
        """
        order = {case.item_key: index for index, case in enumerate(self.cases)}
        self._planned = sorted(cases, key=lambda case: order.get(case.item_key, len(order)))
        self._plan_by_budget = by_budget
        for runner in self._runners.values():
            runner.plan(self._planned, by_budget=by_budget)

    def settle(self, runtime: LensRuntime) -> None:
        """Let every question being answered on ``runtime`` finish, so its adapters can be used directly."""
        runner = self._runners.get(id(runtime))
        if runner is not None:
            runner.settle()

    def close_runtime(self, runtime: LensRuntime) -> list[AdapterFault]:
        """Stop answering on ``runtime``, then close its adapters (returns close faults)."""
        runner = self._runners.pop(id(runtime), None)
        if runner is not None:
            runner.close()
        return runtime.close()

    def warm_up(self, *, llm: bool, summary: bool) -> None:
        """Prepare in the background what this process will need: the LLM client, the summary's statistics.

        Collection, ingestion and questions waiting on models leave room for the work, instead of the first LLM
        request or the terminal summary waiting for it. ``llm`` builds the endpoint's ``openai`` client (importing
        it and its HTTP transport), then, once the first request waits for the model, imports what answering and
        scoring the first questions need; it is ignored when no request will be sent (no endpoint, or the cache
        replays everything). The summary's imports come after all that: the run needs them last.
        """
        from pytest_lens.plugin.gc_tuning import refreeze
        from pytest_lens.plugin.warm_up import SUMMARY_MODULES, TEST_MODULES, warm_up

        settings = self.settings.llm
        if llm and settings.configured and settings.cache_mode != "replay":
            self._llm_warm_up = warm_up((), name="lens-llm-warm-up", then=self._prepare_llm)
        if summary:
            modules = SUMMARY_MODULES + (TEST_MODULES if self.has_significance_tests else ())
            # What they import stays to the end: collections need not walk it (see gc_tuning).
            warm_up(modules, then=refreeze, after=self._llm_warm_up)

    def _prepare_llm(self) -> None:
        from pytest_lens.plugin.gc_tuning import refreeze
        from pytest_lens.plugin.warm_up import ANSWER_MODULES, import_quietly

        endpoint = self.llm.endpoint
        with contextlib.suppress(Exception):  # no openai, or a bad URL: the first request says so, where it is made
            endpoint.connect()
        refreeze()
        # Until then the processor is the first request's; afterwards the process mostly waits for the model.
        endpoint.requested.wait(_FIRST_REQUEST_WAIT_S)
        import_quietly(ANSWER_MODULES)
        refreeze()

    def _runner(self, runtime: LensRuntime) -> ConcurrentRunner:
        runner = self._runners.get(id(runtime))
        if runner is None:
            from pytest_lens.answering.concurrency import ConcurrentRunner

            runner = ConcurrentRunner(runtime, self.agent, scoring=self._scoring_for, finish=self._finish, concurrency=self.concurrency)
            runner.plan(self._planned, by_budget=self._plan_by_budget)
            self._runners[id(runtime)] = runner
        return runner

    def _scoring_for(self, case: LensCase) -> Scoring:
        return self.suites.scoring(case.scope.suite, self.scoring)

    def _finish(self, case: LensCase, result: QuestionResult, used: LLMCounts) -> QuestionResult:
        """``result`` with the judge that scored it and the LLM requests it made."""
        judge: str | None = None
        if result.skipped is None:
            if self._scoring_for(case) is self.scoring:
                judge = self._judge.name if self._judge is not None else None
            elif (suite_judge := self.suites.judge(case.scope.suite)) is not None:
                judge = suite_judge.name
        return result.model_copy(update={"judge": judge, "llm": used or None, "control": self._controls.get(case.adapter)})

    # -- judging -----------------------------------------------------------------------------
    def _make_judge(self) -> Judge | None:
        kind = self.settings.llm.judge
        if kind == "none":
            return None
        from pytest_lens.judging.judge import LLMJudge, OfflineJudge

        if kind == "offline":
            return OfflineJudge()
        client = self.llm.judge_client()
        if client is None:
            raise LensConfigError("--lens-judge=llm needs --lens-judge-model=NAME (or --lens-agent-model)")
        return LLMJudge(client, seed=self.settings.seed, max_tokens=self.settings.llm.judge_short_max_tokens)

    def _judging(self) -> tuple[tuple[QuestionScorer, ...], tuple[GroupMetric, ...]]:
        """The judge scorer and run-level metrics for ``--lens-judge`` (nothing for ``none``).

        ``--lens-scoring=v2`` scores V2's metrics instead (citation validity even without a judge), and asks the
        judge none of the paper's pairwise questions: they weigh nothing in V2's composite.
        """
        if self.settings.scoring == "v2":
            from pytest_lens.judging.v2 import V2Scorer

            return (V2Scorer(self._judge),), ()
        if self._judge is None:
            return (), ()
        from pytest_lens.judging.baseline import LLMBaseline, NaiveBaseline, OfflineBaseline
        from pytest_lens.judging.judge_scorer import JudgeScorer, longitudinal_advantage

        # The baseline is the same answerer without memory: the agent's model, or the offline composer.
        agent_client = self.llm.agent_client() if self.settings.agent == "llm" else None
        baseline: NaiveBaseline = (
            LLMBaseline(agent_client, context_tokens=self.settings.llm.context_tokens) if agent_client is not None else OfflineBaseline()
        )
        return (JudgeScorer(self._judge, baseline),), (longitudinal_advantage,)

    # -- collecting ----------------------------------------------------------------------
    def expect(self, cases: Iterable[LensCase]) -> None:
        """The cases selected to run; results missing at the end make the run incomplete."""
        for case in cases:
            self.expected[case.item_key] = case

    def record(self, result: QuestionResult) -> None:
        """Keep one question's result (one answer of it, with ``--lens-repeat``)."""
        self.results[result.item_key] = result
        self._derived.clear()

    def add_problems(self, problems: Iterable[str]) -> None:
        """Run-level problems found outside the results; each fails the verdict."""
        self.problems.extend(problems)
        self._derived.clear()

    def record_crash(self, case: LensCase, worker: str) -> None:
        """A case's test crashed the worker running it: it has no result, and the incomplete line says why."""
        self.crashed[case.item_key] = worker
        self._derived.clear()

    def ordered_results(self) -> list[QuestionResult]:
        """Results in case order (stable, whatever order the tests ran in); every repetition of a question."""
        order = {case.item_key: index for index, case in enumerate(self.cases)}
        return sorted(self.results.values(), key=lambda r: (order.get(r.item_key, len(order)), r.item_key))

    def scored_results(self) -> list[QuestionResult]:
        """What summaries and statistics count: one result per question (repetitions merged into their means)."""
        from pytest_lens.analysis.repetitions import collapse_repetitions

        return collapse_repetitions(self.ordered_results(), self.scoring.weights, self.scoring.gates)

    def incomplete(self) -> list[str]:
        """One line per (adapter, scope, budget) group with selected questions that produced no result."""
        missing: dict[str, int] = {}
        for key, case in self.expected.items():
            if key not in self.results:
                missing[case.group] = missing.get(case.group, 0) + 1
        if not missing:
            return []
        total = sum(missing.values())
        groups = ", ".join(f"{group} ({count})" for group, count in missing.items())
        crashed = [
            f"{case.id} ({worker})" for key, case in self.expected.items() if (worker := self.crashed.get(key)) and key not in self.results
        ]
        why = f"; {len(crashed)} of them crashed their xdist worker: {', '.join(crashed)}" if crashed else ""
        return [f"incomplete: {total} questions missing from groups {groups}{why}"]

    # -- verdict and reports ---------------------------------------------------------------
    def summaries(self) -> dict[str, AdapterSummary]:
        """Per (adapter, budget) verdicts on the LENS questions (sibling suites: :meth:`suite_summaries`).

        Each counts the selected questions that have no result.
        """
        lens_results = [r for r in self.ordered_results() if r.suite == LENS]
        if self.settings.repeat > 1:
            from pytest_lens.analysis.repetitions import summarize_repeated

            summaries = summarize_repeated(lens_results, self.scoring.weights, self.scoring.gates, self.group_metrics, self.headline)
        else:
            summaries = summarize(lens_results, self.scoring.weights, self.scoring.gates, self.group_metrics, self.headline)
        self._count_missing(summaries, LENS)
        mark_not_comparable(summaries, self.settings.max_fault_rate)
        return summaries

    def suite_summaries(self) -> dict[str, dict[str, AdapterSummary]]:
        """Per sibling suite, per (adapter, budget) summaries with the suite's own weights and metrics."""
        summaries = self.suites.summaries(self.scored_results())
        for suite, by_key in summaries.items():
            self._count_missing(by_key, suite)
            mark_not_comparable(by_key, self.settings.max_fault_rate)
        return summaries

    def _count_missing(self, summaries: dict[str, AdapterSummary], suite: str) -> None:
        for summary in summaries.values():
            summary.missing = sum(
                1
                for key, case in self.expected.items()
                if key not in self.results
                and case.scope.suite == suite
                and (case.adapter, case.budget.name) == (summary.adapter, summary.budget)
            )

    def lens_results(self) -> list[QuestionResult]:
        """The LENS questions' results (the statistics and baseline comparison cover these; sibling suites score apart)."""
        return [r for r in self.scored_results() if r.suite == LENS and r.measured]

    @property
    def has_significance_tests(self) -> bool:
        """Whether the summary runs paired tests (scipy): two adapters or more, or a ``--lens-baseline``."""
        return len(self.settings.adapters) > 1 or bool(self.settings.baseline)

    def statistics(self) -> RunStatistics:
        """Bootstrap CIs of the headline per adapter, paired tests between adapters, Kendall's W (seeded by ``--lens-seed``)."""
        if "statistics" not in self._derived:
            from pytest_lens.analysis.run import analyze_run

            headline = self.headline
            self._derived["statistics"] = analyze_run(
                self.lens_results(),
                headline.weights,
                headline.gates,
                seed=self.settings.seed,
                group_metrics=headline.group_metrics,
                score=headline.name,
            )
        statistics: RunStatistics = self._derived["statistics"]
        return statistics

    def comparison(self) -> BaselineComparison | None:
        """The run against ``--lens-baseline`` (``None`` without one)."""
        if self.baseline is None:
            return None
        if "comparison" not in self._derived:
            from pytest_lens.analysis.baseline import compare_with_baseline

            s = self.settings
            self._derived["comparison"] = compare_with_baseline(
                self.lens_results(),
                self._run_identity(),
                self.baseline.artifact,
                self.baseline.info,
                self.headline.weights,
                self.headline.gates,
                alpha=s.alpha,
                max_drop=s.max_drop,
                seed=s.seed,
                group_metrics=self.headline.group_metrics,
                score=self.headline.name,
            )
        comparison: BaselineComparison | None = self._derived["comparison"]
        return comparison

    def suite_statistics(self) -> dict[str, RunStatistics]:
        """Per sibling suite: score CIs per adapter and paired tests between adapters (seeded by ``--lens-seed``)."""
        if "suite_statistics" not in self._derived:
            self._derived["suite_statistics"] = self.suites.statistics(self.scored_results(), seed=self.settings.seed)
        found: dict[str, RunStatistics] = self._derived["suite_statistics"]
        return found

    def suite_comparisons(self) -> dict[str, BaselineComparison]:
        """Per sibling suite found in this run and in ``--lens-baseline``: the run against it."""
        if self.baseline is None:
            return {}
        if "suite_comparisons" not in self._derived:
            s = self.settings
            self._derived["suite_comparisons"] = self.suites.comparisons(
                self.scored_results(),
                self._run_identity(),
                self.baseline.artifact,
                self.baseline.info,
                alpha=s.alpha,
                max_drop=s.max_drop,
                seed=s.seed,
            )
        found: dict[str, BaselineComparison] = self._derived["suite_comparisons"]
        return found

    def sensitivity(self) -> Sensitivity | None:
        """``--lens-controls``: each user adapter against its controls and mutants (``None`` without controls)."""
        if not self._controls:
            return None
        if "sensitivity" not in self._derived:
            from pytest_lens.analysis.sensitivity import sensitivity

            headline = self.headline
            self._derived["sensitivity"] = sensitivity(
                self.lens_results(),
                headline.weights,
                headline.gates,
                alpha=self.settings.alpha,
                seed=self.settings.seed,
                group_metrics=headline.group_metrics,
                metric=headline.name,
            )
        found: Sensitivity | None = self._derived["sensitivity"]
        return found

    def gate_checks(self) -> list[GateCheck]:
        """Every active gate with its one-line explanation (the sibling suites' scores and comparisons included)."""
        from pytest_lens.analysis.gates import GatePolicy, check_gates
        from pytest_lens.analysis.summary import not_measured_counts

        s = self.settings
        suites = {f"{name}:{key}": summary for name, by_key in self.suite_summaries().items() for key, summary in by_key.items()}
        # The judge-failure gate shows where a judge runs, or where any scorer failed (a suite's mechanical judge too).
        judged = self._judge is not None or any(summary.scoring_failures for summary in [*self.summaries().values(), *suites.values()])
        policy = GatePolicy(
            fail_under=s.fail_under,
            compare_fail=s.compare_fail,
            compare_partial=s.compare_partial,
            alpha=s.alpha,
            max_drop=s.max_drop,
            judge_max_failures=s.llm.judge_max_failure_rate if judged else None,
            max_not_measured=s.llm.max_not_measured_rate if s.llm.configured else None,
            max_fault_rate=s.max_fault_rate,
        )
        results = self.ordered_results()
        not_measured = not_measured_counts([r for r in results if r.suite == LENS])
        for name in self.suites.suites:
            found = not_measured_counts([r for r in results if r.suite == name])
            not_measured.update({f"{name}:{key}": counts for key, counts in found.items()})
        return check_gates(
            self.summaries(),
            self.scoring.gates,
            policy,
            self.comparison(),
            suite_summaries=suites,
            suite_comparisons=self.suite_comparisons(),
            headline=self.headline.name,
            not_measured=not_measured,
        )

    def verdict(self) -> Verdict:
        """Exit status and reasons."""
        suites = {f"{name}:{key}": s for name, by_key in self.suite_summaries().items() for key, s in by_key.items()}
        verdict = Verdict.from_summaries({**self.summaries(), **suites}, [*self.incomplete(), *self.problems])
        return verdict.extended(check.reason for check in self.gate_checks() if not check.passed and check.kind != "hard")

    def report(self, encoding: str | None = "utf-8") -> LensReport:
        """The terminal summary (``encoding``: of the output, to choose arrows it can show)."""
        sections: list[ReportSection] = [RunNotes(notes)] if (notes := self._notes()) else []
        sections.extend(
            self.suites.reports(
                self.scored_results(),
                self.agent.description,
                statistics=self.suite_statistics(),
                comparisons=self.suite_comparisons(),
                alpha=self.settings.alpha,
                gating=self.settings.compare_fail,
                encoding=encoding,
            )
        )
        statistics = self.statistics() if self.lens_results() else None
        if statistics is not None:
            from pytest_lens.reports.render import statistics_section

            sections.append(statistics_section(statistics, self.comparison(), self.settings.alpha, self.settings.compare_fail, encoding))
        if (found := self.sensitivity()) is not None and found.rows:
            from pytest_lens.reports.render import LinesSection, arrows_for, sensitivity_lines

            sections.append(LinesSection(sensitivity_lines(found, arrows_for(encoding))))
        if self.settings.repeat > 1:
            from pytest_lens.analysis.repetitions import RepetitionSection

            sections.append(RepetitionSection(self.repetition_variance()))
        return LensReport(
            self.summaries(),
            header=self._header(),
            warnings=self._warnings(),
            verdict=self.verdict(),
            sections=sections,
            statistics=statistics,
            gates=[check.line for check in self.gate_checks()],
            legend=self._legend(),
        )

    def _legend(self) -> list[str]:
        from pytest_lens.analysis.format import DETAIL_METRICS
        from pytest_lens.reports.legend import legend_lines

        # The adapter table's metric columns (retrieval and evidence metrics are in the metric table).
        metrics = {name for summary in self.summaries().values() for name in summary.metrics} - DETAIL_METRICS
        return legend_lines(metrics, self.scoring.weights, self.scoring.gates) if metrics else []

    # -- where to look next: the worst questions and the HTML report ---------------------
    def worst_questions(self) -> WorstQuestions:
        """The summary block naming each adapter's worst questions and where their transcripts are."""
        from pytest_lens.records.results import ScopeEvidence
        from pytest_lens.reports.views.transcript import build_transcripts
        from pytest_lens.reports.views.worst import SUMMARY_WORST, WorstQuestions, worst

        lengths = {scope.scope_id: ScopeEvidence(episodes=len(scope.stream)) for scope in self.scopes}
        items = build_transcripts(self.ordered_results(), lengths, self.scoring.gates)
        return WorstQuestions(worst(items, SUMMARY_WORST), json_path=self.settings.json_path, html_path=self.settings.html_path)

    def write_html(self, path: Path) -> int:
        """Write the HTML report of this run (with per-question deltas against ``--lens-baseline``); its size in bytes."""
        from pytest_lens.reports.html.page import render_report

        baseline = self.baseline
        text = render_report(
            self.artifact(),
            baseline=baseline.artifact if baseline is not None else None,
            baseline_name=baseline.info.name if baseline is not None else None,
        )
        data = text.encode("utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return len(data)

    def repetition_variance(self) -> list[RepetitionVariance]:
        """With ``--lens-repeat``: per (adapter, budget), how much of the LENS scores' variance is within questions."""
        from pytest_lens.analysis.repetitions import repetition_variance

        lens = [r for r in self.ordered_results() if r.suite == LENS]
        return repetition_variance(lens, self.scoring.weights, self.scoring.gates)

    def run_store(self) -> RunStore:
        """Saved runs (``--lens-storage``, default ``.lens`` in the rootdir)."""
        from pytest_lens.runs.storage import RunStore

        root = self.settings.storage
        return RunStore(root if root.is_absolute() else self.settings.rootdir / root)

    def save_run(self) -> Path | None:
        """Save the artifact under ``--lens-save``'s name; the path, or ``None`` when not asked to or nothing ran.

        An incomplete run (interrupted, stopped by ``-x``/``--maxfail``, a crashed worker) is not saved: saved under
        the name, it would *be* that baseline from then on, and later runs would be compared on its few questions.
        """
        name = self.settings.save_name
        if not name or not self.results:
            return None
        missing = sum(1 for key in self.expected if key not in self.results)
        if missing:
            from pytest_lens.runs.storage import SavedRunError

            raise SavedRunError(
                f"not saved as {name!r}: the run is incomplete ({missing} of {len(self.expected)} selected questions have no "
                f"result), and a partial run would become baseline {name!r}; rerun it to the end (the --lens-json artifact, "
                "if asked for, has what did run)"
            )
        return self.run_store().save(self.artifact(), name)

    def llm_counts(self) -> LLMCounts:
        """LLM requests over every recorded result (all processes)."""
        total = LLMCounts()
        for result in self.results.values():
            if result.llm is not None:
                total = total + result.llm
        return total

    def _notes(self) -> list[str]:
        notes = []
        if self._judge is not None:
            judged = list(self.summaries().items())
            for suite, by_key in self.suite_summaries().items():
                suite_judge = self.suites.judge(suite)
                if suite_judge is not None and suite_judge.name == "llm":
                    judged.extend((f"{suite}:{key}", s) for key, s in by_key.items())
            failures = ", ".join(f"{key} {s.scoring_failures}/{s.n_questions}" for key, s in judged)
            notes.append(f"judge failures (questions with a metric left absent): {failures or 'none'}")
        counts = self.llm_counts()
        if counts:
            cache = self.llm.settings.cache_mode
            where = f", {self.llm.cache.path}" if cache != "off" else ""
            notes.append(
                f"llm requests: {counts.requests} (cache {cache}{where}: {counts.cache_hits} hits, {counts.cache_misses} misses"
                + (f", {counts.corrupted_entries} corrupted entries ignored" if counts.corrupted_entries else "")
                + f"); http requests {counts.http_requests}, retries {counts.retries}"
                + (f" ({counts.bad_responses} bad 200 responses: not JSON or cut off)" if counts.bad_responses else "")
                + f", failures {counts.failures}"
            )
        notes.extend(llm_agent_notes(self.ordered_results()))
        notes.extend(cut_answer_notes(self.ordered_results()))
        skipped: dict[str, tuple[set[tuple[str, str, str, str]], str]] = {}
        for result in self.results.values():
            if result.skipped is not None:  # questions, not their repetitions
                skipped.setdefault(result.adapter, (set(), result.skipped))[0].add(result.key)
        notes.extend(f"skipped {adapter} ({len(keys)} questions): {reason}" for adapter, (keys, reason) in skipped.items())
        return notes

    def artifact(self, *, statistics: bool = True) -> RunArtifact:
        """The ``--lens-json`` document, built once per set of results.

        The JSON file, the HTML report and the saved run are one document (one ``created`` time), and
        building it twice (every result validated, every cited episode collected, ``git`` asked for
        the commit) was most of what writing a second one cost. Without ``statistics``: no statistics,
        comparison or verdict (nothing imports numpy; see :data:`PENDING`), built afresh.
        """
        if not statistics:
            return self._build_artifact(statistics=False)
        if "artifact" not in self._derived:
            self._derived["artifact"] = self._build_artifact()
        artifact: RunArtifact = self._derived["artifact"]
        return artifact

    def _build_artifact(self, *, statistics: bool = True) -> RunArtifact:
        from pytest_lens import __version__
        from pytest_lens.runs.storage import commit_info, machine_info

        measured: dict[str, Any] = (
            {  # computing these imports numpy (and scipy for paired tests)
                "statistics": self.statistics() if self.lens_results() else None,
                "comparison": self.comparison(),
                "suite_statistics": self.suite_statistics(),
                "suite_comparisons": self.suite_comparisons(),
                "verdict": self.recorded_verdict(),
                "sensitivity": self.sensitivity(),
                "repetitions": self.repetition_variance() if self.settings.repeat > 1 else [],
            }
            if statistics
            else {"pending": PENDING}
        )
        return RunArtifact(
            pytest_lens_version=__version__,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            run=self._run_identity(),
            results=self.ordered_results(),
            summary=self.summaries(),
            incomplete=self.incomplete(),
            dataset_warnings=self._warnings(),
            suite_summaries=self.suite_summaries(),
            machine=machine_info(),
            commit=commit_info(self.settings.rootdir),
            evidence=collect_evidence(self.results.values(), self.scopes),
            **measured,
        )

    def recorded_verdict(self) -> RecordedVerdict:
        """The verdict and gate lines as the artifact keeps them."""
        verdict = self.verdict()
        return RecordedVerdict(exit_code=verdict.exit_code, reasons=list(verdict.reasons), gates=[c.line for c in self.gate_checks()])

    def write_artifact(self, path: Path, *, statistics: bool = True) -> None:
        """Write the artifact as indented JSON (``statistics=False``: the copy written before them, see :meth:`artifact`).

        Written to a temporary file first, then renamed: a process that dies meanwhile leaves the earlier copy whole.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(self.artifact(statistics=statistics).model_dump_json(indent=2) + "\n", encoding="utf-8")
        os.replace(partial, path)

    def write_artifact_first(self, path: Path) -> None:
        """Write the artifact without statistics, before they are computed (see :data:`PENDING`); nothing when nothing ran."""
        if self.results:
            self.write_artifact(path, statistics=False)

    def _run_identity(self) -> dict[str, object]:
        return {
            "agent": {"name": self.agent.name, "description": self.agent.description},
            "judge": {"name": self._judge.name, "description": self._judge.description} if self._judge is not None else None,
            "suite_judges": {name: vars(judge) for name in self.suites.suites if (judge := self.suites.judge(name)) is not None},
            "llm": self._llm_identity(),
            "budgets": [vars(budget) for budget in self.budgets],
            "adapters": [
                {"label": s.label, "target": s.target, "options": dict(s.options)} | ({"control": vars(s.control)} if s.control else {})
                for s in self.adapter_specs
            ],
            "datasets": [
                {"path": d.path, "sha256": d.sha256, "suite": d.dataset.suite, "scopes": [s.scope_id for s in d.scopes]}
                for d in self.datasets
            ],
            "weights": dict(self.scoring.weights),
            "gates": [f"{gate.metric} < {gate.threshold:g}" for gate in self.scoring.gates],
            "headline": self.headline.identity(),
            "seed": self.settings.seed,
            "repeat": self.settings.repeat,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        }

    def _llm_identity(self) -> dict[str, object] | None:
        llm = self.llm.settings
        if not llm.configured:
            return None
        return {
            "base_url": display_url(llm.base_url),
            "agent_model": llm.agent_model,
            "judge_model": llm.effective_judge_model,
            "api_key_env": llm.api_key_env,
            "cache_mode": llm.cache_mode,
            "requests": vars(self.llm_counts()),
        }

    def _header(self) -> list[str]:
        n_episodes = sum(len(s.stream) for s in self.scopes)
        n_questions = sum(len(s.questions) for s in self.scopes)
        names = ", ".join(Path(d.path).name for d in self.datasets)
        judge = self._judge.description if self._judge is not None else "none (tier-2/3 metrics absent)"
        # Sibling suites judge their own questions (their sections say how): name them, don't credit LENS's judge.
        suite_judges = [f"{name} {suite_judge.name}" for name in self.suites.suites if (suite_judge := self.suites.judge(name))]
        if suite_judges:
            lens = f"LENS {judge}; " if any(scope.suite == LENS for scope in self.scopes) else ""
            judge = f"{lens}{', '.join(suite_judges)} (see each suite's section)"
        return [
            f"agent: {self.agent.description}; judge: {judge}",
            "budget: " + "; ".join(budget.describe() for budget in self.budgets),
            f"data: {len(self.scopes)} scope(s), {n_episodes} episodes, {n_questions} questions ({names})",
            *self._headline_lines(),
        ]

    def _headline_lines(self) -> list[str]:
        """What the headline column is, and how the paper's composite is shown beside it."""
        lines = [f"headline: {self.headline.description}"]
        if not self.headline.is_composite:
            tier = "" if self._judge is not None else " (tier-1 only: no judge, tiers 2-3 absent)"
            lines.append(f"  beside it: the LENS paper's composite{tier}; --lens-headline=composite makes it the headline")
        return lines

    def _warnings(self) -> list[str]:
        """Dataset defects that touch this run's selected questions.

        A file's own defects when any of its questions was selected (``-k`` and friends leave the
        others out), and a question's defects only when that question was.
        """
        if not self.expected:
            return [str(issue) for dataset in self.datasets for issue in dataset.warnings]
        files = {case.scope.source for case in self.expected.values()}
        questions = {(case.scope.source, case.question.question_id) for case in self.expected.values()}
        return [
            str(issue)
            for dataset in self.datasets
            if dataset.path in files or not dataset.scopes  # a skipped scope directory has no questions to select
            for issue in dataset.warnings
            if issue.question_id is None or (dataset.path, issue.question_id) in questions
        ]


@dataclass(frozen=True)
class RunNotes:
    """Lines printed after the tables: judge failures, LLM request counts, skipped adapters."""

    lines: list[str]


def llm_agent_notes(results: list[QuestionResult]) -> list[str]:
    """Per adapter: questions not measured (and the first error), and LLM agents that never called a tool.

    A model that never calls a tool answers from nothing: every memory scores alike, and the cause is
    the server (no tool calling, or tools left out of the prompt), not the memory.
    """
    notes = []
    by_adapter: dict[str, list[QuestionResult]] = {}
    for result in results:
        if result.skipped is None:
            by_adapter.setdefault(result.adapter, []).append(result)
    for adapter, members in by_adapter.items():
        unmeasured = [r for r in members if r.not_measured is not None]
        if unmeasured:
            notes.append(
                f"not measured {adapter} ({len(unmeasured)} of {len(members)} questions; no score, left out of composites and "
                f"statistics): {unmeasured[0].not_measured}"
            )
        measured = [r for r in members if r.measured]
        if measured and all(r.agent == "llm" for r in measured) and not any(r.tool_calls for r in measured):
            notes.append(
                f"warning: {adapter}: the model never called a tool on any of its {len(measured)} questions — does the server "
                "support tool calling? (llama.cpp: a chat format with function calling, e.g. --chat_format chatml-function-calling)"
            )
    return notes


def cut_answer_notes(results: list[QuestionResult]) -> list[str]:
    """Per adapter: answers longer than :data:`~pytest_lens.records.results.ANSWER_CHARS`, stored cut (scored whole)."""
    from pytest_lens.records.results import ANSWER_CHARS

    cut: dict[str, list[int]] = {}
    for result in results:
        if result.answer_chars is not None:
            cut.setdefault(result.adapter, []).append(result.answer_chars)
    return [
        f"answers cut {adapter} ({len(lengths)} answer(s) of up to {max(lengths):,} characters): scored whole, stored as their "
        f"first {ANSWER_CHARS:,} characters (artifact, transcripts; answer_chars holds the full length)"
        for adapter, lengths in cut.items()
    ]


def _check_llm_settings(settings: LensSettings) -> None:
    """An LLM agent or judge needs a model; say which option to pass."""
    llm = settings.llm
    if settings.agent == "llm" and not llm.agent_model:
        raise LensConfigError("--lens-agent=llm needs --lens-agent-model=NAME (and --lens-llm-base-url for a non-OpenAI endpoint)")
    if llm.judge == "llm" and not llm.effective_judge_model:
        raise LensConfigError("--lens-judge=llm needs --lens-judge-model=NAME (or --lens-agent-model)")


def _check_repeat(settings: LensSettings, datasets: list[LoadedDataset]) -> None:
    """``--lens-repeat`` needs scores that average: MEME's trivial-pass filter pairs single before/after answers."""
    if settings.repeat > 1 and any(dataset.dataset.suite == "meme" for dataset in datasets):
        raise LensConfigError(
            f"--lens-repeat={settings.repeat}: MEME's trivial-pass filter pairs one answer to a before-probe with one to its "
            "after-probe, so its questions cannot be repeated; run MEME without --lens-repeat (or leave out its datasets)"
        )
