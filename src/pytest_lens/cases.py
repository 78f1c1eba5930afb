"""Test cases: one per (adapter, scope, checkpoint, budget, question), with readable ids."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pytest_lens.budget import Budget
from pytest_lens.datasets.loader import LoadedScope
from pytest_lens.datasets.models import Question

__all__ = ["LensCase", "build_cases", "case_id", "stream_group"]


def stream_group(adapter: str, scope_id: str, budget: str) -> str:
    """Name of the tests sharing one ingestion stream: ``adapter:scope:budget``."""
    return f"{adapter}:{scope_id}:{budget}"


def case_id(adapter: str, scope_id: str, stream_length: int, checkpoint: int, question_id: str, budget: str | None = None) -> str:
    """The pytest id of a question: ``bm25-cascading_failure_01-cp099[-8k]-cf01_q03_longitudinal`` (budget when several run)."""
    width = max(3, len(str(stream_length)))
    parts = [adapter, scope_id, f"cp{checkpoint:0{width}d}"]
    if budget is not None:
        parts.append(budget)
    parts.append(question_id)
    return "-".join(parts)


@dataclass(frozen=True)
class LensCase:
    """One question to put to one adapter under one budget."""

    adapter: str
    scope: LoadedScope
    question: Question
    budget: Budget
    show_budget: bool = False

    @property
    def checkpoint(self) -> int:
        """Episodes ingested before this question is asked."""
        return self.question.checkpoint_after

    @property
    def key(self) -> tuple[str, str, str, str]:
        """Same as :attr:`QuestionResult.key`."""
        return (self.adapter, self.scope.scope_id, self.budget.name, self.question.question_id)

    @property
    def id(self) -> str:
        """The pytest id, e.g. ``bm25-cascading_failure_01-cp099-cf01_q03_longitudinal``."""
        budget = self.budget.name if self.show_budget else None
        return case_id(self.adapter, self.scope.scope_id, len(self.scope.stream), self.checkpoint, self.question.question_id, budget)

    @property
    def group(self) -> str:
        """Tests sharing one ingestion stream: (adapter, scope, budget)."""
        return stream_group(self.adapter, self.scope.scope_id, self.budget.name)


def build_cases(adapters: Sequence[str], scopes: Iterable[LoadedScope], budgets: Sequence[Budget]) -> list[LensCase]:
    """Cases in an order that streams each scope once: adapter, scope, checkpoint, budget, file order."""
    scopes = list(scopes)
    show_budget = len(budgets) > 1
    cases: list[LensCase] = []
    for adapter in adapters:
        for scope in scopes:
            for checkpoint in scope.checkpoints:
                for budget in budgets:
                    cases.extend(
                        LensCase(adapter, scope, question, budget, show_budget)
                        for question in scope.questions
                        if question.checkpoint_after == checkpoint
                    )
    return cases
