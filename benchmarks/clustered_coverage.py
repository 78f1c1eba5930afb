"""Do the gate and the intervals keep their level? False alarms, coverage and Holm's family rate through the run's own code.

    python benchmarks/clustered_coverage.py                          # synthetic scopes with a known truth
    python benchmarks/clustered_coverage.py --pool DIR/pool.json     # and benchmarks drawn from real per-question scores
    python benchmarks/clustered_coverage.py --runs a.json b.json     # and the headline intervals of saved runs

Every decision is taken by the functions a run and ``lens compare`` call: ``paired_tests`` and
``compare_with_baseline`` (the regression gate's test, one-sided, alpha 0.05), ``adapter_statistics`` (an adapter's
95% interval) and ``analyze_run`` (the table of adapter pairs, two-sided, Holm). Rates are printed with their Wilson
95% intervals and the number of replicates behind them.

Synthetic (known truth): ``G`` scopes of 24 questions whose scores share a scope effect (a question's level is
0.4 + scope effect N(0, 0.12) + N(0, 0.2): intra-scope correlation about 0.26, as questions over one stream have);
each run answers around that level with noise of its own per scope (N(0, 0.05)) and per question (N(0, 0.1)). A/A:
two such runs. Coverage: the share of 95% intervals of one run's headline containing 0.4. Holm: three such runs as
three adapters. Beside each, the cluster bootstrap's percentiles as the gate used them before (for comparison).

Pool (``benchmarks/aa_runs.py pool``: BM25 ``clean``, ``top`` with its best result dropped, ``rnd`` with random
episodes, on hundreds of generated scopes): each replicate draws ``G`` scopes with replacement from the pool (the
pool is the population: its means are the truth), and each run gives every question ``rnd``'s result with
probability 0.3, else ``clean``'s (independently per run): an A/A pair with the real scores' skew and ties. The
known drop: ``clean`` against a run giving every question ``top``'s result with probability 0.5 (truth: half the
pool's ``top - clean``), the change the issue's gate missed. Holm: three such A/A runs as three adapters, their
table of pairs in each ``--lens-bootstrap`` mode (clustered, plain, two-stage; ``--holm-replicates``).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from pytest_lens.analysis import stats
from pytest_lens.analysis.baseline import compare_with_baseline
from pytest_lens.analysis.run import adapter_statistics, analyze_run, pair_results, paired_tests, scope_of, scope_then_question
from pytest_lens.records.identity import RunIdentity
from pytest_lens.records.results import LENS, ListRows, QuestionResult, RunArtifact
from pytest_lens.records.statistics import BaselineInfo
from pytest_lens.runs.storage import load_run
from pytest_lens.scoring.composite import composite
from pytest_lens.scoring.headline import recorded_headline
from rates import wilson

TRUE_MEAN = 0.4
SCOPES = (6, 12, 24)
WEIGHTS = {"m": 1.0}
INFO = BaselineInfo(name="A", path="A.json", created="")


def questions(values: np.ndarray, labels: list[int], adapter: str = "bm25") -> list[QuestionResult]:
    template = QuestionResult(adapter=adapter, scope_id="s", checkpoint=1, question_id="q", question_type="t", category="c",
                              budget="16k", agent="offline", prompt="?")  # fmt: skip
    return [
        template.model_copy(update={"question_id": f"q{i}", "scope_id": f"s{labels[i]}", "metrics": {"m": float(v)}})
        for i, v in enumerate(values)
    ]


def percentile_p(first: np.ndarray, second: np.ndarray, labels: list[int], seed: int) -> tuple[float, float, float]:
    """Before issue 45: the cluster bootstrap's one-sided p (resampled deltas shifted to the null) and percentile CI."""
    d = np.append(second - first, 0.0)
    real = np.append(np.ones(first.size), 0.0)
    found = stats.bootstrap(first.size, lambda i: d[i].sum(-1) / real[i].sum(-1), clusters=labels, seed=seed)
    assert found is not None
    observed = float((second - first).mean())
    null = found.values - observed
    p = (np.sum(null <= observed + 1e-12) + 1) / (null.size + 1)
    low, high = np.percentile(found.values, [2.5, 97.5])
    return float(p), float(low), float(high)


def synthetic(scopes: int, replicates: int, seed: int) -> dict[str, list[bool]]:
    """Outcomes per measure over ``replicates`` simulated benchmarks of ``scopes`` scopes."""
    rng = np.random.default_rng(seed)
    labels = [s for s in range(scopes) for _ in range(24)]
    found: dict[str, list[bool]] = defaultdict(list)

    def answers(level: np.ndarray) -> np.ndarray:
        return level + rng.normal(0, 0.05, scopes)[labels] + rng.normal(0, 0.1, len(labels))

    for replicate in range(replicates):
        level = TRUE_MEAN + rng.normal(0, 0.12, scopes)[labels] + rng.normal(0, 0.2, len(labels))
        first, second = answers(level), answers(level)
        pairs = pair_results(questions(first, labels), questions(second, labels))
        test, _ = paired_tests(pairs, WEIGHTS, (), alternative="less", seed=replicate, clusters=scope_of)
        found["A/A false regression"].append(test.p_value < 0.05)
        found["A/A delta CI covers 0"].append(test.delta.low <= 0 <= test.delta.high)  # type: ignore[operator]
        before_p, before_low, before_high = percentile_p(first, second, labels, replicate)
        found["A/A false regression (before)"].append(before_p < 0.05)
        found["A/A delta CI covers 0 (before)"].append(before_low <= 0 <= before_high)
        estimate = adapter_statistics(questions(level, labels), WEIGHTS, (), seed=replicate, clusters=scope_of).composite
        found["headline CI covers the truth"].append(estimate.low <= TRUE_MEAN <= estimate.high)  # type: ignore[operator]
        if replicate < replicates // 2:  # the three-adapter table costs three comparisons per replicate
            runs = [questions(answers(level), labels, name) for name in ("a", "b", "c")]
            table = analyze_run([r for one in runs for r in one], WEIGHTS, (), seed=replicate, clusters=scope_of)
            found["3 identical adapters: some pair significant"].append(any(p.composite.p_adjusted < 0.05 for p in table.pairs))
    return found


def load_pool(path: Path) -> tuple[dict[str, dict[str, dict[str, QuestionResult]]], dict[str, float], list]:  # type: ignore[type-arg]
    """Per scope, per label (clean, top, rnd), each question's result (headline metrics only); weights and gates."""
    artifact = load_run(path)
    _, weights, gates = recorded_headline(artifact.run)
    names = [name for name, weight in weights.items() if weight > 0]
    pool: dict[str, dict[str, dict[str, QuestionResult]]] = defaultdict(lambda: defaultdict(dict))
    for result in artifact.results:
        if result.suite == LENS and result.measured and all(name in result.metrics for name in names):
            slim = result.model_copy(update={"metrics": {name: result.metrics[name] for name in names}, "adapter": "bm25"})
            pool[result.scope_id][result.adapter][result.question_id] = slim
    complete = {scope: labels for scope, labels in pool.items() if {"clean", "top", "rnd"} <= set(labels)}
    return complete, dict(weights), list(gates)


def pool_truth(pool: dict, weights: dict[str, float], gates: list, label: str) -> float:  # type: ignore[type-arg]
    """The headline of ``label`` over the whole pool (the population the benchmarks are drawn from)."""
    sums: dict[str, list[float]] = defaultdict(list)
    for labels in pool.values():
        for result in labels[label].values():
            for name, value in result.metrics.items():
                sums[name].append(value)
    return composite({name: float(np.mean(values)) for name, values in sums.items()}, weights, gates).value


def drawn(pool: dict, chosen: list[str], rng: np.random.Generator, mix: str, share: float) -> list[QuestionResult]:  # type: ignore[type-arg]
    """One run over the drawn scopes: each question ``mix``'s result with probability ``share``, else ``clean``'s."""
    out = []
    for slot, scope in enumerate(chosen):
        for question, clean in pool[scope]["clean"].items():
            source = pool[scope][mix][question] if rng.random() < share else clean
            out.append(source.model_copy(update={"scope_id": f"{scope}#{slot}"}))
    return out


def from_pool(pool: dict, weights: dict[str, float], gates: list, scopes: int, replicates: int, seed: int) -> dict[str, list[bool]]:  # type: ignore[type-arg]
    rng = np.random.default_rng(seed)
    names = sorted(pool)
    truth_drop = 0.5 * (pool_truth(pool, weights, gates, "top") - pool_truth(pool, weights, gates, "clean"))
    truth_clean = pool_truth(pool, weights, gates, "clean")
    found: dict[str, list[bool]] = defaultdict(list)
    for replicate in range(replicates):
        chosen = [names[i] for i in rng.integers(0, len(names), scopes)]
        first, second = drawn(pool, chosen, rng, "rnd", 0.3), drawn(pool, chosen, rng, "rnd", 0.3)
        for mode, clusters in (("clustered", scope_of), ("plain", None)):
            baseline = RunArtifact(pytest_lens_version="0", created="", run=RunIdentity(), results=ListRows(first), summary={})
            [entry] = compare_with_baseline(
                second, RunIdentity(), baseline, INFO, weights, gates, seed=replicate, clusters=clusters
            ).adapters
            test = entry.regression
            assert test is not None and test.delta.low is not None and test.delta.high is not None
            found[f"A/A false regression ({mode})"].append(entry.status == "regression")
            found[f"A/A either direction ({mode})"].append(entry.status != "no significant change")
            found[f"A/A delta CI covers 0 ({mode})"].append(test.delta.low <= 0 <= test.delta.high)
        changed = drawn(pool, chosen, rng, "top", 0.5)
        clean = drawn(pool, chosen, rng, "top", 0.0)
        baseline = RunArtifact(pytest_lens_version="0", created="", run=RunIdentity(), results=ListRows(clean), summary={})
        [entry] = compare_with_baseline(changed, RunIdentity(), baseline, INFO, weights, gates, seed=replicate, clusters=scope_of).adapters
        assert entry.regression is not None and entry.regression.delta.low is not None and entry.regression.delta.high is not None
        found["top dropped on half: delta CI covers the truth"].append(
            entry.regression.delta.low <= truth_drop <= entry.regression.delta.high
        )
        estimate = adapter_statistics(clean, weights, gates, seed=replicate, clusters=scope_of).composite
        found["clean headline CI covers the truth"].append(estimate.low <= truth_clean <= estimate.high)  # type: ignore[operator]
    return found


MODES = {"clustered": scope_of, "plain": None, "two-stage": scope_then_question}


def holm_from_pool(
    pool: dict,  # type: ignore[type-arg]
    weights: dict[str, float],
    gates: list,  # type: ignore[type-arg]
    scopes: int,
    replicates: int,
    seed: int,
    modes: list[str],
) -> dict[str, list[bool]]:
    """Holm's family rate in each ``--lens-bootstrap`` mode: three identical adapters' table of pairs (two-sided)."""
    rng = np.random.default_rng(seed)
    names = sorted(pool)
    found: dict[str, list[bool]] = defaultdict(list)
    for replicate in range(replicates):
        chosen = [names[i] for i in rng.integers(0, len(names), scopes)]
        runs = [[r.model_copy(update={"adapter": label}) for r in drawn(pool, chosen, rng, "rnd", 0.3)] for label in "abc"]
        results = [r for run in runs for r in run]
        for mode in modes:
            pairs = analyze_run(results, weights, gates, seed=replicate, clusters=MODES[mode]).pairs
            found[f"3 identical adapters, Holm: any pair ({mode})"].append(any(p.composite.p_adjusted < 0.05 for p in pairs))
    return found


def widths(path: Path) -> None:
    artifact = load_run(path)
    score, weights, gates = recorded_headline(artifact.run)
    results = [r for r in artifact.results if r.suite == LENS and r.measured and r.control is None]
    plain = analyze_run(results, weights, gates, score=score)
    clustered = analyze_run(results, weights, gates, score=score, clusters=scope_of)
    scopes = len({r.scope_id for r in results})
    for key, found in plain.adapters.items():
        cells = []
        for analysis in (plain, clustered):
            e = analysis.adapters[key].composite
            known = e.low is not None and e.high is not None
            cells.append(f"[{e.low:.3f}, {e.high:.3f}] {e.high - e.low:.3f}" if known else "-")  # type: ignore[operator]
        print(f"{path.name:<28} {key:<14} {scopes:>6} {found.composite.n:>5} {found.composite.value:>6.3f}  " + "  ".join(cells))


def table(title: str, rows: dict[int, dict[str, list[bool]]]) -> None:
    print(title)
    for measure in next(iter(rows.values())):
        cells = "  ".join(wilson(sum(rows[g][measure]), len(rows[g][measure])) for g in rows)
        print(f"  {measure:<48} {cells}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="*", default=[])
    parser.add_argument("--pool", type=Path, default=None)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--pool-replicates", type=int, default=600)
    parser.add_argument("--scopes", default=",".join(map(str, SCOPES)))
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--holm-replicates", type=int, default=200, help="pool: replicates of the three-adapter table")
    parser.add_argument("--holm-modes", default=",".join(MODES), help="pool: --lens-bootstrap modes of the three-adapter table")
    args = parser.parse_args()
    scopes = [int(g) for g in args.scopes.split(",")]
    if args.runs:
        print(f"{'run':<28} {'adapter':<14} {'scopes':>6} {'n':>5} {'score':>6}  {'plain 95% CI, width':<22}  clustered 95% CI, width")
        for path in args.runs:
            widths(path)
        print()
    header = "  ".join(f"{f'{g} scopes':<26}" for g in scopes)
    if not args.skip_synthetic:
        rows = {g: synthetic(g, args.replicates, seed=g) for g in scopes}
        table(f"synthetic scopes of 24 questions, intra-scope correlation 0.26 (alpha 0.05; 95% intervals)\n  {'':<48} {header}", rows)
    if args.pool is not None:
        pool, weights, gates = load_pool(args.pool)
        rows = {g: from_pool(pool, weights, gates, g, args.pool_replicates, seed=100 + g) for g in scopes}
        if args.holm_replicates:
            for g in scopes:
                rows[g].update(holm_from_pool(pool, weights, gates, g, args.holm_replicates, 200 + g, args.holm_modes.split(",")))
        table(f"drawn from {len(pool)} generated scopes of real BM25 scores ({args.pool.name}; alpha 0.05)\n  {'':<48} {header}", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
