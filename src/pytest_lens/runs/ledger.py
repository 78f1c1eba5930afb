"""The run's result ledger: which questions were selected, what each produced, and what went wrong outside them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pytest_lens.records.cases import LensCase
from pytest_lens.records.results import QuestionResult

__all__ = ["ResultLedger"]

#: A question's answer: (adapter, scope, budget, question, repetition).
ItemKey = tuple[str, str, str, str, int]


class ResultLedger:
    """Selected cases, recorded results, crashed cases and run-level problems, in case order.

    ``version`` grows with every change, so what is derived from the ledger knows when to recompute.
    """

    def __init__(self, cases: Sequence[LensCase]) -> None:
        self._order = {case.item_key: index for index, case in enumerate(cases)}
        #: Results and selected cases by (adapter, scope, budget, question, repetition).
        self.results: dict[ItemKey, QuestionResult] = {}
        self.expected: dict[ItemKey, LensCase] = {}
        #: Selected cases whose test killed its xdist worker (``os._exit``, a segfault), and which worker: no result, ever.
        self.crashed: dict[ItemKey, str] = {}
        #: Run-level problems found outside the results (e.g. the xdist grouping self-check); each fails the verdict.
        self.problems: list[str] = []
        self.version = 0

    def expect(self, cases: Iterable[LensCase]) -> None:
        """The cases selected to run; results missing at the end make the run incomplete."""
        for case in cases:
            self.expected[case.item_key] = case

    def record(self, result: QuestionResult) -> None:
        """Keep one question's result (one answer of it, with ``--lens-repeat``)."""
        self.results[result.item_key] = result
        self.version += 1

    def add_problems(self, problems: Iterable[str]) -> None:
        """Run-level problems found outside the results; each fails the verdict."""
        self.problems.extend(problems)
        self.version += 1

    def record_crash(self, case: LensCase, worker: str) -> None:
        """A case's test crashed the worker running it: it has no result, and the incomplete line says why."""
        self.crashed[case.item_key] = worker
        self.version += 1

    def in_case_order(self, cases: Iterable[LensCase]) -> list[LensCase]:
        """``cases`` in the run's case order (unknown ones last)."""
        return sorted(cases, key=lambda case: self._order.get(case.item_key, len(self._order)))

    def position(self, key: ItemKey) -> tuple[int, ItemKey]:
        """Where the answer ``key`` comes in case order (answers of no known case last, by key)."""
        return (self._order.get(key, len(self._order)), key)

    def ordered_results(self) -> list[QuestionResult]:
        """Results in case order (stable, whatever order the tests ran in); every repetition of a question."""
        return sorted(self.results.values(), key=lambda r: self.position(r.item_key))

    def missing(self) -> list[LensCase]:
        """Selected cases with no result."""
        return [case for key, case in self.expected.items() if key not in self.results]

    def incomplete(self) -> list[str]:
        """One line per (adapter, scope, budget) group with selected questions that produced no result."""
        missing: dict[str, int] = {}
        for key, case in self.expected.items():
            if key not in self.results:
                missing[case.group] = missing.get(case.group, 0) + 1
        if not missing:
            return []
        total = sum(missing.values())
        groups = ", ".join(f"{group} ({count})" for group, count in missing.items())
        crashed = [
            f"{case.id} ({worker})" for key, case in self.expected.items() if (worker := self.crashed.get(key)) and key not in self.results
        ]
        why = f"; {len(crashed)} of them crashed their xdist worker: {', '.join(crashed)}" if crashed else ""
        return [f"incomplete: {total} questions missing from groups {groups}{why}"]
