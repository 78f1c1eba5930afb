"""Per-call latency: ceilings, statistics and what is reported.

Every adapter call the suite makes is timed by :class:`AdapterCaller`. Ceilings
are per method (``search=0.2``) or for every method (``1.0``); a method is over
its ceiling when its 95th-percentile call is slower. Advisory by default: a
conformance run reports it without failing unless asked to enforce.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "ALL_METHODS",
    "DEFAULT_CEILING_S",
    "LatencyStats",
    "LensLatencyWarning",
    "ceiling_for",
    "latency_stats",
    "over_ceiling",
    "parse_ceilings",
]

#: Key of the ceiling that applies to every method without its own.
ALL_METHODS = "*"
#: Default ceiling per call, in seconds.
DEFAULT_CEILING_S = 1.0


def parse_ceilings(entries: Iterable[str]) -> dict[str, float]:
    """``["0.5", "search=0.2,ingest=1"]`` -> ``{"*": 0.5, "search": 0.2, "ingest": 1.0}``; ValueError says what is wrong."""
    ceilings: dict[str, float] = {}
    for entry in entries:
        for part in str(entry).split(","):
            part = part.strip()
            if not part:
                continue
            method, sep, raw = part.rpartition("=")
            key = method.strip() if sep else ALL_METHODS
            try:
                seconds = float(raw)
            except ValueError:
                raise ValueError(f"{part!r}: expected SECONDS or METHOD=SECONDS, e.g. 0.5 or search=0.2") from None
            if not math.isfinite(seconds) or seconds <= 0:
                raise ValueError(f"{part!r}: a ceiling must be a positive number of seconds")
            if not key:
                raise ValueError(f"{part!r}: empty method name")
            ceilings[key] = seconds
    return ceilings


def ceiling_for(ceilings: Mapping[str, float], method: str) -> float:
    """The ceiling that applies to ``method``."""
    return ceilings.get(method, ceilings.get(ALL_METHODS, DEFAULT_CEILING_S))


@dataclass(frozen=True)
class LatencyStats:
    """Latency of one method's calls, in seconds."""

    method: str
    calls: int
    p50: float
    p95: float
    max: float


def _percentile(ordered: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of sorted values."""
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def latency_stats(latencies: Mapping[str, Sequence[float]]) -> list[LatencyStats]:
    """p50, p95 and max per method (methods in alphabetical order; methods never called are left out)."""
    stats = []
    for method in sorted(latencies):
        ordered = sorted(latencies[method])
        if ordered:
            stats.append(LatencyStats(method, len(ordered), _percentile(ordered, 0.5), _percentile(ordered, 0.95), ordered[-1]))
    return stats


def over_ceiling(stats: Iterable[LatencyStats], ceilings: Mapping[str, float]) -> list[str]:
    """One line per method whose p95 exceeds its ceiling."""
    lines = []
    for stat in stats:
        ceiling = ceiling_for(ceilings, stat.method)
        if stat.p95 > ceiling:
            lines.append(
                f"{stat.method}() p95 {stat.p95 * 1000:,.1f} ms exceeds the ceiling of {ceiling * 1000:,.0f} ms "
                f"({stat.calls} calls, max {stat.max * 1000:,.1f} ms)"
            )
    return lines


class LensLatencyWarning(UserWarning):
    """An adapter method is slower than its advisory latency ceiling."""
