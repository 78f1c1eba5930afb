"""What a run's results add up to: summaries, statistics, baseline comparisons, sensitivity, gates and the verdict.

:class:`RunAnalysis` is computed over one state of the ledger; each figure is computed once, when first asked for
(the statistics import numpy, paired tests scipy: a run that never asks never pays), and a changed ledger gets a
new analysis.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pytest_lens.analysis.gates import GateCheck, GatePolicy, check_gates
from pytest_lens.analysis.repetitions import collapse_repetitions, repetition_variance, summarize_repeated
from pytest_lens.analysis.summary import fault_counts, mark_not_comparable, not_measured_counts, summarize
from pytest_lens.llm.api_keys import mask_data, mask_secrets, masked_options
from pytest_lens.llm.settings import display_url
from pytest_lens.llm.stats import LLMCounts
from pytest_lens.records.card import SelectedQuestion
from pytest_lens.records.identity import AgentIdentity, RunIdentity
from pytest_lens.records.options import ACCEPT_UNLIKE
from pytest_lens.records.results import LENS, AdapterSummary, QuestionResult, RecordedVerdict
from pytest_lens.reports.terminal import Verdict
from pytest_lens.runs.ledger import ResultLedger
from pytest_lens.runs.setup import RunSetup
from pytest_lens.runs.slicing import settings_record
from pytest_lens.scoring.headline import QuestionHeadlines

if TYPE_CHECKING:
    from pytest_lens.analysis.run import ScopeClusters
    from pytest_lens.records.statistics import (
        BaselineComparison,
        Ceiling,
        JudgeAgreement,
        RepetitionVariance,
        RunStatistics,
        Sensitivity,
    )
    from pytest_lens.runs.slicing import RunSlice

__all__ = ["RunAnalysis"]


@dataclass(frozen=True)
class _Selected:
    """A selected case as the comparability card reads it."""

    scope_id: str
    question_id: str
    question_type: str


class RunAnalysis:
    """The run's figures over the ledger as it is now (build a new one when it changes)."""

    def __init__(self, setup: RunSetup, ledger: ResultLedger, part: RunSlice | None = None, merged_from: list[str] | None = None) -> None:
        self.setup = setup
        self.ledger = ledger
        self.version = ledger.version
        #: ``--lens-shard`` / ``--lens-resume`` (recorded in the identity), and ``lens merge``'s shards.
        self.part = part
        self.merged_from = merged_from

    @cached_property
    def ordered_results(self) -> list[QuestionResult]:
        """Results in case order; every repetition of a question."""
        return self.ledger.ordered_results()

    @cached_property
    def scored_results(self) -> list[QuestionResult]:
        """What summaries and statistics count: one result per question (repetitions merged into their means)."""
        scoring = self.setup.scoring
        return collapse_repetitions(self.ordered_results, scoring.weights, scoring.gates)

    @cached_property
    def lens_results(self) -> list[QuestionResult]:
        """The LENS questions' results (the statistics and baseline comparison cover these; sibling suites score apart)."""
        return [r for r in self.scored_results if r.suite == LENS and r.measured]

    @cached_property
    def summaries(self) -> dict[str, AdapterSummary]:
        """Per (adapter, budget) verdicts on the LENS questions, each counting its selected questions without a result."""
        setup = self.setup
        lens_results = [r for r in self.ordered_results if r.suite == LENS]
        summarized = summarize_repeated if setup.settings.repeat > 1 else summarize
        found = summarized(lens_results, setup.scoring.weights, setup.scoring.gates, setup.group_metrics, setup.headline)
        self._count_missing(found, LENS)
        mark_not_comparable(found, setup.settings.max_fault_rate)
        return found

    @cached_property
    def suite_summaries(self) -> dict[str, dict[str, AdapterSummary]]:
        """Per sibling suite, per (adapter, budget) summaries with the suite's own weights and metrics."""
        found = self.setup.suites.summaries(self.scored_results)
        for suite, by_key in found.items():
            self._count_missing(by_key, suite)
            mark_not_comparable(by_key, self.setup.settings.max_fault_rate)
        return found

    @cached_property
    def flat_suite_summaries(self) -> dict[str, AdapterSummary]:
        """The sibling suites' summaries keyed ``suite:adapter[/budget]``, as gates and the verdict name them."""
        return {f"{name}:{key}": summary for name, by_key in self.suite_summaries.items() for key, summary in by_key.items()}

    def _count_missing(self, summaries: dict[str, AdapterSummary], suite: str) -> None:
        missing = [case for case in self.ledger.missing() if case.scope.suite == suite]
        for summary in summaries.values():
            summary.missing = sum(1 for case in missing if (case.adapter, case.budget.name) == (summary.adapter, summary.budget))

    @cached_property
    def statistics(self) -> RunStatistics:
        """Bootstrap CIs of the headline per adapter, paired tests between adapters, Kendall's W (seeded by ``--lens-seed``)."""
        from pytest_lens.analysis.run import analyze_run  # numpy (and scipy for paired tests)

        headline = self.setup.headline
        return analyze_run(
            self.lens_results,
            headline.weights,
            headline.gates,
            seed=self.setup.settings.seed,
            group_metrics=headline.group_metrics,
            score=headline.name,
            clusters=self.clusters,
            alpha=self.setup.settings.alpha,
        )

    @cached_property
    def clusters(self) -> ScopeClusters | None:
        """``--lens-bootstrap``: the scope of each question when CIs and paired tests resample scopes, else ``None``."""
        from pytest_lens.analysis.run import clusters_for

        return clusters_for(self.lens_results, self.setup.settings.bootstrap)

    @cached_property
    def comparison(self) -> BaselineComparison | None:
        """The run against ``--lens-baseline`` (``None`` without one)."""
        baseline = self.setup.baseline
        if baseline is None:
            return None
        from pytest_lens.analysis.baseline import compare_with_baseline  # numpy, scipy

        s, headline = self.setup.settings, self.setup.headline
        return compare_with_baseline(
            self.lens_results,
            self.identity,
            baseline.artifact,
            baseline.info,
            headline.weights,
            headline.gates,
            alpha=s.alpha,
            max_drop=s.max_drop,
            seed=s.seed,
            group_metrics=headline.group_metrics,
            score=headline.name,
            clusters=self.clusters,
            margin=s.margin,
            accepted=s.accept_unlike,
        )

    @cached_property
    def suite_statistics(self) -> dict[str, RunStatistics]:
        """Per sibling suite: score CIs per adapter and paired tests between adapters (seeded by ``--lens-seed``)."""
        return self.setup.suites.statistics(self.scored_results, seed=self.setup.settings.seed)

    @cached_property
    def suite_comparisons(self) -> dict[str, BaselineComparison]:
        """Per sibling suite found in this run and in ``--lens-baseline``: the run against it."""
        baseline = self.setup.baseline
        if baseline is None:
            return {}
        s = self.setup.settings
        found = (self.scored_results, self.identity, baseline.artifact, baseline.info)
        return self.setup.suites.comparisons(*found, alpha=s.alpha, max_drop=s.max_drop, seed=s.seed, accepted=s.accept_unlike)

    @cached_property
    def sensitivity(self) -> Sensitivity | None:
        """``--lens-controls``: each user adapter against its controls and mutants (``None`` without controls)."""
        if not self.setup.controls:
            return None
        from pytest_lens.analysis.sensitivity import sensitivity  # numpy, scipy

        headline = self.setup.headline
        return sensitivity(
            self.lens_results,
            headline.weights,
            headline.gates,
            alpha=self.setup.settings.alpha,
            seed=self.setup.settings.seed,
            group_metrics=headline.group_metrics,
            metric=headline.name,
            clusters=self.clusters,
        )

    @cached_property
    def question_headlines(self) -> QuestionHeadlines:
        """Each question's headline: LENS's, or its sibling suite's."""
        headline = self.setup.headline
        return QuestionHeadlines(headline.weights, headline.gates, self.setup.suites.retrieval)

    @cached_property
    def ceiling(self) -> Ceiling | None:
        """With the oracle: the LENS headline's floor and ceiling, each adapter between them (``None`` without an oracle)."""
        if not self._has_oracle or not self.lens_results:
            return None
        from pytest_lens.analysis.ceiling import ceiling  # numpy

        return ceiling(self.lens_results, self.question_headlines, metric=self.setup.headline.name, units=self.clusters)

    @cached_property
    def suite_ceilings(self) -> dict[str, Ceiling]:
        """With the oracle: per sibling suite, the floor and ceiling of its headline."""
        if not self._has_oracle:
            return {}
        from pytest_lens.analysis.ceiling import ceiling  # numpy

        suites, out = self.setup.suites, {}
        for name in suites.suites:
            members = [r for r in self.scored_results if r.suite == name]
            found = ceiling(members, self.question_headlines, metric=suites.headline(name).name)
            if found is not None:
                out[name] = found
        return out

    @property
    def _has_oracle(self) -> bool:
        return any(role.kind == "oracle" for role in self.setup.controls.values())

    @cached_property
    def repetition_variance(self) -> list[RepetitionVariance]:
        """With ``--lens-repeat``: per (adapter, budget), how much of the LENS scores' variance is within questions."""
        lens = [r for r in self.ordered_results if r.suite == LENS]
        return repetition_variance(lens, self.setup.scoring.weights, self.setup.scoring.gates)

    @cached_property
    def judge_agreement(self) -> JudgeAgreement | None:
        """``--lens-judge-check``: the judge against its second judge on the sampled answers (``None`` without the option)."""
        from pytest_lens.judging.judge_scorer import JudgeScorer

        checker = next((s for s in self.setup.scoring.scorers if isinstance(s, JudgeScorer) and s.check is not None), None)
        if checker is None or checker.check is None:
            return None
        from pytest_lens.analysis.agreement import judge_agreement

        checked = [r.scorer_details.get("judge", {}).get("judge_check") for r in self.ordered_results]
        pairs = [pair for entries in checked if isinstance(entries, list) for pair in entries]
        return judge_agreement(
            pairs,
            answers=sum(1 for entries in checked if isinstance(entries, list)),
            judge=checker.judge.description,
            check=checker.check.description,
            min_kappa=self.setup.settings.llm.judge_check_min_kappa,
        )

    @cached_property
    def judge_lean(self) -> str | None:
        """A warning when the run's judge names one position whatever was shown there (see ``position_lean``)."""
        from pytest_lens.analysis.agreement import position_lean

        judgments = [r.scorer_details.get("judge", {}).get("judgments") for r in self.ordered_results]
        return position_lean(entry for entries in judgments if isinstance(entries, list) for entry in entries)

    @cached_property
    def gate_checks(self) -> list[GateCheck]:
        """Every active gate with its one-line explanation (the sibling suites' scores and comparisons included)."""
        s = self.setup.settings
        suites = self.flat_suite_summaries
        # The judge-failure gate shows where a judge runs, or where any scorer failed (a suite's mechanical judge too).
        judged = self.setup.judge is not None or any(summary.scoring_failures for summary in [*self.summaries.values(), *suites.values()])
        policy = GatePolicy(
            fail_under=s.fail_under,
            compare_fail=s.compare_fail,
            compare_partial=s.compare_partial,
            alpha=s.alpha,
            max_drop=s.max_drop,
            margin=s.margin,
            judge_max_failures=s.llm.judge_max_failure_rate if judged else None,
            max_not_measured=s.llm.max_not_measured_rate if s.llm.configured else None,
            max_fault_rate=s.max_fault_rate,
        )
        results = self.ordered_results
        not_measured = not_measured_counts([r for r in results if r.suite == LENS])
        faults = fault_counts([r for r in results if r.suite == LENS])
        for name in self.setup.suites.suites:
            found = not_measured_counts([r for r in results if r.suite == name])
            not_measured.update({f"{name}:{key}": counts for key, counts in found.items()})
            faults.update({f"{name}:{key}": counts for key, counts in fault_counts([r for r in results if r.suite == name]).items()})
        return check_gates(
            self.summaries,
            self.setup.scoring.gates,
            policy,
            self.comparison,
            suite_summaries=suites,
            suite_comparisons=self.suite_comparisons,
            headline=self.setup.headline.name,
            not_measured=not_measured,
            faults=faults,
        )

    @cached_property
    def verdict(self) -> Verdict:
        """Exit status and reasons."""
        verdict = Verdict.from_summaries({**self.summaries, **self.flat_suite_summaries}, [*self.incomplete, *self.ledger.problems])
        return verdict.extended(check.reason for check in self.gate_checks if not check.passed and check.kind != "hard").noted(
            self.unlike_notes
        )

    @cached_property
    def unlike_notes(self) -> list[str]:
        """What the verdict says when the baseline differs in a refusing field that ``--lens-accept-unlike`` accepted."""
        accepted = [line for found in [self.comparison, *self.suite_comparisons.values()] if found for line in found.accepted_unlike]
        if not accepted or self.setup.baseline is None:
            return []
        option = f"{ACCEPT_UNLIKE}={','.join(self.setup.settings.accept_unlike)}"
        lines = "; ".join(dict.fromkeys(accepted))
        return [f"compared with an unlike baseline {self.setup.baseline.info.name}, accepted by {option}: {lines}"]

    @cached_property
    def recorded_verdict(self) -> RecordedVerdict:
        """The verdict and gate lines as the artifact keeps them."""
        verdict = self.verdict
        return RecordedVerdict(
            exit_code=verdict.exit_code, reasons=list(verdict.reasons), gates=[c.line for c in self.gate_checks], notes=list(verdict.notes)
        )

    @cached_property
    def incomplete(self) -> list[str]:
        """One line per (adapter, scope, budget) group with selected questions that produced no result."""
        return self.ledger.incomplete()

    @cached_property
    def llm_counts(self) -> LLMCounts:
        """LLM requests over every recorded result (all processes)."""
        total = LLMCounts()
        for result in self.ledger.results.values():
            if result.llm is not None:
                total = total + result.llm
        return total

    @cached_property
    def warnings(self) -> list[str]:
        """Dataset defects that touch this run's selected questions.

        A file's own defects when any of its questions was selected (``-k`` and friends leave the
        others out), and a question's defects only when that question was.
        """
        expected, datasets = self.ledger.expected, self.setup.datasets
        if not expected:
            return [str(issue) for dataset in datasets for issue in dataset.warnings]
        files = {case.scope.source for case in expected.values()}
        questions = {(case.scope.source, case.question.question_id) for case in expected.values()}
        return [
            str(issue)
            for dataset in datasets
            if dataset.path in files or not dataset.scopes  # a skipped scope directory has no questions to select
            for issue in dataset.warnings
            if issue.question_id is None or (dataset.path, issue.question_id) in questions
        ]

    @cached_property
    def identity(self) -> RunIdentity:
        """What this run measured and how, as the artifact records it (baseline comparisons check it)."""
        setup = self.setup
        agent, judge = setup.agent, setup.judge
        extra: dict[str, Any] = {"merged_from": self.merged_from} if self.merged_from else {}
        if setup.suites.suites:
            extra["suite_headlines"] = {name: setup.suites.headline(name) for name in setup.suites.suites}
        if self.part is not None:
            extra.update(mask_data(self.part.identity(self.ledger)))  # the shard's settings and paths: no secret in them
        identity = RunIdentity(
            agent=AgentIdentity(name=agent.name, description=agent.description),
            judge=AgentIdentity(name=judge.name, description=judge.description) if judge is not None else None,
            suite_judges={name: vars(found) for name in setup.suites.suites if (found := setup.suites.judge(name)) is not None},
            llm=self._llm_identity(),
            budgets=[vars(budget) for budget in setup.budgets],
            adapters=[
                {"label": s.label, "target": mask_secrets(s.target), "options": masked_options(s.options)}
                | ({"control": vars(s.control)} if s.control else {})
                for s in setup.adapter_specs
            ],
            datasets=[
                {"path": d.path, "sha256": d.sha256, "suite": d.dataset.suite, "scopes": [s.scope_id for s in d.scopes]}
                for d in setup.datasets
            ],
            weights=dict(setup.scoring.weights),
            gates=list(setup.scoring.gates),
            headline=setup.headline.identity(),
            seed=setup.settings.seed,
            repeat=setup.settings.repeat,
            python=sys.version.split()[0],
            platform=platform.platform(),
            settings=mask_data(settings_record(setup.settings)),
            **extra,
        )
        return identity.model_copy(
            update={"card": identity.derived_card(self._selected(), scoring=setup.settings.scoring, test=self.test_name)}
        )

    def _selected(self) -> list[SelectedQuestion]:
        """The questions of the run: those selected to run and those with a result (a resumed run's kept ones too)."""
        asked: list[SelectedQuestion] = [
            _Selected(c.scope.scope_id, c.question.question_id, c.question.question_type) for c in self.ledger.expected.values()
        ]
        return [*asked, *self.ledger.results.values()]

    @cached_property
    def test_name(self) -> str | None:
        """The paired test this run's comparisons use (``None`` before any LENS result)."""
        from pytest_lens.analysis.run import bootstrap_mode, paired_test_name

        if not self.lens_results:
            return None
        return paired_test_name(bootstrap_mode(self.clusters), len({r.scope_id for r in self.lens_results}))

    def _llm_identity(self) -> dict[str, object] | None:
        llm = self.setup.llm.settings
        if not llm.configured:
            return None
        return {
            "base_url": display_url(llm.base_url),
            "agent_model": llm.agent_model,
            "judge_model": llm.effective_judge_model,
            **({"judge_base_url": display_url(llm.judge_base_url)} if llm.judge_base_url else {}),
            "api_key_env": llm.api_key_env,
            "cache_mode": llm.cache_mode,
            "requests": vars(self.llm_counts),
        }
