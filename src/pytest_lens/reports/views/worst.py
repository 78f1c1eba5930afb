"""The worst questions of each adapter: for ``lens show --worst``, the HTML overview and the terminal summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_lens.analysis.format import METRIC_LABELS
from pytest_lens.analysis.summary import summary_key
from pytest_lens.reports.views.transcript import Transcript

#: Suffix of the chance-corrected retrieval metrics (:mod:`pytest_lens.scoring.retrieval`).
CHANCE_SUFFIX = "_above_chance"

__all__ = ["SUMMARY_WORST", "WorstQuestions", "agent_gated", "worst"]

#: Questions per adapter the terminal summary names.
SUMMARY_WORST = 3


def worst(items: Sequence[Transcript], n: int) -> dict[str, list[Transcript]]:
    """Per adapter (``adapter@budget`` with several budgets; ``suite:adapter`` for sibling suites): its ``n`` worst questions.

    Worst first: failed questions, then the lowest headline (:attr:`Transcript.headline`: the score the section's CIs,
    tests and gates are about; a gated question before an ungated one at the same score), then run order. Questions
    not asked (skipped), questions that scored a full 1.0, questions the headline cannot score (no required evidence to
    rank) and questions the agent failed with the memory's evidence in hand (:func:`agent_gated`) are left out, so an
    adapter with nothing to look at has an empty list.
    """
    several_budgets = len({item.result.budget for item in items}) > 1
    groups: dict[str, list[tuple[tuple[int, float, int, int], Transcript]]] = {}
    for index, item in enumerate(items):
        r = item.result
        if r.skipped is not None:
            continue
        key = summary_key(r.adapter, r.budget, several_budgets)
        if r.suite != "lens":
            key = f"{r.suite}:{key}"
        members = groups.setdefault(key, [])
        if r.gated_by_agent or (item.unscored and not r.failed):
            # The memory returned the evidence and the agent did not use it: not the memory's worst question. A question
            # its headline cannot score (no required evidence to rank) is nobody's worst either.
            continue
        if r.failed or r.gated or item.headline < 1.0:
            members.append(((0 if r.failed else 1, item.headline, 0 if r.gated else 1, index), item))
    return {key: [item for _, item in sorted(members, key=lambda pair: pair[0])[:n]] for key, members in groups.items()}


def agent_gated(items: Sequence[Transcript]) -> dict[str, list[Transcript]]:
    """Per adapter key (as :func:`worst`): the questions gated by the agent rather than the memory, in run order."""
    several_budgets = len({item.result.budget for item in items}) > 1
    groups: dict[str, list[Transcript]] = {}
    for item in items:
        r = item.result
        if r.skipped is None and r.gated_by_agent:
            key = summary_key(r.adapter, r.budget, several_budgets)
            groups.setdefault(key if r.suite == "lens" else f"{r.suite}:{key}", []).append(item)
    return groups


def why(item: Transcript) -> str:
    """A few words on why a question scored as it did: its fault, its gate, or its weakest metrics."""
    r = item.result
    if r.failed:
        return r.failure_message().splitlines()[0]
    if item.gate_reasons:
        reasons = "; ".join(item.gate_reasons)
        if r.gated_by_agent:
            held = r.evidence_in_hand
            shown = f"{len(held)} of {len(r.required_refs)} required refs" if r.required_refs else f"{len(r.returned_refs)} refs"
            return f"{reasons}: the agent's, not the memory's (it was shown {shown})"
        return reasons
    # Chance-corrected metrics are differences, not scores: their sign says more than their size.
    scores = [(name, value) for name, value in r.metrics.items() if not name.endswith(CHANCE_SUFFIX)]
    weakest = sorted(scores, key=lambda pair: pair[1])[:2]
    return ", ".join(f"{METRIC_LABELS.get(name, name)} {value:.2f}" for name, value in weakest)


@dataclass(frozen=True)
class WorstQuestions:
    """The summary block naming each adapter's worst questions and where to read their transcripts."""

    groups: dict[str, list[Transcript]]
    json_path: Path | None = None
    #: Per adapter: the questions the agent failed with the memory's evidence in hand (:func:`agent_gated`).
    agent: dict[str, list[Transcript]] = field(default_factory=dict)
    html_path: Path | None = None
    #: ``--lens-save NAME``: ``lens show NAME`` reads the saved run.
    saved_name: str | None = None
    n: int = SUMMARY_WORST

    @property
    def lines(self) -> list[str]:
        """``worst questions ...`` then one line per question, grouped by adapter."""
        if not self.groups:
            return []
        where = []
        if self.html_path is not None:
            where.append(f"open {self.html_path}")
        if self.json_path is not None:
            where.append(f"lens show {self.json_path} ID (or --worst {self.n * 2})")
        elif self.saved_name is not None:
            where.append(f"lens show {self.saved_name} ID (or --worst {self.n * 2}), from the saved run")
        if not where:
            where.append("run with --lens-html=report.html or --lens-json=run.json to read them")
        out = [f"worst questions (transcripts: {'; '.join(where)}):"]
        for key, items in self.groups.items():
            if not items:
                out.append(f"  {key}: every question scored 1.000")
                continue
            out.append(f"  {key}:")
            width = max(len(item.test_id) for item in items)
            for item in items:
                out.append(f"    {item.headline:.3f} {item.outcome:<6} {item.test_id:<{width}}  {why(item)}")
        for key, items in self.agent.items():
            out.append(f"  {key}: gated by the agent, not the memory (the required evidence was returned to it):")
            out += [f"    {item.test_id}  {why(item)}" for item in items]
        return out
