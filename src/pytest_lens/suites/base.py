"""What a benchmark suite contributes to a run: scorers, weights, run-level metrics, a summary section.

LENS itself is the built-in suite and keeps its own tables; every other suite's questions flow through
the same runner, agents, collector and summaries, and are summarised separately here so that no suite
is scored with another's weights.

A suite's section has one headline, which its CIs, paired tests, baseline comparison, gates and worst
questions all use: its own score, or the retrieval score
(:func:`~pytest_lens.scoring.headline.suite_uses_retrieval` says which), the other one beside it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_lens.analysis.format import format_table
from pytest_lens.analysis.summary import metric_means, summarize, summary_key
from pytest_lens.records.results import AdapterSummary, GroupSummary, QuestionResult
from pytest_lens.scoring.composite import HardGate, composite
from pytest_lens.scoring.headline import RETRIEVAL_SCORE_WEIGHTS, Headline, retrieval_headline
from pytest_lens.scoring.scorer import GroupMetric, QuestionScorer, Scoring

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient
    from pytest_lens.records.statistics import BaselineComparison, Ceiling, RunStatistics

__all__ = [
    "MECHANICAL",
    "Suite",
    "SuiteAnalysis",
    "SuiteJudge",
    "SuiteJudging",
    "SuiteReport",
    "answered",
    "group_by_summary_key",
    "plain_type_summaries",
    "question_type",
    "summarize_suite",
    "type_summary",
]

TypeSummaries = Callable[[Sequence[QuestionResult]], dict[str, GroupSummary]]


@dataclass(frozen=True)
class SuiteJudge:
    """What scores a suite's questions in a run: ``name`` (``mechanical``, ``llm``) and a description for reports."""

    name: str
    description: str


#: The suites' own mechanical scorers (substring matches, SubEM, rule-based judges).
MECHANICAL = SuiteJudge("mechanical", "mechanical (offline)")


@dataclass(frozen=True)
class SuiteJudging:
    """A suite's judge in this run and the scorers that apply it."""

    judge: SuiteJudge
    scorers: tuple[QuestionScorer, ...]


@dataclass(frozen=True)
class SuiteAnalysis:
    """How a suite's statistics (CIs, paired tests, baseline comparison) see its results.

    ``prepare`` turns a group's results into the questions that are resampled and paired (the
    answered ones by default; MEME: its after-probes carrying their trivial-pass-filtered credit),
    ``question_weights`` score one of them (which questions moved, the signed-rank line), and ``weights``, ``gates``
    and ``group_metrics`` over them give the suite's headline score. ``strata`` labels the fixed
    groups a headline averages over (question types), which the stratified jackknife keeps apart.
    """

    prepare: Callable[[Sequence[QuestionResult]], list[QuestionResult]]
    question_weights: Mapping[str, float]
    weights: Mapping[str, float]
    gates: tuple[HardGate, ...]
    group_metrics: Sequence[GroupMetric]
    strata: Callable[[QuestionResult], Hashable] | None = None


def question_type(result: QuestionResult) -> str:
    """A result's question type (the stratum of suites whose score is a mean over types)."""
    return result.question_type


def answered(results: Sequence[QuestionResult]) -> list[QuestionResult]:
    """The results that were asked and measured (what statistics are computed over)."""
    return [r for r in results if r.measured]


@dataclass(frozen=True)
class Suite:
    """A benchmark suite other than LENS.

    ``question_weights`` make each question's composite (used by paired statistics) and
    ``summary_weights`` the suite's headline composite over run-level metrics, which the
    ``group_metrics`` compute (e.g. MEME's trivial-pass-filtered accuracy). ``type_summaries``
    replaces the generic per-question-type means when the suite defines its own per-task score.
    """

    name: str
    title: str
    #: One line saying what the headline composite is, printed above the suite's table.
    headline: str
    question_weights: Mapping[str, float]
    summary_weights: Mapping[str, float]
    make_scorers: Callable[[], Sequence[QuestionScorer]] = tuple
    group_metrics: Sequence[GroupMetric] = ()
    gates: tuple[HardGate, ...] = ()
    type_summaries: TypeSummaries | None = None
    #: Columns of the suite table: (metric, heading), after ``n`` and the composite.
    columns: Sequence[tuple[str, str]] = ()
    #: Extra lines (e.g. MEME's trivial-pass breakdown) from the suite's summaries and results.
    extra_lines: Callable[[SuiteReport], list[str]] | None = None
    #: Default scopes ship in ``pytest_lens/datasets/data/<name>/``.
    bundled: bool = False
    #: Judging through the run's LLM judge (``--lens-judge=llm``); ``None``: always the mechanical scorers.
    llm_judging: Callable[[ChatClient], SuiteJudging] | None = None
    #: What the statistics resample and pair, when not the scored questions themselves (see :class:`SuiteAnalysis`),
    #: with the per-question weights and run-level metrics that go with it.
    statistics_prepare: Callable[[Sequence[QuestionResult]], list[QuestionResult]] | None = None
    statistics_question_weights: Mapping[str, float] | None = None
    statistics_group_metrics: Sequence[GroupMetric] | None = None
    #: The score is a mean over question types (MEME's tasks, MAB's competencies): resample within each type.
    stratify_by_type: bool = False
    #: The suite's own score, as a column heading (beside the retrieval score, or under it when it is the headline).
    score_label: str = "score"

    def own_headline(self) -> Headline:
        """The suite's own score as a headline (its summary weights, gates and run-level metrics)."""
        return Headline("composite", self.score_label, dict(self.summary_weights), self.gates, tuple(self.group_metrics), self.headline)

    def analysis(self, retrieval: bool = False) -> SuiteAnalysis:
        """How this suite's statistics see its results: headed by its own score, or by the retrieval score (``retrieval``).

        The retrieval score is the same over every answered question with required evidence, whatever the suite.
        """
        if retrieval:
            return SuiteAnalysis(answered, dict(RETRIEVAL_SCORE_WEIGHTS), dict(RETRIEVAL_SCORE_WEIGHTS), (), ())
        prepare = self.statistics_prepare
        return SuiteAnalysis(
            prepare=answered if prepare is None else lambda results: prepare(answered(results)),
            question_weights=dict(self.statistics_question_weights or self.question_weights),
            weights=dict(self.summary_weights),
            gates=self.gates,
            group_metrics=tuple(self.group_metrics if self.statistics_group_metrics is None else self.statistics_group_metrics),
            strata=question_type if self.stratify_by_type else None,
        )

    def judging(self, llm_judge: ChatClient | None = None) -> SuiteJudging:
        """The suite's LLM judging when it has one and ``llm_judge`` (the judge model's client) is given, else its mechanical scorers."""
        if llm_judge is not None and self.llm_judging is not None:
            return self.llm_judging(llm_judge)
        return SuiteJudging(MECHANICAL, tuple(self.make_scorers()))

    def scoring(self, judging: SuiteJudging | None = None) -> Scoring:
        """Per-question scoring for this suite's questions (with ``judging``'s scorers; the mechanical ones by default)."""
        scorers = judging.scorers if judging is not None else tuple(self.make_scorers())
        return Scoring(dict(self.question_weights), self.gates, scorers)


def group_by_summary_key(results: Sequence[QuestionResult]) -> dict[str, list[QuestionResult]]:
    """Results per summary key (``adapter`` or ``adapter@budget``), as :func:`summary.summarize` keys them."""
    several_budgets = len({result.budget for result in results}) > 1
    groups: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in results:
        groups[summary_key(result.adapter, result.budget, several_budgets)].append(result)
    return dict(groups)


def summarize_suite(suite: Suite, results: Sequence[QuestionResult], retrieval: bool = False) -> dict[str, AdapterSummary]:
    """Per (adapter, budget) summaries of one suite's results, with the suite's weights and metrics.

    ``composite`` is the suite's own score; ``headline`` the section's headline (the retrieval score with ``retrieval``,
    else the suite's own score), per adapter and per question type.
    """
    headline = retrieval_headline() if retrieval else None
    summaries = summarize(results, suite.summary_weights, suite.gates, suite.group_metrics, headline)
    if suite.type_summaries is None:
        return summaries
    groups = group_by_summary_key(results)
    out = {}
    for key, s in summaries.items():
        by_type = suite.type_summaries(groups[key])
        if headline is not None:
            by_type = {t: g.model_copy(update={"headline": _headline_of(g.metrics)}) for t, g in by_type.items()}
        out[key] = s.model_copy(update={"by_type": by_type})
    return out


#: What the suite's own headline has beside it.
_RETRIEVAL_BESIDE = (
    "retrieval = 0.5 x first-search nDCG@10 + 0.5 x first-search MRR of the required evidence (the headline under the offline agent)"
)


def _headline_of(metrics: Mapping[str, float]) -> float:
    return round(composite(metrics, RETRIEVAL_SCORE_WEIGHTS, ()).value, 6)


def type_summary(results: Sequence[QuestionResult], score: float) -> GroupSummary:
    """A per-type row whose composite is the suite's own per-type score."""
    means = metric_means(results)
    return GroupSummary(n=len(results), composite=round(score, 6), metrics={k: round(v, 6) for k, v in means.items()})


def plain_type_summaries(weights: Mapping[str, float]) -> TypeSummaries:
    """Per-type rows scored with ``weights`` over the per-question metric means."""

    def build(results: Sequence[QuestionResult]) -> dict[str, GroupSummary]:
        by_type: dict[str, list[QuestionResult]] = defaultdict(list)
        for result in results:
            by_type[result.question_type].append(result)
        return {qtype: type_summary(items, composite(metric_means(items), weights, ()).value) for qtype, items in sorted(by_type.items())}

    return build


@dataclass
class SuiteReport:
    """One suite's section of the terminal summary."""

    suite: Suite
    summaries: dict[str, AdapterSummary]
    results: list[QuestionResult] = field(default_factory=list)
    agent: str = ""
    #: What scored the suite's questions (shown next to the agent).
    judge: str = MECHANICAL.description
    #: The suite's score CIs and paired adapter tests (:meth:`SuiteRun.statistics`), and the run against a baseline.
    statistics: RunStatistics | None = None
    comparison: BaselineComparison | None = None
    alpha: float = 0.05
    #: Whether ``--lens-compare-fail`` gates on the comparison.
    gating: bool = False
    #: Output encoding, to choose arrows it can show.
    encoding: str | None = "utf-8"
    #: The section's headline is the retrieval score (the suite's own score beside it); else the suite's own score.
    retrieval: bool = False
    #: With the oracle: the headline's floor and ceiling and the agent or answer-key suspects.
    ceiling: Ceiling | None = None

    @property
    def lines(self) -> list[str]:
        """Title, headline, the adapter table, the per-type table and any suite extras."""
        suite = self.suite
        out = [f"{suite.title} [suite {suite.name}]", *self._headline_lines()]
        if self.agent:
            out.append(f"  agent: {self.agent}; judge: {self.judge}")
        out.extend(self._adapter_table())
        out.extend(self._type_table())
        if suite.extra_lines is not None:
            out.extend(suite.extra_lines(self))
        out.extend(self._statistics_lines())
        return out

    def _headline_lines(self) -> list[str]:
        """What heads the section and what stands beside it."""
        own = self.suite.headline
        if not self.retrieval:
            return [f"  headline: {own}", f"  beside it: {_RETRIEVAL_BESIDE}"]
        return [
            f"  headline: {retrieval_headline().description}",
            f"  beside it: {own} (the suite's own score, the headline with an LLM agent or an LLM judge: the offline agent's "
            "extractive answers cannot earn it, whatever the memory returns)",
        ]

    def _adapter_table(self) -> list[str]:
        columns = list(self.suite.columns)
        stats = self.statistics
        label = "retrieval score" if self.retrieval else "score"
        score_heading = f"{label} [{stats.confidence:.0%} CI]" if stats is not None else label
        beside = self.suite.score_label if self.retrieval else "retrieval"
        headers = ["adapter", "n", score_heading, beside, *(heading for _, heading in columns), "faults", "gate"]
        rows = []
        for key, s in self.summaries.items():
            gate = "FAIL " + "; ".join(s.gate_reasons) if s.gated else "pass"
            if s.control is not None:  # shown, never gating (as in the LENS table)
                gate = "control" + (f" (gated: {'; '.join(s.gate_reasons)})" if s.gated else "")
            cells = [f"{s.metrics[m]:.3f}" if m in s.metrics else "-" for m, _ in columns]
            other = s.composite if self.retrieval else _headline_of(s.metrics)
            rows.append([key, str(s.n_questions), self._score(key, s.headline), f"{other:.3f}", *cells, str(s.faults), gate])
        return format_table(headers, rows, [False, True, True, True, *([True] * len(columns)), True, False])

    def _type_table(self) -> list[str]:
        types = sorted({t for s in self.summaries.values() for t in s.by_type})
        if not types:
            return []
        keys = list(self.summaries)
        rows = []
        for qtype in types:
            counts = sorted({s.by_type[qtype].n for s in self.summaries.values() if qtype in s.by_type})
            cells = []
            for key in keys:
                group = self.summaries[key].by_type.get(qtype)
                if group is None:
                    cells.append("-")
                else:
                    cells.append(f"{group.headline:.3f} / {group.composite:.3f}" if self.retrieval else f"{group.headline:.3f}")
            rows.append([qtype, "/".join(map(str, counts)), *cells])
        title = f"retrieval score / {self.suite.score_label}" if self.retrieval else "score"
        return ["", f"{title} by question type:", *format_table(["type", "n", *keys], rows, [False, True, *([True] * len(keys))])]

    def _score(self, key: str, score: float) -> str:
        """The headline with its CI; the bare score when there is none (or the statistics saw other questions)."""
        from pytest_lens.analysis.format import format_estimate

        found = self.statistics.adapters.get(key) if self.statistics is not None else None
        if found is None or abs(found.composite.value - score) > 5e-4:
            return f"{score:.3f}"
        return format_estimate(found.composite)

    def _statistics_lines(self) -> list[str]:
        from pytest_lens.reports.render import arrows_for, ceiling_lines, comparison_lines, pair_lines

        arrows = arrows_for(self.encoding)
        out: list[str] = []
        if self.statistics is not None and (pairs := pair_lines(self.statistics, self.alpha, arrows)):
            out += ["", *pairs]
        if self.comparison is not None:
            out += ["", *comparison_lines(self.comparison, gating=self.gating, arrows=arrows)]
        if self.ceiling is not None:
            out += ["", *ceiling_lines(self.ceiling)]
        return out


def generic_suite(name: str) -> Suite:
    """A suite without its own scorers: LENS's tier-1 metrics, weights and grounding gate."""
    from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS

    return Suite(
        name=name,
        title=f"suite {name!r}",
        headline="composite = LENS composite over the tier-1 metrics (no suite-specific scorer is registered)",
        score_label="composite",
        question_weights=DEFAULT_WEIGHTS,
        summary_weights=DEFAULT_WEIGHTS,
        gates=DEFAULT_GATES,
        columns=(
            ("evidence_grounding", "grounding"),
            ("evidence_coverage", "ev.coverage"),
            ("citation_coverage", "cit.coverage"),
            ("fact_recall", "fact_recall"),
            ("budget_compliance", "budget"),
        ),
    )
