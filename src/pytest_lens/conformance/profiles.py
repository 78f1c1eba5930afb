"""Hypothesis profiles for the conformance suite, registered in code and never loaded globally.

``lens-ci`` is bounded and deterministic (derandomized, no example database), the
default when ``CI`` is set; ``lens-dev`` (the default elsewhere) explores with
random seeds and remembers failing examples in ``.hypothesis/``; ``lens-thorough``
runs ten times the examples of ``lens-dev``. The suite applies the chosen profile
to its own properties only: the user's loaded hypothesis profile, and their own
``@given`` tests, are left alone. Any registered hypothesis profile may be named
instead; deadlines are always off (latency is judged by ``latency.ceiling``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hypothesis import HealthCheck, Phase, settings

__all__ = ["PROFILES", "clause_settings", "default_profile", "profile_name", "register_profiles"]

#: Short name -> registered hypothesis profile.
PROFILES: Mapping[str, str] = {"ci": "lens-ci", "dev": "lens-dev", "thorough": "lens-thorough"}

_SUPPRESSED = (HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example, HealthCheck.filter_too_much)
#: No ``explain`` phase: it replays the failure many times to annotate it, which costs adapter calls and adds nothing here.
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)


def register_profiles() -> None:
    """Register ``lens-ci``, ``lens-dev`` and ``lens-thorough`` (idempotent; loads none of them)."""
    common = {"deadline": None, "suppress_health_check": _SUPPRESSED, "phases": _PHASES, "print_blob": False}
    settings.register_profile("lens-ci", max_examples=25, derandomize=True, database=None, **common)  # type: ignore[arg-type]
    settings.register_profile("lens-dev", max_examples=50, **common)  # type: ignore[arg-type]
    settings.register_profile("lens-thorough", max_examples=500, **common)  # type: ignore[arg-type]


def default_profile(environ: Mapping[str, str] | None = None) -> str:
    """``ci`` when the ``CI`` environment variable is set to a true value, else ``dev``."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return "ci" if value.strip().lower() not in ("", "0", "false", "no", "off") else "dev"


def profile_name(name: str) -> str:
    """The registered hypothesis profile for ``name`` (a short name or any registered profile); ValueError if unknown."""
    register_profiles()
    registered = PROFILES.get(name, name)
    try:
        settings.get_profile(registered)
    except Exception:
        raise ValueError(f"unknown hypothesis profile {name!r}: use ci, dev, thorough or a profile your conftest registers") from None
    return registered


def clause_settings(name: str, cost: float = 1.0) -> settings:
    """Settings for one clause: the profile's, with ``max_examples`` scaled by the clause's cost, one bug reported."""
    base = settings.get_profile(profile_name(name))
    return settings(
        base,
        max_examples=max(1, round(base.max_examples * cost)),
        deadline=None,
        report_multiple_bugs=False,
        suppress_health_check=tuple(set(base.suppress_health_check) | set(_SUPPRESSED)),
    )
