from __future__ import annotations

import pytest
from hypothesis import settings

from pytest_lens.conformance.profiles import clause_settings, default_profile, profile_name


def test_ci_is_the_default_where_ci_is_set() -> None:
    assert default_profile({"CI": "true"}) == "ci"
    assert default_profile({"CI": "1"}) == "ci"
    assert default_profile({"CI": "false"}) == "dev"
    assert default_profile({}) == "dev"


def test_short_names_map_to_registered_profiles_and_unknown_names_are_refused() -> None:
    assert profile_name("ci") == "lens-ci"
    assert profile_name("thorough") == "lens-thorough"
    settings.register_profile("someone-elses", max_examples=3)
    assert profile_name("someone-elses") == "someone-elses"
    with pytest.raises(ValueError, match="unknown hypothesis profile 'nope'"):
        profile_name("nope")


def test_clause_settings_are_bounded_deterministic_and_leave_the_loaded_profile_alone() -> None:
    before = settings.default
    ci = clause_settings("ci", cost=0.6)
    assert ci.max_examples == 15 and ci.derandomize and ci.deadline is None and ci.database is None
    assert ci.report_multiple_bugs is False
    assert clause_settings("thorough").max_examples == 500
    assert settings.default is before  # nothing was loaded
