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

from pytest_lens.cases import LensCase
from pytest_lens.engine import QuestionScorer, ScorerOutput
from pytest_lens.report import format_table
from pytest_lens.results import GroupSummary, QuestionResult
from pytest_lens.suites.base import Suite, SuiteReport, group_by_summary_key, type_summary
from pytest_lens.suites.meme.tasks import TASK_CODES, TASKS, judge_probe

__all__ = ["FILTERED_TASKS", "MEME_SUITE", "PASS_TYPES", "MemeScorer", "PairedProbe", "meme_metrics", "pair_probes"]

#: Tasks whose after-probes are credited only when the before-probe passed.
FILTERED_TASKS = ("deletion", "cascade", "absence")
#: Outcome of an after-probe paired with its before-probe.
PASS_TYPES = ("real", "trivial", "knew_but_failed", "never_knew")


class MemeScorer:
    """Judges MEME probes mechanically: ``meme_pass`` (0/1) and, for Tracking/Aggregation, ``meme_partial``."""

    name = "meme"

    def score(self, case: LensCase, answer: str, metrics: Mapping[str, float]) -> ScorerOutput:
        """Judge ``answer`` to the probe of ``case``."""
        question = case.question
        verdict = judge_probe(question, answer)
        values: dict[str, float] = {"meme_pass": float(verdict.passed)}
        if verdict.partial is not None:
            values["meme_partial"] = verdict.partial
        details = {
            "task": question.question_type,
            "phase": question.phase or "after",
            "entity": question.entity,
            "hop": question.meta.get("hop"),
            "passed": verdict.passed,
            "reason": verdict.reason,
            "judge": "mechanical",
        }
        return ScorerOutput(metrics=values, details=details)


@dataclass(frozen=True)
class PairedProbe:
    """An after-probe of a filtered task with the outcome of its before-probe (``None`` if it did not run)."""

    after: QuestionResult
    before_passed: bool | None

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
        """``real``, ``trivial``, ``knew_but_failed`` or ``never_knew`` (a missing before-probe counts as failed)."""
        before = bool(self.before_passed)
        if self.after_passed:
            return "real" if before else "trivial"
        return "knew_but_failed" if before else "never_knew"


def _detail(result: QuestionResult, key: str) -> object:
    details = result.scorer_details.get("meme", {})
    return details.get(key) if isinstance(details, dict) else None


def _judged(results: Sequence[QuestionResult], phase: str) -> list[QuestionResult]:
    return [r for r in results if "meme_pass" in r.metrics and _detail(r, "phase") == phase]


def pair_probes(results: Sequence[QuestionResult]) -> list[PairedProbe]:
    """Pair every Cascade/Absence/Deletion after-probe with the before-probe of the same (adapter, budget, scope, entity, task)."""
    before: dict[tuple[str, str, str, object, str], bool] = {}
    for r in _judged(results, "before"):
        before[(r.adapter, r.budget, r.scope_id, _detail(r, "entity"), r.question_type)] = bool(r.metrics["meme_pass"])
    return [
        PairedProbe(r, before.get((r.adapter, r.budget, r.scope_id, _detail(r, "entity"), r.question_type)))
        for r in _judged(results, "after")
        if r.question_type in FILTERED_TASKS
    ]


def task_accuracy(results: Sequence[QuestionResult]) -> dict[str, tuple[float, int]]:
    """Credited accuracy and number of after-probes per task (trivial-pass filter applied)."""
    after = _judged(results, "after")
    paired = {id(p.after): p for p in pair_probes(results)}
    by_task: dict[str, list[float]] = defaultdict(list)
    for r in after:
        if r.question_type in FILTERED_TASKS:
            by_task[r.question_type].append(float(paired[id(r)].pass_type == "real"))
        else:
            by_task[r.question_type].append(r.metrics["meme_pass"])
    return {task: (sum(v) / len(v), len(v)) for task, v in by_task.items() if v}


def meme_metrics(results: Sequence[QuestionResult]) -> dict[str, float]:
    """Run-level MEME metrics: ``meme_overall``, per-task credited accuracy, and the trivial-pass counts."""
    metrics: dict[str, float] = {}
    accuracy = task_accuracy(results)
    for task, (value, _) in accuracy.items():
        metrics[f"meme_{TASK_CODES[task].lower()}"] = value
    if accuracy:
        metrics["meme_overall"] = sum(value for value, _ in accuracy.values()) / len(accuracy)
    before = _judged(results, "before")
    if before:
        metrics["meme_before_pass"] = sum(r.metrics["meme_pass"] for r in before) / len(before)
    pairs = pair_probes(results)
    for task in FILTERED_TASKS:
        counts = Counter(p.pass_type for p in pairs if p.task == task)
        total = sum(counts.values())
        if not total:
            continue
        code = TASK_CODES[task].lower()
        for kind in PASS_TYPES:
            metrics[f"meme_{code}_{kind}"] = float(counts[kind])
        metrics[f"meme_{code}_raw"] = (counts["real"] + counts["trivial"]) / total
        metrics[f"meme_{code}_unpaired"] = float(sum(1 for p in pairs if p.task == task and p.before_passed is None))
    return metrics


def meme_type_summaries(results: Sequence[QuestionResult]) -> dict[str, GroupSummary]:
    """Per task: after-probes scored with the filter; before-probes (``<task> (before)``) by their pass rate."""
    accuracy = task_accuracy(results)
    out: dict[str, GroupSummary] = {}
    for task in TASKS:
        after = [r for r in _judged(results, "after") if r.question_type == task]
        if after:
            out[task] = type_summary(after, accuracy[task][0])
        before = [r for r in _judged(results, "before") if r.question_type == task]
        if before:
            out[f"{task} (before)"] = type_summary(before, sum(r.metrics["meme_pass"] for r in before) / len(before))
    return out


def _trivial_pass_lines(report: SuiteReport) -> list[str]:
    groups = group_by_summary_key(report.results)
    rows = []
    for key in report.summaries:
        pairs = pair_probes(groups.get(key, []))
        for task in FILTERED_TASKS:
            task_pairs = [p for p in pairs if p.task == task]
            if not task_pairs:
                continue
            counts = Counter(p.pass_type for p in task_pairs)
            n = len(task_pairs)
            unpaired = sum(1 for p in task_pairs if p.before_passed is None)
            rows.append(
                [
                    key,
                    TASK_CODES[task],
                    str(n),
                    *(str(counts[kind]) for kind in PASS_TYPES),
                    f"{(counts['real'] + counts['trivial']) / n:.3f}",
                    f"{counts['real'] / n:.3f}",
                    str(unpaired),
                ]
            )
    if not rows:
        return []
    headers = ["adapter", "task", "n", *PASS_TYPES, "raw pass", "credited", "no before"]
    return [
        "",
        "trivial-pass filter (after-probe paired with the before-probe of the same entity; credit = real only):",
        *format_table(headers, rows, [False, False, True, True, True, True, True, True, True, True]),
    ]


MEME_SUITE = Suite(
    name="meme",
    title="MEME: multi-entity and evolving memory",
    headline="score = MEME overall: mean of the six task accuracies on after-probes; Del/Cas/Abs credit real passes only",
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
)

_: QuestionScorer = MemeScorer()
