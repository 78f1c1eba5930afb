"""The generator's signal domains, by name."""

from __future__ import annotations

from pytest_lens.generator.domains.capacity_regime import CAPACITY_REGIME
from pytest_lens.generator.domains.cascading_failure import CASCADING_FAILURE
from pytest_lens.generator.domains.clinical_trial import CLINICAL_TRIAL
from pytest_lens.generator.domains.environmental_drift import ENVIRONMENTAL_DRIFT
from pytest_lens.generator.domains.financial_irregularity import FINANCIAL_IRREGULARITY
from pytest_lens.generator.domains.insider_threat import INSIDER_THREAT
from pytest_lens.generator.spec import DomainSpec

__all__ = ["DOMAINS", "get_domain"]

#: Every built-in domain by name, in presentation order.
DOMAINS: dict[str, DomainSpec] = {
    domain.name: domain
    for domain in (CASCADING_FAILURE, FINANCIAL_IRREGULARITY, CLINICAL_TRIAL, ENVIRONMENTAL_DRIFT, INSIDER_THREAT, CAPACITY_REGIME)
}


def get_domain(name: str) -> DomainSpec:
    """The domain called ``name``; :class:`ValueError` listing the known ones otherwise."""
    try:
        return DOMAINS[name]
    except KeyError:
        raise ValueError(f"unknown domain {name!r}; choose one of {', '.join(DOMAINS)}") from None
