"""Time the run statistics and the baseline comparison as runs grow (prints a table; not a test).

    python benchmarks/bench_statistics.py

Synthetic per-question metrics (seeded); three adapters so the pairwise tests and Kendall's W run too.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from pytest_lens.analysis.baseline import compare_with_baseline
from pytest_lens.analysis.run import analyze_run
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


def median_seconds(action: object, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(42)
    print(f"{'questions/adapter':>18} {'adapters':>8} {'analyze_run s':>14} {'vs baseline s':>14}")
    for n in (24, 120, 720, 2400):
        runs = {name: synthetic(name, n, rng) for name in ("a", "b", "c")}
        results = [r for group in runs.values() for r in group]
        baseline = RunArtifact(pytest_lens_version="0", created="", run={}, results=synthetic("a", n, rng), summary={})
        info = BaselineInfo(name="base", path="-", created="")
        analyze = median_seconds(lambda: analyze_run(results, DEFAULT_WEIGHTS, DEFAULT_GATES))  # noqa: B023
        compare = median_seconds(lambda: compare_with_baseline(runs["a"], RunIdentity(), baseline, info, DEFAULT_WEIGHTS, DEFAULT_GATES))  # noqa: B023
        print(f"{n:>18} {3:>8} {analyze:>14.3f} {compare:>14.3f}")


if __name__ == "__main__":
    main()
