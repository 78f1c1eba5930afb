"""What a contract clause is: an id, the sentence it checks, the method it exercises, and a property.

A clause's property is a plain function ``check(context, example)`` that raises
:class:`ClauseViolation` (saying what the adapter did) when the contract is
broken; hypothesis generates the examples from ``examples(manifest)`` and shrinks
a failure to its minimal form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_lens.contract.adapter import CapabilityManifest

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from pytest_lens.conformance.subject import Subject, SubjectFactory

__all__ = ["NO_MEMORY_MODE", "RANDOM_MODE", "Clause", "ClauseContext", "ClauseViolation"]

#: ``search_modes=["none"]`` declares a no-memory control (the ``null`` adapter): it must store and return nothing.
NO_MEMORY_MODE = "none"
#: ``search_modes=["random"]`` declares a random-ranking control (the ``random`` adapter): it promises no relevance.
RANDOM_MODE = "random"


class ClauseViolation(AssertionError):
    """The adapter broke the clause being checked; the message says what it did."""

    def __init__(self, message: str, *, method: str | None = None) -> None:
        super().__init__(message)
        #: The adapter method that misbehaved, when it is not the clause's own.
        self.method = method


@dataclass
class ClauseContext:
    """What a clause's property may use: fresh adapter instances, the manifest and the run's settings."""

    factory: SubjectFactory
    manifest: CapabilityManifest
    latency_ceilings: Mapping[str, float] = field(default_factory=dict)
    enforce_latency: bool = False
    #: Set by ``conclude`` hooks that report without failing (e.g. advisory latency).
    advisories: list[str] = field(default_factory=list)
    #: What properties note across examples for a ``conclude`` hook to judge (e.g. ranks per example).
    records: list[Any] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The adapter's label."""
        return self.factory.label

    @property
    def stores_nothing(self) -> bool:
        """The adapter declares itself a no-memory control (``search_modes=["none"]``)."""
        return [mode.lower() for mode in self.manifest.search_modes] == [NO_MEMORY_MODE]

    @property
    def ranks_at_random(self) -> bool:
        """The adapter declares itself a random-ranking control (``search_modes=["random"]``)."""
        return [mode.lower() for mode in self.manifest.search_modes] == [RANDOM_MODE]

    @property
    def max_results(self) -> int:
        """The declared ``max_results_per_search``."""
        return self.manifest.max_results_per_search

    def fresh(self) -> AbstractContextManager[Subject]:
        """A newly constructed adapter instance (closed and its storage deleted on exit)."""
        return self.factory.fresh()

    def search_limit(self) -> int:
        """The limit an agent gets by default: ``min(10, max_results_per_search)``."""
        return min(10, self.max_results)


def _always(manifest: CapabilityManifest) -> str | None:
    return None


@dataclass(frozen=True)
class Clause:
    """One sentence of the adapter contract, as a hypothesis property.

    ``applies`` returns why the clause does not apply to a manifest (e.g. no
    filter fields declared), or ``None``; ``needs`` names an optional adapter
    method the clause exercises (it does not apply to an adapter without it). ``cost`` scales the profile's
    ``max_examples`` for clauses whose examples are expensive. ``conclude`` runs
    once after all examples passed (the latency clause judges the recorded
    latencies there).
    """

    id: str
    contract: str
    method: str
    examples: Callable[[CapabilityManifest], SearchStrategy[Any]]
    check: Callable[[ClauseContext, Any], None]
    applies: Callable[[CapabilityManifest], str | None] = _always
    cost: float = 1.0
    conclude: Callable[[ClauseContext], None] | None = None
    needs: str | None = None

    def not_applicable(self, manifest: CapabilityManifest, defines: Callable[[str], bool]) -> str | None:
        """Why the clause does not apply to an adapter with ``manifest`` (``defines(method)``: it has that method), or ``None``."""
        reason = self.applies(manifest)
        if reason is None and self.needs is not None and not defines(self.needs):
            reason = f"the adapter defines no {self.needs}()"
        return reason

    @property
    def test_name(self) -> str:
        """The built-in test function's name: ``retrieve.roundtrip`` -> ``test_retrieve_roundtrip``."""
        return "test_" + self.id.replace(".", "_")
