"""The MEME suite: per-probe judging, the trivial-pass filter, the headline score and its report section.

Headline (the paper's "Overall"): the mean over the six tasks of each task's accuracy on after-probes,
where Cascade, Absence and Deletion credit only ``real`` passes (the before-probe of the same entity
passed too) and ER, Aggregation and Tracking count raw passes. Before-probes are never scored in the
headline; they exist to pair. Each probe's own composite (for paired statistics) is its raw verdict.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_lens.analysis.format import format_table
from pytest_lens.judging.judge import JudgeError
from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import GroupSummary, QuestionResult
from pytest_lens.scoring.scorer import QuestionScorer, ScorerOutput
from pytest_lens.suites.base import Suite, SuiteJudge, SuiteJudging, SuiteReport, group_by_summary_key, type_summary
from pytest_lens.suites.meme.llm_judge import JudgedProbe, MemeLLMJudge
from pytest_lens.suites.meme.tasks import TASK_CODES, TASKS, judge_probe

if TYPE_CHECKING:
    from pytest_lens.llm.client import ChatClient

__all__ = [
    "BEFORE_UNJUDGED",
    "CREDIT",
    "FILTERED_TASKS",
    "MEME_SUITE",
    "PASS_TYPES",
    "MemeScorer",
    "PairedProbe",
    "credited_probes",
    "meme_metrics",
    "pair_probes",
]

#: Tasks whose after-probes are credited only when the before-probe passed.
FILTERED_TASKS = ("deletion", "cascade", "absence")
#: Outcome of an after-probe paired with its before-probe.
PASS_TYPES = ("real", "trivial", "knew_but_failed", "never_knew")
#: The pairing of an after-probe whose before-probe ran but could not be judged (an LLM judge failure):
#: neither credited nor penalised, and counted apart.
BEFORE_UNJUDGED = "before_unjudged"


class MemeScorer:
    """Judges MEME probes: ``meme_pass`` (0/1) and, for Tracking/Aggregation, ``meme_partial``.

    Mechanically (:func:`~pytest_lens.suites.meme.tasks.judge_probe`) without a judge; with a
    :class:`~pytest_lens.suites.meme.llm_judge.MemeLLMJudge`, by the paper's LLM protocol (Exact
    Recall stays a substring match). A probe the LLM judge could not decide gets no MEME metric and
    a scoring failure naming why: never a pass or a fail.
    """

    name = "meme"

    def __init__(self, judge: MemeLLMJudge | None = None) -> None:
        self.judge = judge

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float]) -> ScorerOutput:
        """Judge ``answer`` to the probe of ``case``."""
        question = case.question
        details: dict[str, object] = {
            "task": question.question_type,
            "phase": question.phase or "after",
            "entity": question.entity,
            "hop": question.meta.get("hop"),
        }
        if self.judge is None:
            judged = JudgedProbe(judge_probe(question, answer), "mechanical")
        else:
            try:
                judged = self.judge.judge(question, answer)
            except JudgeError as exc:
                details.update(judge=self.judge.name, error=str(exc))
                return ScorerOutput(details=details, failures=[f"meme_pass: {exc}"])
        verdict = judged.verdict
        values: dict[str, float] = {"meme_pass": float(verdict.passed)}
        if verdict.partial is not None:
            values["meme_partial"] = verdict.partial
        details.update(passed=verdict.passed, reason=verdict.reason, judge=judged.by)
        if judged.by == "llm":
            details.update(raw=judged.raw, attempts=judged.attempts)
        return ScorerOutput(metrics=values, details=details)


@dataclass(frozen=True)
class PairedProbe:
    """An after-probe of a filtered task with the outcome of its before-probe.

    ``before_passed`` is ``None`` when the before-probe did not run, or ran and could not be
    judged (then ``before_judged`` is ``False``).
    """

    after: QuestionResult
    before_passed: bool | None
    before_judged: bool = True

    @property
    def task(self) -> str:
        """The MEME task."""
        return self.after.question_type

    @property
    def after_passed(self) -> bool:
        """The after-probe's raw verdict."""
        return bool(self.after.metrics.get("meme_pass", 0.0))

    @property
    def pass_type(self) -> str:
        """``real``, ``trivial``, ``knew_but_failed`` or ``never_knew``; :data:`BEFORE_UNJUDGED` when the before-probe's judgment failed.

        A before-probe that did not run counts as failed.
        """
        if not self.before_judged:
            return BEFORE_UNJUDGED
        before = bool(self.before_passed)
        if self.after_passed:
            return "real" if before else "trivial"
        return "knew_but_failed" if before else "never_knew"


def _detail(result: QuestionResult, key: str) -> object:
    details = result.scorer_details.get("meme", {})
    return details.get(key) if isinstance(details, dict) else None


def _judged(results: Sequence[QuestionResult], phase: str) -> list[QuestionResult]:
    return [r for r in results if "meme_pass" in r.metrics and _detail(r, "phase") == phase]


def _pair_key(r: QuestionResult) -> tuple[str, str, str, object, str]:
    return (r.adapter, r.budget, r.scope_id, _detail(r, "entity"), r.question_type)


def pair_probes(results: Sequence[QuestionResult]) -> list[PairedProbe]:
    """Pair every judged Cascade/Absence/Deletion after-probe with the before-probe of the same (adapter, budget, scope, entity, task)."""
    before = {_pair_key(r): bool(r.metrics["meme_pass"]) for r in _judged(results, "before")}
    unjudged = {_pair_key(r) for r in results if r.skipped is None and "meme_pass" not in r.metrics and _detail(r, "phase") == "before"}
    return [
        PairedProbe(r, before.get(_pair_key(r)), _pair_key(r) not in unjudged or _pair_key(r) in before)
        for r in _judged(results, "after")
        if r.question_type in FILTERED_TASKS
    ]


#: Per after-probe: 1.0 when it is credited (its pass, or for Del/Cas/Abs a real pass), else 0.0.
CREDIT = "meme_credit"


def credited_probes(results: Sequence[QuestionResult]) -> list[QuestionResult]:
    """The after-probes that count toward the score, each with :data:`CREDIT` (the trivial-pass filter applied).

    A filtered task's after-probe whose before-probe could not be judged is left out. Pairing
    happens here, once, so statistics can resample these probes without splitting a pair.
    """
    paired = {id(p.after): p for p in pair_probes(results)}
    out = []
    for r in _judged(results, "after"):
        if r.question_type in FILTERED_TASKS:
            kind = paired[id(r)].pass_type
            if kind == BEFORE_UNJUDGED:
                continue
            credit = float(kind == "real")
        else:
            credit = r.metrics["meme_pass"]
        out.append(r.model_copy(update={"metrics": {**r.metrics, CREDIT: credit}}))
    return out


def credit_by_task(probes: Sequence[QuestionResult]) -> dict[str, tuple[float, int]]:
    """Mean :data:`CREDIT` and number of probes per task, over :func:`credited_probes`' output."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for r in probes:
        by_task[r.question_type].append(r.metrics[CREDIT])
    return {task: (sum(v) / len(v), len(v)) for task, v in by_task.items()}


def task_accuracy(results: Sequence[QuestionResult]) -> dict[str, tuple[float, int]]:
    """Credited accuracy and number of after-probes scored per task (trivial-pass filter applied)."""
    return credit_by_task(credited_probes(results))


def overall(accuracy: Mapping[str, tuple[float, int]]) -> dict[str, float]:
    """``meme_overall``: the mean of the task accuracies (absent when no task has a scored probe)."""
    return {"meme_overall": sum(value for value, _ in accuracy.values()) / len(accuracy)} if accuracy else {}


def credited_overall(probes: Sequence[QuestionResult]) -> dict[str, float]:
    """``meme_overall`` of already-credited probes (the run-level metric of MEME's statistics)."""
    return overall(credit_by_task(probes))


def meme_metrics(results: Sequence[QuestionResult]) -> dict[str, float]:
    """Run-level MEME metrics: ``meme_overall``, per-task credited accuracy, and the trivial-pass counts."""
    metrics: dict[str, float] = {}
    accuracy = task_accuracy(results)
    for task, (value, _) in accuracy.items():
        metrics[f"meme_{TASK_CODES[task].lower()}"] = value
    metrics.update(overall(accuracy))
    before = _judged(results, "before")
    if before:
        metrics["meme_before_pass"] = sum(r.metrics["meme_pass"] for r in before) / len(before)
    pairs = pair_probes(results)
    for task in FILTERED_TASKS:
        task_pairs = [p for p in pairs if p.task == task]
        counts = Counter(p.pass_type for p in task_pairs)
        scored = sum(counts[kind] for kind in PASS_TYPES)
        code = TASK_CODES[task].lower()
        if counts[BEFORE_UNJUDGED]:
            metrics[f"meme_{code}_{BEFORE_UNJUDGED}"] = float(counts[BEFORE_UNJUDGED])
        if not scored:
            continue
        for kind in PASS_TYPES:
            metrics[f"meme_{code}_{kind}"] = float(counts[kind])
        metrics[f"meme_{code}_raw"] = (counts["real"] + counts["trivial"]) / scored
        metrics[f"meme_{code}_unpaired"] = float(sum(1 for p in task_pairs if p.before_passed is None and p.before_judged))
    return metrics


def meme_type_summaries(results: Sequence[QuestionResult]) -> dict[str, GroupSummary]:
    """Per task: after-probes scored with the filter; before-probes (``<task> (before)``) by their pass rate."""
    accuracy = task_accuracy(results)
    out: dict[str, GroupSummary] = {}
    for task in TASKS:
        after = [r for r in _judged(results, "after") if r.question_type == task]
        if after and task in accuracy:
            out[task] = type_summary(after, accuracy[task][0])
        before = [r for r in _judged(results, "before") if r.question_type == task]
        if before:
            out[f"{task} (before)"] = type_summary(before, sum(r.metrics["meme_pass"] for r in before) / len(before))
    return out


def _trivial_pass_lines(report: SuiteReport) -> list[str]:
    groups = group_by_summary_key(report.results)
    rows = []
    unjudged = []
    for key in report.summaries:
        pairs = pair_probes(groups.get(key, []))
        for task in FILTERED_TASKS:
            task_pairs = [p for p in pairs if p.task == task]
            counts = Counter(p.pass_type for p in task_pairs)
            if counts[BEFORE_UNJUDGED]:
                unjudged.append(f"{key} {TASK_CODES[task]} {counts[BEFORE_UNJUDGED]}")
            n = sum(counts[kind] for kind in PASS_TYPES)
            if not n:
                continue
            no_before = sum(1 for p in task_pairs if p.before_passed is None and p.before_judged)
            rows.append(
                [
                    key,
                    TASK_CODES[task],
                    str(n),
                    *(str(counts[kind]) for kind in PASS_TYPES),
                    f"{(counts['real'] + counts['trivial']) / n:.3f}",
                    f"{counts['real'] / n:.3f}",
                    str(no_before),
                ]
            )
    if not rows and not unjudged:
        return []
    headers = ["adapter", "task", "n", *PASS_TYPES, "raw pass", "credited", "no before"]
    out = [
        "",
        "trivial-pass filter (after-probe paired with the before-probe of the same entity; credit = real only):",
        *(format_table(headers, rows, [False, False, True, True, True, True, True, True, True, True]) if rows else []),
    ]
    if unjudged:
        out.append(f"  left out, their before-probe's judgment failed (neither credited nor penalised): {', '.join(unjudged)}")
    return out


def _llm_judging(client: ChatClient) -> SuiteJudging:
    judge = MemeLLMJudge(client)
    return SuiteJudging(SuiteJudge(judge.name, judge.description), (MemeScorer(judge),))


MEME_SUITE = Suite(
    name="meme",
    title="MEME: multi-entity and evolving memory",
    score_label="MEME overall",
    headline="MEME overall = mean of the six task accuracies on after-probes; Del/Cas/Abs credit real passes only",
    question_weights={"meme_pass": 1.0},
    summary_weights={"meme_overall": 1.0},
    make_scorers=lambda: (MemeScorer(),),
    group_metrics=(meme_metrics,),
    type_summaries=meme_type_summaries,
    columns=(
        *((f"meme_{code.lower()}", code) for code in TASK_CODES.values()),
        ("meme_before_pass", "before"),
        ("evidence_grounding", "grounding"),
        ("evidence_coverage", "ev.coverage"),
    ),
    extra_lines=_trivial_pass_lines,
    bundled=True,
    llm_judging=_llm_judging,
    statistics_prepare=credited_probes,
    statistics_question_weights={CREDIT: 1.0},
    statistics_group_metrics=(credited_overall,),
    stratify_by_type=True,
)

_: QuestionScorer = MemeScorer()
