"""What the summary's abbreviations and the headline number mean, and the per-question status line.

The summary prints :func:`legend_lines` under the adapter table, so a reader needs no
README to know what ``res.tok/q`` counts or how the composite is weighted; the ``-v``
line of every question carries its own scores (:func:`question_status`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_lens.analysis.format import METRIC_LABELS
from pytest_lens.scoring.composite import HardGate

__all__ = ["COLUMN_MEANINGS", "METRIC_MEANINGS", "legend_lines", "question_status"]

#: One phrase per metric: what it measures (docs/scores.md has the details).
METRIC_MEANINGS: dict[str, str] = {
    "evidence_grounding": "cited refs that exist and were shown to the agent / cited refs",
    "evidence_coverage": "required refs cited / required refs available",
    "citation_coverage": "answer sentences with a grounded citation / sentences",
    "budget_compliance": "1 if no budget limit was hit, else 0",
    "fact_recall": "key facts found in the answer / key facts",
    "answer_quality": "judge, per key fact vs the canonical answer: win 1, tie 0.5, loss 0",
    "insight_depth": "judge: insight beyond restating evidence",
    "reasoning_quality": "judge: soundness of the reasoning",
    "naive_baseline_advantage": "judge: answer vs the no-memory baseline's",
    "longitudinal_advantage": "synthesis minus control answer_quality",
    "action_quality": "judge: quality of the recommended action",
    "fact_recall_judged": "judge, YES/NO per key fact: facts the answer states or implies / key facts (LENS V2)",
    "evidence_support": "judge, 0-4 / 4: how well the cited episodes' texts support the answer's claims (LENS V2)",
    "citation_validity": "cited refs that resolve (ingested by the checkpoint, or declared synthetic) / cited refs (LENS V2)",
}

#: The adapter table's other columns.
COLUMN_MEANINGS: dict[str, str] = {
    "n": "questions scored",
    "res.tok/q": "tool-result tokens the agent read per question (UTF-8 bytes / 4)",
    "calls/q": "tool calls per question",
    "faults": "adapter calls that raised, timed out or returned a wrong type",
    "gate": "hard gates on the adapter's metric means",
}


def _label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def _in_table_order(metrics: Iterable[str]) -> list[str]:
    """The adapter table's column order: known metrics first, the rest by name."""
    present = set(metrics)
    return [name for name in METRIC_LABELS if name in present] + sorted(present - set(METRIC_LABELS))


def legend_lines(metrics: Iterable[str], weights: Mapping[str, float], gates: Sequence[HardGate]) -> list[str]:
    """The legend for an adapter table showing ``metrics``: the composite's effective weights, then every abbreviation."""
    shown = _in_table_order(metrics)
    used = [(name, weights[name]) for name in shown if weights.get(name, 0) > 0]
    total = sum(weight for _, weight in used)
    formula = " + ".join(f"{weight / total:.2f} {_label(name)}" for name, weight in used) if total else "nothing (no weighted metric)"
    unweighted = [_label(name) for name in shown if weights.get(name, 0) <= 0]
    gate_text = " or ".join(f"{gate.metric} < {gate.threshold:g}" for gate in gates) or "no gate"
    lines = [
        f"legend: composite = {formula} (weights renormalised over the metrics present; --lens-weights), "
        f"0 when a hard gate fails ({gate_text})" + (f"; shown, not weighted: {', '.join(unweighted)}" if unweighted else ""),
    ]
    explained = [f"{_label(name)} = {name}: {METRIC_MEANINGS[name]}" for name in shown if name in METRIC_MEANINGS]
    lines.extend(f"  {text}" for text in explained)
    lines.append("  " + "; ".join(f"{column} = {meaning}" for column, meaning in COLUMN_MEANINGS.items()))
    return lines


def question_status(properties: Sequence[tuple[str, Any]], verbose: bool) -> tuple[str, str, str] | None:
    """Category, letter and word for a passed LENS question's report, from its ``lens.*`` properties.

    A question whose composite a hard gate zeroed is reported as ``gated`` (letter ``G``):
    not a failure (the run's verdict gates the adapter on its metric means), not a plain
    pass either. With ``verbose`` the word carries the question's scores.
    """
    values = {name: value for name, value in properties if isinstance(name, str) and name.startswith("lens.")}
    if "lens.composite" not in values:
        return None
    gated = values.get("lens.gated") == "true"
    category, letter, word = ("gated", "G", "GATED") if gated else ("passed", ".", "PASSED")
    if verbose:
        metrics = {name.removeprefix("lens.metric."): value for name, value in values.items() if name.startswith("lens.metric.")}
        scores = ", ".join(f"{_label(name)} {float(metrics[name]):.3f}" for name in _in_table_order(metrics))
        word = f"{word} score {float(values['lens.composite']):.3f}" + (f" ({scores})" if scores else "")
    return category, letter, word
