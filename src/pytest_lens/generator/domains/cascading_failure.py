"""Cascading infrastructure failure: a throttled third-party API slowly starves a checkout platform."""

from __future__ import annotations

from pytest_lens.generator.spec import DomainSpec, EventSpec, Role, SeriesSpec, Shape, StoryPhrases
from pytest_lens.generator.themes import BACKUP_VAULT, MAIL_RELAY, PRINT_FLEET

__all__ = ["CASCADING_FAILURE"]

_POOL_EXHAUSTED = (
    "primary pool exhausted",
    ("primary pool exhaustion", "exhausted the primary pool", "pool exhaustion", "pool was exhausted"),
)

CASCADING_FAILURE = DomainSpec(
    name="cascading_failure",
    code="cf",
    description="A geo-lookup provider throttles a shared API key; retries pile up until checkout requests fail.",
    series=(
        SeriesSpec("checkout", "requests", 118000, noise=0.03, role=Role.VOLUME),
        SeriesSpec("checkout", "error rate", 0.12, "%", decimals=2, noise=0.06, shape=Shape.CONSEQUENCE, gain=18, role=Role.SECONDARY),
        SeriesSpec("checkout", "p95 latency", 240, "ms", noise=0.04, shape=Shape.CONSEQUENCE, gain=2.5),
        SeriesSpec("geo-lookup", "p99 latency", 180, "ms", noise=0.03, shape=Shape.DRIFT, gain=5.0, role=Role.PRIMARY),
        SeriesSpec("geo-lookup", "calls", 121000, noise=0.03, shape=Shape.CONSEQUENCE, gain=1.4),
        SeriesSpec("geo-lookup", "timeouts", 3, noise=0.2, shape=Shape.CONSEQUENCE, gain=40),
        SeriesSpec("fraud-screen", "retries", 40, noise=0.08, shape=Shape.CONSEQUENCE, gain=9),
        SeriesSpec("fraud-screen", "cpu", 38, "%", noise=0.04),
        SeriesSpec("pricing", "p50 latency", 34, "ms", noise=0.04, shape=Shape.BUMP, gain=0.9, role=Role.HERRING),
        SeriesSpec("pricing", "cache hits", 94.1, "%", decimals=1, noise=0.004),
        SeriesSpec("product search", "queries", 176000, noise=0.04),
        SeriesSpec("product search", "p90 latency", 120, "ms", noise=0.05),
        SeriesSpec("db-main", "disk used", 61, "%", noise=0.01, role=Role.SUSPECT),
        SeriesSpec("db-main", "replication lag", 0.4, "s", decimals=1, noise=0.08),
        SeriesSpec("primary pool", "connections in use", 68, noise=0.05, shape=Shape.CONSEQUENCE, gain=1.9),
        SeriesSpec("primary pool", "wait", 2, "ms", noise=0.2, shape=Shape.CONSEQUENCE, gain=60),
        SeriesSpec("cdn", "edge hits", 93.5, "%", decimals=1, noise=0.005),
        SeriesSpec("cdn", "egress", 6.2, "Gbps", decimals=1, noise=0.05),
    ),
    herring_start=EventSpec(
        "pricing-engine v{release} rolled out to all regions",
        "pricing-engine v{release} rolled out",
        ("rollout of pricing-engine v{release}", "pricing-engine v{release} release", "pricing-engine v{release} deployment"),
        section="changes",
    ),
    herring_end=EventSpec(
        "pricing-engine v{release} rolled back to the previous build",
        "pricing-engine v{release} rolled back",
        ("rollback of pricing-engine v{release}", "pricing-engine rollback", "rolled back pricing-engine"),
        section="changes",
    ),
    escalation=(
        EventSpec("Primary pool exhausted during the evening peak; checkout error rate touched {value}%.", *_POOL_EXHAUSTED),
        EventSpec("Primary pool exhausted twice before noon while checkout requests queued behind geo-lookup calls.", *_POOL_EXHAUSTED),
        EventSpec("Primary pool exhausted for most of the afternoon; on-call paged the geo-lookup maintainers.", *_POOL_EXHAUSTED),
        EventSpec("Primary pool exhausted again at the lunchtime peak; {value}% of checkout requests failed.", *_POOL_EXHAUSTED),
    ),
    root_cause=EventSpec(
        "Vendor ticket GEO-{ticket}: the geo-lookup provider throttles the shared API key at {rate} calls per second "
        "since the {plan} plan took effect.",
        "throttles the shared API key",
        (
            "throttled at {rate} calls per second",
            "throttling at {rate} calls per second",
            "throttling the shared API key",
            "limit of {rate} calls per second",
            "rate limit of {rate} calls per second",
        ),
    ),
    corroboration=EventSpec(
        "Trace analysis: fraud-screen retries every timed-out geo-lookup call {attempts} times, multiplying calls against the limited key.",
        "fraud-screen retries every timed-out geo-lookup call",
        ("retried {attempts} times", "fraud-screen retries each timed-out", "retry amplification", "retries multiply the calls"),
    ),
    phrases=StoryPhrases(
        system="the storefront platform",
        area="service health",
        consequence="checkout errors",
        primary="geo-lookup p99 latency",
        herring="the pricing-engine v{release} rollout",
        volume="checkout request volume",
        suspect="disk usage on db-main",
        cause="the geo-lookup provider throttles the shared API key at {rate} calls per second, and fraud-screen retries "
        "multiply the calls until the primary pool is exhausted and checkout requests fail",
        action="Raise or split the geo-lookup API key limit with the provider, cap fraud-screen retries with backoff and a "
        "circuit breaker, and alert on geo-lookup p99 latency before the primary pool saturates.",
        dependency_question="Are any upstream dependencies of the storefront showing degraded performance?",
        why_question="Why are checkout requests failing?",
        escalation="primary pool exhaustion",
    ),
    routine_notes=(
        "Evening peak handled without paging.",
        "Fraud-screen model refresh landed ahead of schedule.",
        "Storefront canary checks green across regions.",
        "Service health dashboard green for the storefront.",
        "Geo-lookup cache warmed after the nightly restart.",
        "Checkout A/B test holding at {nn}% exposure.",
        "On-call handoff quiet; {n} minor checkout tickets carried over.",
        "Db-main vacuum took {nn} min.",
        "Pricing cache primed before the morning traffic ramp.",
        "Product search reindex skipped; no listing edits pending.",
        "CDN purge for the spring banner propagated in {n} min.",
        "Synthetic checkout probes green from {n} regions.",
        "Payment settlement file received from the acquirer.",
    ),
    routine_changes=(
        "rotated storefront access logs",
        "raised the checkout canary sample to {nn}%",
        "updated the fraud-screen rules bundle",
        "renewed the storefront certificate",
        "scaled checkout workers up by {n} replicas",
    ),
    themes=(MAIL_RELAY, BACKUP_VAULT, PRINT_FLEET),
    variables={
        "release": ("4.2", "4.7", "5.1", "5.3", "6.0"),
        "ticket": ("4471", "5208", "6133", "7390", "8025"),
        "rate": ("25", "30", "40", "50"),
        "plan": ("Standard", "Growth", "Starter"),
        "attempts": ("3", "4", "5"),
    },
)
