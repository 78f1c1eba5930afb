"""The conformance suite's command-line options and ini keys (light: loaded on every pytest run)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from pytest_lens.plugin.options import given_fields, read_options, register
from pytest_lens.records.options import Option

__all__ = [
    "CONFORMANCE",
    "HYPOTHESIS_PROFILE",
    "LATENCY_CEILING",
    "LATENCY_ENFORCE",
    "OPTIONS",
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


def _ceilings(text: str) -> dict[str, float]:
    """One ``--lens-latency-ceiling`` entry: ``0.5`` or ``search=0.2,ingest=1``."""
    from pytest_lens.conformance.latency import parse_ceilings

    return parse_ceilings([text])


#: The conformance rows of the option table (:mod:`pytest_lens.records.options`), after the LENS ones in ``pytest --help``.
OPTIONS: tuple[Option, ...] = (
    Option(
        CONFORMANCE,
        None,
        "run the adapter conformance suite (hypothesis property tests of the contract) instead of the LENS questions.",
        field="builtin",
        action="store_true",
    ),
    Option(
        HYPOTHESIS_PROFILE,
        "lens_hypothesis_profile",
        "conformance thoroughness: ci (bounded, deterministic; default when CI is set), dev (default), thorough, "
        "or any registered hypothesis profile.",
        "conformance hypothesis profile, as for --lens-hypothesis-profile.",
        field="profile",
        metavar="NAME",
    ),
    Option(
        LATENCY_CEILING,
        "lens_latency_ceiling",
        "per-call latency ceiling for the conformance suite (p95 per method; default 1 s), e.g. 0.5 or search=0.2,ingest=1.",
        "conformance latency ceilings, as for --lens-latency-ceiling.",
        parse=_ceilings,
        action="append",
        metavar="[METHOD=]SECONDS",
        extend=True,
    ),
    Option(
        LATENCY_ENFORCE,
        "lens_latency_enforce",
        "fail latency.ceiling when a method's p95 exceeds its ceiling (default: report it as a warning).",
        "fail latency.ceiling over the ceiling.",
        field="enforce_latency",
        action="store_true",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    """Register the conformance options in the ``lens`` group."""
    register(parser, OPTIONS)


def read_conformance_settings(config: pytest.Config) -> ConformanceSettings:
    """Read the conformance options; :class:`pytest.UsageError` names the option at fault."""
    values = read_options(config, OPTIONS)
    fields = given_fields(values, OPTIONS)
    # Later entries win: the command line's over the ini file's, as one parse_ceilings over all of them would.
    ceilings = {method: seconds for entry in values.get(LATENCY_CEILING, ()) for method, seconds in entry.items()}
    return ConformanceSettings(**fields, latency_ceilings=ceilings)
