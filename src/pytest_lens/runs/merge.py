"""Several run artifacts as one run (e.g. one CI job per adapter), for ``lens report A.json B.json``.

Results are concatenated (a question measured twice is an error: which one would the report show?);
summaries, statistics, paired tests between adapters and the hard-gate verdict are recomputed over the
union with the first run's weights, gates and seed, the way a single run over all of them would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_lens.analysis.gates import GatePolicy, check_gates
from pytest_lens.analysis.run import paired_test_name
from pytest_lens.analysis.summary import summarize
from pytest_lens.records.card import differences
from pytest_lens.records.results import LENS, ListRows, QuestionResult, RecordedVerdict, RunArtifact, ScopeEvidence
from pytest_lens.scoring.composite import DEFAULT_WEIGHTS
from pytest_lens.scoring.headline import gates_of
from pytest_lens.scoring.scorer import GroupMetric
from pytest_lens.suites.selection import SuiteRun

__all__ = ["MergeError", "merge_runs"]


class MergeError(ValueError):
    """The runs cannot be merged; the message names the runs and the question."""


def _union(items: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    found: dict[Any, dict[str, Any]] = {}
    for item in items:
        found.setdefault(item.get(key), item)
    return list(found.values())


#: What measured the merged runs' questions must be the same for all of them (data and budgets may differ: they are joined).
_MEASURED_ALIKE = ("agent", "judge", "scoring")


def _check_alike(runs: Sequence[tuple[str, RunArtifact]]) -> None:
    """:class:`MergeError` naming two runs whose comparability cards differ in what measured their questions."""
    first_name, first = runs[0]
    for name, artifact in runs[1:]:
        unlike = [d for d in differences(artifact.card, first.card) if d.field in _MEASURED_ALIKE and d.refuses]
        if unlike:
            raise MergeError(
                f"{name} and {first_name} are unlike runs: {'; '.join(d.line(first_name) for d in unlike)}; "
                "merge runs measured alike (their adapters would be compared with each other)"
            )


def merge_runs(runs: Sequence[tuple[str, RunArtifact]]) -> RunArtifact:
    """One artifact holding every result of ``runs`` (``(name, artifact)`` pairs, the first one's settings win)."""
    if len(runs) == 1:
        return runs[0][1]
    from pytest_lens.analysis.run import analyze_run  # numpy

    first = runs[0][1]
    repeated = [name for name, artifact in runs if (artifact.run.repeat or 1) > 1]
    if repeated:  # its summaries are over per-question means of several answers, which this merge does not recompute
        raise MergeError(f"{', '.join(repeated)} answered each question several times (--lens-repeat); such runs cannot be merged")
    _check_alike(runs)
    owner: dict[tuple[str, str, str, str], str] = {}
    results: list[QuestionResult] = []
    for name, artifact in runs:
        for result in artifact.results:
            if result.key in owner:
                raise MergeError(
                    f"question {'/'.join(result.key)} is in both {owner[result.key]} and {name}; merge runs of other adapters or budgets"
                )
            owner[result.key] = name
            results.append(result)
    run = first.run.model_copy(
        update={
            "adapters": _union([a for _, artifact in runs for a in artifact.run.adapters or []], "label"),
            "datasets": _union([d for _, artifact in runs for d in artifact.run.datasets or []], "path"),
            "budgets": _union([b for _, artifact in runs for b in artifact.run.budgets or []], "name"),
            "merged_from": [name for name, _ in runs],
            "card": None,
        }
    )
    lens_scopes = len({r.scope_id for r in results if r.suite == LENS and r.skipped is None})
    card = run.derived_card(results, scoring=first.card.scoring, test=paired_test_name("plain", lens_scopes))
    run = run.model_copy(update={"card": card})
    weights = dict(run.weights) if run.weights is not None else dict(DEFAULT_WEIGHTS)
    gates = gates_of(run)
    seed = run.seed if run.seed is not None else 42
    group_metrics: tuple[GroupMetric, ...] = ()
    if run.judge:
        from pytest_lens.judging.judge_scorer import longitudinal_advantage  # only for judged runs

        group_metrics = (longitudinal_advantage,)
    lens_results = [r for r in results if r.suite == LENS and r.skipped is None]
    summaries = summarize([r for r in results if r.suite == LENS], weights, gates, group_metrics)
    suites = SuiteRun.recorded((r.suite for r in results if r.suite != LENS), run)
    suite_summaries = suites.summaries(results)
    checks = check_gates(
        summaries,
        gates,
        GatePolicy(),
        suite_summaries={f"{suite}:{key}": s for suite, by_key in suite_summaries.items() for key, s in by_key.items()},
    )
    failed = [check.reason for check in checks if not check.passed]
    evidence: dict[str, ScopeEvidence] = {}
    for _, artifact in runs:
        for scope_id, scope in artifact.evidence.items():
            known = evidence.setdefault(scope_id, ScopeEvidence(episodes=scope.episodes))
            known.texts.update(scope.texts)
    return RunArtifact(
        pytest_lens_version=first.pytest_lens_version,
        created=max(artifact.created for _, artifact in runs),
        run=run,
        results=ListRows(results),
        summary=summaries,
        incomplete=[line for _, artifact in runs for line in artifact.incomplete],
        dataset_warnings=list(dict.fromkeys(w for _, artifact in runs for w in artifact.dataset_warnings)),
        suite_summaries=suite_summaries,
        machine=first.machine,
        commit=first.commit,
        statistics=analyze_run(lens_results, weights, gates, seed=seed, group_metrics=group_metrics) if lens_results else None,
        suite_statistics=suites.statistics(results, seed=seed),
        evidence=evidence,
        # Only the hard gates (and --lens-fail-under-free suite gates) can be recomputed: options like
        # --lens-compare-fail belonged to each run and are not recorded as such.
        verdict=RecordedVerdict(exit_code=1 if failed else 0, reasons=failed, gates=[check.line for check in checks]),
    )
