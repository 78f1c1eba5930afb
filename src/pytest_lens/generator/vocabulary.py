"""Which words a distractor may share with the signal: the report format and generic measurement syntax.

The paper's distractors "share section headers and measurement syntax but contain no terms
related to the signal storyline". Here that is a rule: the *storyline terms* of a scope are
the content words of its signal reports minus :data:`SHARED_TERMS` (and numbers); no
distractor may contain one. Generic measurement words (``cpu``, ``latency``, ``queue``,
``errors``...) are shared on purpose, so a keyword query has to tell topics apart by the
storyline's own words, as with real monitoring data.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_lens.generator.renderer import FORMAT_TERMS
from pytest_lens.text import STOPWORDS, words

__all__ = ["MEASUREMENT_TERMS", "SHARED_TERMS", "storyline_terms", "topic_terms"]

# fmt: off
#: Generic measurement and operations vocabulary any monitoring report may use.
MEASUREMENT_TERMS = frozenset({
    "cpu", "memory", "disk", "storage", "used", "free", "capacity", "utilisation", "load", "latency", "p50", "p90", "p95",
    "p99", "mean", "average", "median", "peak", "max", "total", "count", "rate", "errors", "error", "requests", "calls",
    "sessions", "connections", "queue", "queued", "depth", "waiting", "active", "idle", "backlog", "throughput", "volume",
    "open", "closed", "pending", "completed", "failed", "passed", "retries", "timeouts", "alerts", "warnings", "incidents",
    "tickets", "uptime", "availability", "temperature", "level", "pressure", "flow", "daily", "weekly", "morning",
    "afternoon", "evening", "overnight", "routine", "scheduled", "maintenance", "checks", "check", "review", "status",
    "normal", "steady", "stable", "within", "expected", "range", "quiet", "handoff", "team", "staff", "service",
    "services", "health", "performance", "degraded", "lag", "restart", "restarted", "window", "schedule", "shift",
    "processing", "safety", "water", "quality", "activity", "system",
    # Quantity words the LLM renderer is given in place of numbers.
    "several", "few", "dozen", "dozens",
})
# fmt: on

#: Words any report may contain whatever its topic.
SHARED_TERMS = FORMAT_TERMS | MEASUREMENT_TERMS


def topic_terms(text: str) -> set[str]:
    """Content words of ``text`` that say what it is about: no numbers, no shared format or measurement words."""
    candidates = set(words(text)) - STOPWORDS - SHARED_TERMS
    return {term for term in candidates if len(term) > 1 and not term.isdigit()}


def storyline_terms(signal_texts: Iterable[str]) -> set[str]:
    """The storyline terms of a scope: every topic word of its signal reports."""
    terms: set[str] = set()
    for text in signal_texts:
        terms |= topic_terms(text)
    return terms
