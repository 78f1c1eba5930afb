"""Test cases: one per (adapter, scope, checkpoint, budget, question, repetition), with readable ids."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pytest_lens.datasets.loader import LoadedScope
from pytest_lens.datasets.models import Question
from pytest_lens.records.budget import Budget

__all__ = ["LensCase", "build_cases", "case_id", "stream_group"]


def stream_group(adapter: str, scope_id: str, budget: str) -> str:
    """Name of the tests sharing one ingestion stream: ``adapter:scope:budget``."""
    return f"{adapter}:{scope_id}:{budget}"


def case_id(
    adapter: str,
    scope_id: str,
    stream_length: int,
    checkpoint: int,
    question_id: str,
    budget: str | None = None,
    repetition: int | None = None,
) -> str:
    """The pytest id of a question: ``bm25-cascading_failure_01-cp099[-8k]-cf01_q03_longitudinal[-r2]``.

    The budget when several run; ``repetition`` (counted from 1) when ``--lens-repeat`` answers it several times.
    """
    width = max(3, len(str(stream_length)))
    parts = [adapter, scope_id, f"cp{checkpoint:0{width}d}"]
    if budget is not None:
        parts.append(budget)
    parts.append(question_id)
    if repetition is not None:
        parts.append(f"r{repetition}")
    return "-".join(parts)


@dataclass(frozen=True)
class LensCase:
    """One question to put to one adapter under one budget."""

    adapter: str
    scope: LoadedScope
    question: Question
    budget: Budget
    show_budget: bool = False
    #: Which answer of the question this is (``--lens-repeat``: 0 .. repetitions - 1).
    repetition: int = 0
    #: How many times the run answers each question; above 1 the id ends in ``-r1``, ``-r2``, ...
    repetitions: int = 1

    @property
    def checkpoint(self) -> int:
        """Episodes ingested before this question is asked."""
        return self.question.checkpoint_after

    @property
    def key(self) -> tuple[str, str, str, str]:
        """Same as :attr:`QuestionResult.key`."""
        return (self.adapter, self.scope.scope_id, self.budget.name, self.question.question_id)

    @property
    def item_key(self) -> tuple[str, str, str, str, int]:
        """Same as :attr:`QuestionResult.item_key`: the question and which repetition of it."""
        return (*self.key, self.repetition)

    @property
    def id(self) -> str:
        """The pytest id, e.g. ``bm25-cascading_failure_01-cp099-cf01_q03_longitudinal`` (``-r2`` appended for repetitions)."""
        budget = self.budget.name if self.show_budget else None
        repetition = self.repetition + 1 if self.repetitions > 1 else None
        return case_id(
            self.adapter, self.scope.scope_id, len(self.scope.stream), self.checkpoint, self.question.question_id, budget, repetition
        )

    @property
    def group(self) -> str:
        """Tests sharing one ingestion stream: (adapter, scope, budget)."""
        return stream_group(self.adapter, self.scope.scope_id, self.budget.name)


def build_cases(adapters: Sequence[str], scopes: Iterable[LoadedScope], budgets: Sequence[Budget], repetitions: int = 1) -> list[LensCase]:
    """Cases in an order that streams each scope once: adapter, scope, checkpoint, budget, file order, repetition.

    The repetitions of a question follow each other at its checkpoint, so they see the same memory state.
    """
    scopes = list(scopes)
    show_budget = len(budgets) > 1
    cases: list[LensCase] = []
    for adapter in adapters:
        for scope in scopes:
            for checkpoint in scope.checkpoints:
                for budget in budgets:
                    cases.extend(
                        LensCase(adapter, scope, question, budget, show_budget, repetition, repetitions)
                        for question in scope.questions
                        if question.checkpoint_after == checkpoint
                        for repetition in range(repetitions)
                    )
    return cases
