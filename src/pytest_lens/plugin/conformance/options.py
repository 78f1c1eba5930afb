"""The conformance suite's command-line options and ini keys (light: loaded on every pytest run)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

__all__ = [
    "CONFORMANCE",
    "HYPOTHESIS_PROFILE",
    "LATENCY_CEILING",
    "LATENCY_ENFORCE",
    "ConformanceSettings",
    "add_options",
    "read_conformance_settings",
]

CONFORMANCE = "--lens-conformance"
HYPOTHESIS_PROFILE = "--lens-hypothesis-profile"
LATENCY_CEILING = "--lens-latency-ceiling"
LATENCY_ENFORCE = "--lens-latency-enforce"


@dataclass(frozen=True)
class ConformanceSettings:
    """The conformance options of a run, read once."""

    #: ``--lens-conformance``: add the built-in conformance tests (instead of the LENS questions).
    builtin: bool = False
    #: Short profile name (``ci``, ``dev``, ``thorough``) or a registered hypothesis profile; ``None``: from ``CI``.
    profile: str | None = None
    latency_ceilings: Mapping[str, float] = field(default_factory=dict)
    enforce_latency: bool = False


def add_options(parser: pytest.Parser) -> None:
    """Register the conformance options in the ``lens`` group."""
    group = parser.getgroup("lens", "LENS memory benchmark (pytest-lens)")
    group.addoption(
        CONFORMANCE,
        action="store_true",
        default=False,
        help="run the adapter conformance suite (hypothesis property tests of the contract) instead of the LENS questions.",
    )
    group.addoption(
        HYPOTHESIS_PROFILE,
        default=None,
        metavar="NAME",
        help="conformance thoroughness: ci (bounded, deterministic; default when CI is set), dev (default), thorough, "
        "or any registered hypothesis profile.",
    )
    group.addoption(
        LATENCY_CEILING,
        action="append",
        default=[],
        metavar="[METHOD=]SECONDS",
        help="per-call latency ceiling for the conformance suite (p95 per method; default 1 s), e.g. 0.5 or search=0.2,ingest=1.",
    )
    group.addoption(
        LATENCY_ENFORCE,
        action="store_true",
        default=None,
        help="fail latency.ceiling when a method's p95 exceeds its ceiling (default: report it as a warning).",
    )
    parser.addini("lens_hypothesis_profile", default="", help="conformance hypothesis profile, as for --lens-hypothesis-profile.")
    parser.addini("lens_latency_ceiling", type="linelist", default=[], help="conformance latency ceilings, as for --lens-latency-ceiling.")
    parser.addini("lens_latency_enforce", type="bool", default=False, help="fail latency.ceiling over the ceiling.")


def read_conformance_settings(config: pytest.Config) -> ConformanceSettings:
    """Read the conformance options; :class:`pytest.UsageError` names the option at fault."""
    from pytest_lens.conformance.latency import parse_ceilings

    entries = list(config.getini("lens_latency_ceiling")) + list(config.getoption(LATENCY_CEILING))
    try:
        ceilings = parse_ceilings(entries)
    except ValueError as exc:
        raise pytest.UsageError(f"{LATENCY_CEILING}: {exc}") from None
    enforce = config.getoption(LATENCY_ENFORCE)
    return ConformanceSettings(
        builtin=bool(config.getoption(CONFORMANCE)),
        profile=config.getoption(HYPOTHESIS_PROFILE) or config.getini("lens_hypothesis_profile") or None,
        latency_ceilings=ceilings,
        enforce_latency=bool(config.getini("lens_latency_enforce") if enforce is None else enforce),
    )
