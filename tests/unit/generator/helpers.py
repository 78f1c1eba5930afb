"""Shared strategies and a cache of generated scopes for the generator's tests."""

from __future__ import annotations

import os
from functools import lru_cache

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from pytest_lens.datasets.models import Episode
from pytest_lens.generator import DOMAINS, GeneratedScope, generate_scope

# Each example generates a whole scope: bounded examples, derandomized under CI=true.
CI = os.environ.get("CI") == "true"
PROPERTY_SETTINGS = settings(
    max_examples=10 if CI else 25,
    derandomize=CI,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

domains = st.sampled_from(sorted(DOMAINS))
seeds = st.integers(min_value=0, max_value=2**31 - 1)


@lru_cache(maxsize=64)
def scope_of(domain: str, seed: int) -> GeneratedScope:
    """The generator's output without its own checks: the tests check the promises themselves."""
    return generate_scope(domain, seed, verify=False)


def signal_episodes(scope: GeneratedScope) -> list[Episode]:
    return [e for e in scope.dataset.scopes[0].episodes if scope.labels[e.episode_id].kind == "signal"]


def distractor_episodes(scope: GeneratedScope) -> list[Episode]:
    return [e for e in scope.dataset.scopes[0].episodes if scope.labels[e.episode_id].kind == "distractor"]
