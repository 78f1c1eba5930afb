"""Is the minimum detectable effect honest, and the margin's bound at its level? Seeded changes, decided by the gate's test.

    python benchmarks/mde_check.py RUN.json                      # a run with --lens-controls --lens-mutants=shuffled
    python benchmarks/mde_check.py RUN.json --adapter bm25 --mutant bm25/shuffled --replicates 200
    python benchmarks/mde_check.py RUN.json --mutant random --bootstrap clustered --fractions 0.3,0.45
    python benchmarks/mde_check.py DIR/pool.json --adapter clean --mutant top --margin 0.02   # aa_runs.py's pool

The run must hold the adapter and one of its mutants, answered on the same questions (``--lens-controls``).
Each replicate draws a new benchmark from the run, as the statistics assume questions are drawn: plain,
its questions with replacement; clustered, its scopes with replacement and then each drawn scope's questions.
A seeded fraction ``f`` of the drawn questions take the mutant's scores (a mutant degrading that fraction of
questions: some rise, most fall), the rest keep the adapter's. The true drop of that change is ``f`` times
the mutant's drop over all questions. The baseline comparison's paired test (``paired_tests`` with
``alternative="less"``, as ``--lens-compare-fail`` runs it) then says whether the gate catches it, and what
minimum detectable effect (alpha 0.05, 80% power) the comparison reported.

Where the true drop equals the reported MDE the gate should catch about 80% of the replicates, fewer below
and more above. The table prints, per fraction and bootstrap: the true drop, the mean MDE the comparisons
reported, their ratio, and the replicates caught (with Wilson 95% intervals).

``--margin M``: the non-inferiority gate (``--lens-margin``) passes a change when the one-sided 95% upper bound of
its drop is at most ``M``. Replicates with true drops 0, M/2, M and 1.5 M (fractions of the mutant's drop) say how
often it passes: at M and above a bound at its level passes at most 5%.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from pytest_lens.analysis.run import pair_results, paired_tests, scope_of
from pytest_lens.records.results import QuestionResult
from pytest_lens.runs.storage import load_run
from pytest_lens.scoring.composite import HardGate
from pytest_lens.scoring.headline import recorded_headline
from rates import wilson

FRACTIONS = (0.2, 0.35, 0.5, 0.65, 0.8, 1.0)


def draw(
    pairs: list[tuple[QuestionResult, QuestionResult]], rng: np.random.Generator, clustered: bool, size: int | None = None
) -> list[tuple[int, int]]:
    """A benchmark drawn from the run: (question index, drawn cluster) for questions with replacement, or scopes then questions.

    ``size``: draw that many scopes (then their questions), whichever test follows; default as many as the run has.
    """
    if not clustered and size is None:
        return [(int(i), 0) for i in rng.integers(0, len(pairs), len(pairs))]
    scopes: dict[str, list[int]] = {}
    for index, (result, _) in enumerate(pairs):
        scopes.setdefault(result.scope_id, []).append(index)
    members = list(scopes.values())
    chosen = rng.integers(0, len(members), size or len(members))
    return [(int(m), slot) for slot, c in enumerate(chosen) for m in rng.choice(members[c], len(members[c]))]


def replicate(
    pairs: list[tuple[QuestionResult, QuestionResult]],
    fraction: float,
    seed: int,
    clustered: bool,
    weights: dict[str, float],
    gates: list[HardGate],
    alpha: float,
    size: int | None = None,
) -> tuple[bool, float, float]:
    """One drawn benchmark with ``fraction`` of its questions mutated: (caught by the gate's test, its MDE, its drop bound)."""
    rng = np.random.default_rng(seed)
    drawn = draw(pairs, rng, clustered, size)
    mutated = set(rng.choice(len(drawn), round(fraction * len(drawn)), replace=False).tolist())
    before, after = [], []
    for slot, (index, cluster) in enumerate(drawn):
        adapter, mutant = pairs[index]
        # Each drawn question gets a key of its own, each drawn scope a scope id of its own (one cluster).
        key = {"question_id": f"{adapter.question_id}#{slot}", "scope_id": f"{adapter.scope_id}#{cluster}"}
        before.append(adapter.model_copy(update=key))
        after.append((mutant if slot in mutated else adapter).model_copy(update=key))
    test, _ = paired_tests(
        list(zip(before, after, strict=True)),
        weights,
        gates,
        alternative="less",
        seed=seed,
        clusters=scope_of if clustered else None,
        alpha=alpha,
    )
    return test.p_value < alpha, test.mde or 0.0, math.inf if test.drop_bound is None else test.drop_bound


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--adapter", default="bm25")
    parser.add_argument("--mutant", default=None, help="control label (default: ADAPTER/shuffled)")
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--fractions", default=",".join(str(f) for f in FRACTIONS))
    parser.add_argument("--bootstrap", choices=("plain", "clustered", "both"), default="both")
    parser.add_argument("--scopes", type=int, default=None, help="scopes per drawn benchmark (default: the run's)")
    parser.add_argument("--margin", type=float, default=None, help="also: pass rates of --lens-margin=M at drops 0, M/2, M, 1.5M")
    args = parser.parse_args()
    artifact = load_run(args.run)
    _, recorded_weights, recorded_gates = recorded_headline(artifact.run)
    weights, gates = dict(recorded_weights), list(recorded_gates)
    mutant_label = args.mutant or f"{args.adapter}/shuffled"
    names = [name for name, w in weights.items() if w > 0]

    def slim(results: list[QuestionResult]) -> list[QuestionResult]:
        # Only the headline's metrics: the per-metric tests are not what the gate decides on.
        return [r.model_copy(update={"metrics": {k: v for k, v in r.metrics.items() if k in names}}) for r in results]

    adapter = slim([r for r in artifact.results if r.adapter == args.adapter and r.measured])
    mutant = slim([r for r in artifact.results if r.adapter == mutant_label and r.measured])
    pairs = pair_results(adapter, mutant)
    if not pairs:
        print(f"no questions of {args.adapter} paired with {mutant_label} in {args.run}", file=sys.stderr)
        return 2
    total = sum(weights[n] for n in names)

    def score(result: QuestionResult) -> float:
        return sum(weights[n] * result.metrics.get(n, 0.0) for n in names) / total

    full_drop = float(np.mean([score(a) - score(m) for a, m in pairs]))
    print(f"{args.adapter} vs {mutant_label}: {len(pairs)} questions, {len({a.scope_id for a, _ in pairs})} scopes, drop {full_drop:.3f}")
    print(f"{'bootstrap':<10} {'fraction':>8} {'true drop':>9} {'mean MDE':>8} {'drop/MDE':>8}  caught")
    modes = [mode == "clustered" for mode in ("plain", "clustered") if args.bootstrap in (mode, "both")]
    for clustered in modes:
        for fraction in (float(f) for f in args.fractions.split(",")):
            outcomes = [
                replicate(pairs, fraction, seed, clustered, weights, gates, args.alpha, args.scopes) for seed in range(args.replicates)
            ]
            caught = sum(1 for hit, _, _ in outcomes if hit)
            mde = float(np.mean([m for _, m, _ in outcomes]))
            drop = fraction * full_drop
            name = "clustered" if clustered else "plain"
            print(f"{name:<10} {fraction:>8.2f} {drop:>9.3f} {mde:>8.3f} {drop / mde:>8.2f}  {wilson(caught, args.replicates)}")
    if args.margin is not None:
        margin_table(pairs, full_drop, args, weights, gates, modes)
    return 0


def margin_table(pairs, full_drop, args, weights, gates, modes) -> None:  # type: ignore[no-untyped-def]
    """How often --lens-margin=M passes changes whose true drop is 0, M/2, M and 1.5 M."""
    margin = args.margin
    print(f"\n--lens-margin={margin:g}: passes when the one-sided {1 - args.alpha:.0%} upper bound of the drop is <= {margin:g}")
    print(f"{'bootstrap':<10} {'true drop':>9}  passed")
    for clustered in modes:
        for share in (0.0, 0.5, 1.0, 1.5):
            fraction = share * margin / full_drop
            if fraction > 1:
                print(f"{'':<10} {share * margin:>9.3f}  (the mutant drops only {full_drop:.3f}: no fraction of it drops this much)")
                continue
            outcomes = [
                replicate(pairs, fraction, seed, clustered, weights, gates, args.alpha, args.scopes) for seed in range(args.replicates)
            ]
            passed = sum(1 for _, _, bound in outcomes if bound <= margin)
            name = "clustered" if clustered else "plain"
            print(f"{name:<10} {share * margin:>9.3f}  {wilson(passed, args.replicates)}")

    return 0


if __name__ == "__main__":
    raise SystemExit(main())
