"""What a run shows: the terminal summary's lines, the notes under its tables, the worst questions, the HTML report.

:class:`RunOutcome` is what a finished run hands the pytest layer: the lines to print and one exit code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_lens.analysis.format import DETAIL_METRICS
from pytest_lens.analysis.repetitions import RepetitionSection
from pytest_lens.records.results import ANSWER_CHARS, LENS, QuestionResult, RunArtifact, ScopeEvidence
from pytest_lens.records.statistics import JudgeAgreement
from pytest_lens.reports.legend import legend_lines
from pytest_lens.reports.terminal import LensReport, ReportSection
from pytest_lens.reports.views.transcript import build_transcripts
from pytest_lens.reports.views.worst import SUMMARY_WORST, WorstQuestions, agent_gated, worst
from pytest_lens.runs.analysis import RunAnalysis
from pytest_lens.runs.storage import write_whole

__all__ = ["Line", "RunNotes", "RunOutcome", "RunReport", "cut_answer_notes", "llm_agent_notes", "write_html"]


@dataclass(frozen=True)
class Line:
    """One line of the summary and how the terminal marks it up (``red``, ``green``, ``bold``...)."""

    text: str
    markup: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class RunOutcome:
    """A finished run: the LENS summary's lines (none when no LENS question was selected) and one exit code.

    ``exit_code`` is 1 when the verdict failed or an output (artifact, HTML report, saved run) could not be
    written; ``reasons`` are the verdict's, which pytest's closing line counts as failed gates.
    """

    lines: list[Line]
    exit_code: int
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunNotes:
    """Lines printed after the tables: judge failures, LLM request counts, skipped adapters."""

    lines: list[str]


class RunReport:
    """The terminal summary of one :class:`~pytest_lens.runs.analysis.RunAnalysis`."""

    def __init__(self, analysis: RunAnalysis) -> None:
        self.analysis = analysis
        self.setup = analysis.setup

    def summary(self, encoding: str | None = "utf-8") -> LensReport:
        """The terminal summary (``encoding``: of the output, to choose arrows it can show)."""
        analysis, settings = self.analysis, self.setup.settings
        sections: list[ReportSection] = [RunNotes(notes)] if (notes := self.notes()) else []
        sections.extend(
            self.setup.suites.reports(
                analysis.scored_results,
                self.setup.agent.description,
                statistics=analysis.suite_statistics,
                comparisons=analysis.suite_comparisons,
                alpha=settings.alpha,
                gating=settings.compare_fail,
                encoding=encoding,
                ceilings=analysis.suite_ceilings,
            )
        )
        statistics = analysis.statistics if analysis.lens_results else None
        # The renderer is imported by the summary's warm-up, in the background, while the questions run.
        from pytest_lens.reports.render import LinesSection, arrows_for, ceiling_lines, sensitivity_lines, statistics_section

        if statistics is not None:
            sections.append(statistics_section(statistics, analysis.comparison, settings.alpha, settings.compare_fail, encoding))
        if (found := analysis.sensitivity) is not None and found.rows:
            sections.append(LinesSection(sensitivity_lines(found, arrows_for(encoding))))
        if (ceiling := analysis.ceiling) is not None:
            sections.append(LinesSection(ceiling_lines(ceiling)))
        if settings.repeat > 1:
            sections.append(RepetitionSection(analysis.repetition_variance))
        return LensReport(
            analysis.summaries,
            header=self.header(),
            warnings=analysis.warnings,
            verdict=analysis.verdict,
            sections=sections,
            statistics=statistics,
            gates=[check.line for check in analysis.gate_checks],
            legend=self.legend(),
        )

    def header(self) -> list[str]:
        """Agent, judge, budgets, data and headline."""
        setup = self.setup
        scopes = setup.scopes
        n_episodes = sum(len(s.stream) for s in scopes)
        n_questions = sum(len(s.questions) for s in scopes)
        names = ", ".join(Path(d.path).name for d in setup.datasets)
        judge = setup.judge.description if setup.judge is not None else "none (tier-2/3 metrics absent)"
        # Sibling suites judge their own questions (their sections say how): name them, don't credit LENS's judge.
        suite_judges = [f"{name} {suite_judge.name}" for name in setup.suites.suites if (suite_judge := setup.suites.judge(name))]
        if suite_judges:
            lens = f"LENS {judge}; " if any(scope.suite == LENS for scope in scopes) else ""
            judge = f"{lens}{', '.join(suite_judges)} (see each suite's section)"
        return [
            f"agent: {setup.agent.description}; judge: {judge}",
            "budget: " + "; ".join(budget.describe() for budget in setup.budgets),
            f"data: {len(scopes)} scope(s), {n_episodes} episodes, {n_questions} questions ({names})",
            *self.headline_lines(),
            *self.bootstrap_lines(),
            *(card.lines() if (card := self.analysis.identity.card) is not None else []),
        ]

    def bootstrap_lines(self) -> list[str]:
        """Which test and intervals the statistics use (``--lens-bootstrap``: the independent units), named whichever was chosen."""
        analysis, settings = self.analysis, self.setup.settings
        if not analysis.lens_results:
            return []
        from pytest_lens.analysis.run import MIN_CLUSTERS, paired_test_name
        from pytest_lens.analysis.stats import DEFAULT_RESAMPLES

        scopes = len({r.scope_id for r in analysis.lens_results})
        if analysis.clusters is not None:
            why = f"--lens-bootstrap={settings.bootstrap}" + (f": {MIN_CLUSTERS} or more scopes" if settings.bootstrap == "auto" else "")
            mode = "two-stage" if analysis.clusters.two_stage else "clustered"
            seeded = f"; {DEFAULT_RESAMPLES} resamples, seed {settings.seed}" if mode == "two-stage" else ""
            return [
                f"intervals and paired tests: {paired_test_name(mode, scopes)}{seeded} ({why}); "
                "--lens-bootstrap=plain treats questions as independent"
            ]
        why = f"--lens-bootstrap={settings.bootstrap}" + (
            f": {scopes} scope(s), fewer than {MIN_CLUSTERS} to cluster" if settings.bootstrap == "auto" else ""
        )
        return [f"intervals and paired tests: {paired_test_name('plain', scopes)} ({why})"]

    def headline_lines(self) -> list[str]:
        """What the headline column is, and how the paper's composite is shown beside it."""
        headline = self.setup.headline
        lines = [f"headline: {headline.description}"]
        if not headline.is_composite:
            tier = "" if self.setup.judge is not None else " (tier-1 only: no judge, tiers 2-3 absent)"
            lines.append(f"  beside it: the LENS paper's composite{tier}; --lens-headline=composite makes it the headline")
        return lines

    def legend(self) -> list[str]:
        """Weights, gates and abbreviations of the adapter table's metric columns."""
        # The adapter table's metric columns (retrieval and evidence metrics are in the metric table).
        metrics = {name for summary in self.analysis.summaries.values() for name in summary.metrics} - DETAIL_METRICS
        scoring = self.setup.scoring
        return legend_lines(metrics, scoring.weights, scoring.gates) if metrics else []

    def notes(self) -> list[str]:
        """Judge failures, LLM request counts, unmeasured and cut answers, skipped adapters."""
        analysis, setup = self.analysis, self.setup
        notes = []
        if setup.judge is not None:
            judged = list(analysis.summaries.items())
            for suite, by_key in analysis.suite_summaries.items():
                suite_judge = setup.suites.judge(suite)
                if suite_judge is not None and suite_judge.name == "llm":
                    judged.extend((f"{suite}:{key}", s) for key, s in by_key.items())
            failures = ", ".join(f"{key} {s.scoring_failures}/{s.n_questions}" for key, s in judged)
            notes.append(f"judge failures (questions with a metric left absent): {failures or 'none'}")
        notes.extend(judge_check_notes(analysis.judge_agreement))
        if analysis.judge_lean is not None:
            notes.append(f"WARNING judge: {analysis.judge_lean}")
        counts = analysis.llm_counts
        if counts:
            cache = setup.llm.settings.cache_mode
            where = f", {setup.llm.cache.path}" if cache != "off" else ""
            notes.append(
                f"llm requests: {counts.requests} (cache {cache}{where}: {counts.cache_hits} hits, {counts.cache_misses} misses"
                + (f", {counts.corrupted_entries} corrupted entries ignored" if counts.corrupted_entries else "")
                + f"); http requests {counts.http_requests}, retries {counts.retries}"
                + (f" ({counts.bad_responses} bad 200 responses: not JSON or cut off)" if counts.bad_responses else "")
                + (f", refused as too long {counts.context_refusals}" if counts.context_refusals else "")
                + f", recovered {counts.recovered} (answered after a retry or a trimmed resend), failures {counts.failures}"
            )
            capacity = setup.llm.endpoint.capacity
            queued = [r.queued_s for r in analysis.ledger.results.values()]
            if capacity is not None or any(queued):
                what = capacity.describe() if capacity is not None else "llm server"
                notes.append(
                    f"llm server: {what}; questions waited {sum(queued):.1f} s in all for a free place (queued_s, not in their duration_s)"
                )
        notes.extend(llm_agent_notes(analysis.ordered_results))
        notes.extend(cut_answer_notes(analysis.ordered_results))
        skipped: dict[str, tuple[set[tuple[str, str, str, str]], str]] = {}
        for result in analysis.ledger.results.values():
            if result.skipped is not None:  # questions, not their repetitions
                skipped.setdefault(result.adapter, (set(), result.skipped))[0].add(result.key)
        notes.extend(f"skipped {adapter} ({len(keys)} questions): {reason}" for adapter, (keys, reason) in skipped.items())
        return notes

    def worst_questions(self, *, html: bool = True, json: bool = True) -> WorstQuestions:
        """The summary block naming each adapter's worst questions and where their transcripts are.

        ``html`` / ``json``: whether the HTML report / artifact (when asked for) was written, so worth pointing to.
        """
        settings = self.setup.settings
        lengths = {scope.scope_id: ScopeEvidence(episodes=len(scope.stream)) for scope in self.setup.scopes}
        items = build_transcripts(self.analysis.ordered_results, lengths, self.setup.scoring.gates, self.analysis.question_headlines)
        return WorstQuestions(
            worst(items, SUMMARY_WORST),
            json_path=settings.json_path if json else None,
            html_path=settings.html_path if html else None,
            saved_name=settings.save_name,
            agent=agent_gated(items),
        )


def write_html(path: Path, artifact: RunArtifact, analysis: RunAnalysis) -> int:
    """Write the HTML report of ``artifact`` (with per-question deltas against ``--lens-baseline``); its size in bytes."""
    from pytest_lens.reports.html.page import render_report  # markupsafe, and the page builder

    baseline = analysis.setup.baseline
    text = render_report(
        artifact,
        baseline=baseline.artifact if baseline is not None else None,
        baseline_name=baseline.info.name if baseline is not None else None,
    )
    data = text.encode("utf-8")
    write_whole(path, data)  # a full disk leaves no truncated report behind
    return len(data)


def judge_check_notes(agreement: JudgeAgreement | None) -> list[str]:
    """``--lens-judge-check``: the second judge, its agreement with the run's judge, and the warning below the threshold."""
    if agreement is None:
        return []
    kappa = f"{agreement.kappa:.2f}" if agreement.kappa is not None else "undefined (one verdict throughout)"
    exact = f"{agreement.agreement:.0%}" if agreement.agreement is not None else "-"
    bias = (
        f"{agreement.positional_bias:.0%} of {agreement.positional_comparisons} decided swapped verdicts"
        if agreement.positional_bias is not None
        else "not measurable (no decided swapped verdicts)"
    )
    failed = f", {agreement.failed} failed" if agreement.failed else ""
    lines = [
        f"judge check: {agreement.comparisons} judgments of {agreement.answers} answers graded again by {agreement.check}{failed}; "
        f"Cohen's kappa {kappa}, exact agreement {exact}, positional bias {bias}"
    ]
    if agreement.warning:
        lines.append(f"WARNING judge check: {agreement.warning}")
    return lines


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
        if measured and all(r.agent == "llm" for r in measured) and not any(r.tool_call_count for r in measured):
            notes.append(
                f"warning: {adapter}: the model never called a tool on any of its {len(measured)} questions — does the server "
                "support tool calling? (llama.cpp's llama-server: --jinja with a chat template that renders tools, e.g. "
                "--chat-template-file; llama-cpp-python: --chat_format chatml-function-calling; vLLM: --enable-auto-tool-choice "
                "--tool-call-parser; Ollama: a model whose template has tools; see docs/servers/)"
            )
    return notes


def cut_answer_notes(results: list[QuestionResult]) -> list[str]:
    """Per adapter: answers longer than :data:`~pytest_lens.records.results.ANSWER_CHARS`, stored cut (scored whole)."""
    cut: dict[str, list[int]] = {}
    for result in results:
        if result.answer_chars is not None:
            cut.setdefault(result.adapter, []).append(result.answer_chars)
    return [
        f"answers cut {adapter} ({len(lengths)} answer(s) of up to {max(lengths):,} characters): scored whole, stored as their "
        f"first {ANSWER_CHARS:,} characters (artifact, transcripts; answer_chars holds the full length)"
        for adapter, lengths in cut.items()
    ]
