"""Plain versus clustered bootstrap: interval widths on real runs, and coverage where scopes move together.

    python benchmarks/clustered_coverage.py                          # the simulation only
    python benchmarks/clustered_coverage.py --runs a.json b.json     # and the headline CI widths of saved runs

Widths: each run's headline CI per adapter, with the questions resampled alone (``--lens-bootstrap=plain``),
whole scopes resampled (``clustered``) and scopes then their questions (``two-stage``), through ``analyze_run``
as a run computes them.

Coverage: synthetic benchmarks of ``G`` scopes of ``m`` questions whose scores share a scope effect
(score = 0.4 + scope effect N(0, 0.12) + question noise N(0, 0.2): an intra-scope correlation of about
0.26, as questions over one stream have). The true mean is 0.4; the table counts how often each 95%
interval contains it. An interval that ignores the scopes is too narrow by the design effect
``sqrt(1 + (m - 1) ICC)``; resampling whole scopes is not, though with few scopes a percentile
bootstrap still covers a little less than it says; resampling their questions again as well (two-stage)
counts the within-scope variance twice and covers more than it says.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from pytest_lens.analysis import stats
from pytest_lens.analysis.run import analyze_run, scope_of, scope_then_question
from pytest_lens.records.results import LENS, RunArtifact
from pytest_lens.scoring.headline import recorded_headline

TRUE_MEAN = 0.4


SCHEMES = ("plain", "clustered", "two-stage")


def widths(path: Path) -> None:
    artifact = RunArtifact.model_validate_json(path.read_text(encoding="utf-8"))
    score, weights, gates = recorded_headline(artifact.run)
    results = [r for r in artifact.results if r.suite == LENS and r.measured and r.control is None]
    found = {
        name: analyze_run(results, weights, gates, score=score, clusters=clusters)
        for name, clusters in zip(SCHEMES, (None, scope_of, scope_then_question), strict=True)
    }
    scopes = len({r.scope_id for r in results})
    for key, plain in found["plain"].adapters.items():
        cells = []
        for name in SCHEMES:
            e = found[name].adapters[key].composite
            assert e.low is not None and e.high is not None
            cells.append(f"[{e.low:.3f}, {e.high:.3f}] {e.high - e.low:.3f}")
        print(f"{path.name:<24} {key:<14} {scopes:>6} {plain.composite.n:>5} {plain.composite.value:>6.3f}  " + "  ".join(cells))


def coverage(scopes: int, size: int, simulations: int, seed: int) -> dict[str, tuple[float, float]]:
    """Per scheme: the share of intervals containing the true mean, and their mean width."""
    rng = np.random.default_rng(seed)
    labels = [c for c in range(scopes) for _ in range(size)]
    covered = dict.fromkeys(SCHEMES, 0)
    width = dict.fromkeys(SCHEMES, 0.0)
    for simulation in range(simulations):
        effects = rng.normal(0.0, 0.12, scopes)
        values = np.concatenate([TRUE_MEAN + effect + rng.normal(0.0, 0.2, size) for effect in effects])
        for name, clusters, staged in (("plain", None, False), ("clustered", labels, False), ("two-stage", labels, True)):
            interval = stats.mean_interval(values, seed=simulation, clusters=clusters, two_stage=staged)
            assert interval is not None
            covered[name] += interval.contains(TRUE_MEAN)
            width[name] += interval.high - interval.low
    return {name: (covered[name] / simulations, width[name] / simulations) for name in SCHEMES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="*", default=[])
    parser.add_argument("--simulations", type=int, default=400)
    args = parser.parse_args()
    if args.runs:
        print(
            f"{'run':<24} {'adapter':<14} {'scopes':>6} {'n':>5} {'score':>6}  "
            + "  ".join(f"{name + ' 95% CI, width':<22}" for name in SCHEMES)
        )
        for path in args.runs:
            widths(path)
        print()
    print(f"coverage of the true mean by 95% intervals ({args.simulations} simulated benchmarks each, ICC about 0.26)")
    print(f"{'scopes':>6} {'questions':>9}  " + "  ".join(f"{name + ' cover, width':>22}" for name in SCHEMES))
    for scopes, size in ((6, 24), (12, 24), (24, 24)):
        found = coverage(scopes, size, args.simulations, seed=scopes)
        cells = "  ".join(f"{found[name][0]:>14.1%} {found[name][1]:>7.3f}" for name in SCHEMES)
        print(f"{scopes:>6} {scopes * size:>9}  {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
