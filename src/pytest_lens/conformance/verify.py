"""Running one clause against one adapter: hypothesis explores, shrinks, and the outcome explains.

This is the core entry point; it needs no pytest::

    factory = SubjectFactory(AdapterSpec("bm25", "bm25"), Path(tmp))
    outcome = verify_clause(clause("retrieve.roundtrip"), factory, ConformanceConfig(profile="ci"))
    print(outcome.status, outcome.message)
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from pytest_lens.conformance.clause import Clause, ClauseContext, ClauseViolation
from pytest_lens.conformance.profiles import clause_settings, profile_name
from pytest_lens.conformance.results import ClauseOutcome
from pytest_lens.conformance.samples import describe_example
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.contract.adapter import CapabilityManifest
from pytest_lens.execution.calls import AdapterCallError
from pytest_lens.progress import ClauseProgress, ProgressSink, waiting

__all__ = ["ConformanceConfig", "verify_clause"]


@dataclass(frozen=True)
class ConformanceConfig:
    """How thoroughly to search, and the latency ceilings."""

    profile: str = "ci"
    latency_ceilings: Mapping[str, float] = field(default_factory=dict)
    enforce_latency: bool = False
    #: Where progress lines go while a clause runs long (``None``: nowhere).
    progress: ProgressSink | None = None
    progress_interval_s: float = 2.0


@dataclass
class _Run:
    examples: int = 0
    last: Any = None


def _inapplicable(clause: Clause, manifest: CapabilityManifest, factory: SubjectFactory) -> str | None:
    """Why ``clause`` is not checked against ``factory``'s adapter (unavailable here, or not applicable), or ``None``."""
    if factory.unavailable:
        return f"the adapter is unavailable here: {factory.unavailable}"
    return clause.not_applicable(manifest, factory.defines)


def _ticker(clause: Clause, factory: SubjectFactory, config: ConformanceConfig, examples: int) -> ClauseProgress | None:
    """The clause's progress lines, where the run prints them: at most 9 s apart (plus a wait tick), so at least every 10 s."""
    if config.progress is None:
        return None
    return ClauseProgress(config.progress, clause.id, factory.label, examples, interval_s=min(config.progress_interval_s, 9.0))


def verify_clause(clause: Clause, factory: SubjectFactory, config: ConformanceConfig) -> ClauseOutcome:
    """Check ``clause`` against ``factory``'s adapter. Never raises for adapter misbehaviour: it is the outcome."""
    from hypothesis import given
    from hypothesis.errors import Unsatisfiable

    from pytest_lens.conformance.schema_strategy import UnsupportedSchema

    started = time.perf_counter()
    profile = profile_name(config.profile)

    def outcome(
        status: str, message: str = "", method: str = clause.method, advisories: list[str] | None = None, violation: str = ""
    ) -> ClauseOutcome:
        return ClauseOutcome(
            adapter=factory.label,
            clause=clause.id,
            contract=clause.contract,
            method=method,
            status=status,  # type: ignore[arg-type]
            message=message,
            violation=violation,
            advisories=advisories or [],
            profile=profile,
            examples=run.examples,
            instances=factory.instances,
            duration_s=round(time.perf_counter() - started, 4),
            latencies={name: list(seconds) for name, seconds in factory.latencies.items()},
        )

    run = _Run()
    manifest, fault = factory.manifest()
    if fault is not None and fault.kind == "construct":  # nothing to explore: every example would fail the same way
        message = _failure_message(clause, factory.label, fault.method, fault.describe(), None, profile, 0)
        return outcome("failed", message, fault.method, violation=fault.describe())
    reason = _inapplicable(clause, manifest, factory)
    if reason is not None:
        skipped = outcome("not_applicable", f"not applicable to {factory.label!r}: {reason}")
        return skipped.model_copy(update={"reason": reason})
    context = ClauseContext(factory, manifest, dict(config.latency_ceilings), config.enforce_latency)

    hypothesis_settings = clause_settings(config.profile, clause.cost)
    ticker = _ticker(clause, factory, config, hypothesis_settings.max_examples)

    def check(example: Any) -> None:
        run.examples += 1
        if ticker is not None:
            ticker.example(run.examples)
        run.last = example
        clause.check(context, example)

    # Distinct names give each (clause, adapter) its own entry in hypothesis's example database.
    check.__name__ = check.__qualname__ = _identifier(f"conformance_{clause.id}_{factory.spec.target}")
    test = hypothesis_settings(given(example=clause.examples(manifest))(check))
    try:
        with waiting(ticker.beat) if ticker is not None else nullcontext():
            test()
        if clause.conclude is not None:
            run.last = None
            clause.conclude(context)
    except (UnsupportedSchema, Unsatisfiable) as exc:  # e.g. an extra tool's schema nothing can be generated for
        skipped = outcome("not_applicable", f"not applicable to {factory.label!r}: the suite cannot generate examples: {exc}")
        return skipped.model_copy(update={"reason": f"the suite cannot generate examples: {exc}"})
    except BaseException as exc:  # hypothesis may wrap the failure in an exception group
        found = _violation_in(exc)
        if found is None:
            raise
        detail, method = found[0], found[1] or clause.method
        if _is_flaky(exc):
            detail = (
                "the failure did not reproduce when hypothesis replayed the example "
                f"(the adapter answers the same calls differently): {detail}"
            )
        message = _failure_message(clause, factory.label, method, detail, run.last, profile, run.examples)
        return outcome("failed", message, method, violation=detail)
    return outcome("passed", advisories=list(context.advisories))


def _identifier(text: str) -> str:
    """A Python identifier naming ``text`` uniquely (hypothesis requires one)."""
    digest = hashlib.blake2b(text.encode(), digest_size=4).hexdigest()
    return re.sub(r"\W", "_", text, flags=re.ASCII) + "_" + digest


def _violation_in(exc: BaseException) -> tuple[str, str] | None:
    """(what happened, adapter method) from a violation or adapter fault, looking inside exception groups."""
    if isinstance(exc, ClauseViolation):
        return str(exc), exc.method or ""
    if isinstance(exc, AdapterCallError):
        return exc.fault.describe(), exc.fault.method
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _violation_in(inner)
            if found is not None:
                return found
    return None


def _is_flaky(exc: BaseException) -> bool:
    from hypothesis.errors import Flaky

    return isinstance(exc, Flaky)


def _failure_message(clause: Clause, label: str, method: str, detail: str, example: Any, profile: str, examples: int) -> str:
    lines = [
        f"conformance clause {clause.id} failed for adapter {label!r}, in {method}()",
        f"  contract: {clause.contract}",
        f"  violation: {detail}",
    ]
    if example is not None:
        lines.append(f"  minimal failing example (hypothesis profile {profile}, {examples} examples run, shrunk):")
        lines.extend(f"    {line}" for line in describe_example(example))
    return "\n".join(lines)
