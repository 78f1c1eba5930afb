"""Time the run statistics and the baseline comparison as runs grow (prints a table; not a test).

    python benchmarks/bench_statistics.py
    python benchmarks/bench_statistics.py --sizes 2400 33334 --bootstrap plain clustered two-stage --repeats 1

Synthetic per-question metrics (seeded); three adapters so the pairwise tests and Kendall's W run too; a question's
scope is its index modulo ``--scopes`` (so 33,334 questions per adapter, 10^5 in all, fall in 1,000 scopes by default).
Each ``--bootstrap`` mode is the run's own: ``clustered`` and ``two-stage`` resample (or leave out) whole scopes, as
``--lens-bootstrap`` does; the comparison with a baseline includes the minimum detectable effect of each pair.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from pytest_lens.analysis.baseline import compare_with_baseline
from pytest_lens.analysis.run import analyze_run, clusters_for
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.records.statistics import BaselineInfo
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, composite

TYPES = ["longitudinal", "negative", "temporal", "counterfactual", "paraphrase", "distractor_resistance"]


def synthetic(adapter: str, n: int, rng: np.random.Generator, scopes: int = 6) -> list[QuestionResult]:
    out = []
    for i in range(n):
        metrics = {
            "evidence_grounding": float(rng.choice([0.0, 0.5, 1.0], p=[0.05, 0.15, 0.8])),
            "evidence_coverage": float(rng.integers(0, 5) / 4),
            "citation_coverage": float(rng.integers(0, 5) / 4),
            "budget_compliance": 1.0,
        }
        score = composite(metrics, DEFAULT_WEIGHTS, DEFAULT_GATES)
        out.append(
            QuestionResult(
                adapter=adapter, scope_id=f"s{i % scopes}", checkpoint=10, question_id=f"q{i:05d}", question_type=TYPES[i % len(TYPES)],
                category="synthesis", budget="16k", agent="offline", prompt="?", answer="", cited_refs=[], returned_refs=[],
                required_refs=[], tool_calls=[], result_tokens=0, turns=0, agent_tokens=0, violations=[], metrics=metrics,
                composite=score.value, gated=score.gated,
            )
        )  # fmt: skip
    return out


def median_seconds(action: Callable[[], object], repeats: int = 3) -> tuple[float, float]:
    """Median wall and CPU seconds of ``action`` (CPU time says what a busy shared machine stretches)."""
    walls, cpus = [], []
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        action()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[24, 120, 720, 2400], help="questions per adapter")
    parser.add_argument("--scopes", type=int, default=1000, help="scopes the questions fall in (at most one per question)")
    parser.add_argument("--bootstrap", nargs="+", default=["plain"], choices=("plain", "clustered", "two-stage"))
    parser.add_argument("--repeats", type=int, default=3, help="timings per cell (median)")
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    print(f"load average {' '.join(f'{value:.1f}' for value in os.getloadavg())} on {os.cpu_count()} CPUs; seconds: wall (CPU)")
    print(f"{'questions/adapter':>18} {'adapters':>8} {'scopes':>7} {'mode':>10} {'analyze_run s':>16} {'vs baseline s':>16}")
    for n in args.sizes:
        scopes = min(n, args.scopes)
        runs = {name: synthetic(name, n, rng, scopes) for name in ("a", "b", "c")}
        results = [r for group in runs.values() for r in group]
        baseline = RunArtifact(pytest_lens_version="0", created="", run={}, results=synthetic("a", n, rng, scopes), summary={})
        info = BaselineInfo(name="base", path="-", created="")
        for mode in args.bootstrap:
            clusters = clusters_for(results, mode)
            analyze = median_seconds(partial(analyze_run, results, DEFAULT_WEIGHTS, DEFAULT_GATES, clusters=clusters), args.repeats)
            against = partial(compare_with_baseline, runs["a"], RunIdentity(), baseline, info, DEFAULT_WEIGHTS, DEFAULT_GATES)
            compare = median_seconds(partial(against, clusters=clusters), args.repeats)
            shown = [f"{wall:.2f} ({cpu:.2f})" for wall, cpu in (analyze, compare)]
            print(f"{n:>18} {3:>8} {scopes:>7} {mode:>10} {shown[0]:>16} {shown[1]:>16}")


if __name__ == "__main__":
    main()
