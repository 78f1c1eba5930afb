"""Typed outcomes of conformance clauses (JSON-serialisable: they ride on pytest reports under xdist)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ClauseOutcome"]


class ClauseOutcome(BaseModel):
    """What one clause found for one adapter."""

    model_config = ConfigDict(extra="ignore")

    adapter: str
    clause: str
    contract: str
    method: str
    status: Literal["passed", "failed", "not_applicable"]
    #: The failure message (clause, method, violation, minimal example) or why the clause does not apply.
    message: str = ""
    #: What the adapter did, in one sentence (failed clauses only).
    violation: str = ""
    #: Why the clause does not apply (not_applicable only).
    reason: str = ""
    #: Findings that do not fail the clause (e.g. latency over an advisory ceiling).
    advisories: list[str] = Field(default_factory=list)
    profile: str = ""
    examples: int = 0
    instances: int = 0
    duration_s: float = 0.0
    #: Seconds per call, by adapter method.
    latencies: dict[str, list[float]] = Field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """The adapter broke the clause."""
        return self.status == "failed"
