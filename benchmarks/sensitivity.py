"""What a LENS run can and cannot see: sensitivity tables and the controls' scores, on real and generated data.

For each dataset (the real LENS scope 01 from ``../shared`` and the six bundled scopes) it runs
``pytest -m lens`` with the offline agent, exactly as a user would:

1. ``--lens-adapter=bm25 --lens-adapter=sqlite-hybrid --lens-controls``: both adapters, the
   ``null`` and ``random`` controls and every mutant of each, and prints the sensitivity table
   (per mutant: headline delta with its CI, one-sided paired p, detected or not) on the run's
   headline (the retrieval score: no judge), then the same table on the paper's composite
   (tier-1 only), recomputed from the same questions;
2. ``--lens-adapter=embedding`` beside them (no mutants of its own);

then prints the retrieval score and the composite (with CIs) and the metric means of null,
random, bm25, embedding and sqlite-hybrid, and one-sided paired tests of every adapter against
the random memory on both scores (per dataset and on both together). Embeddings come from the shared embedding cache, so a rerun is much
faster.

    python benchmarks/sensitivity.py                       # scope 01 (if ../shared has it) and the bundled scopes
    python benchmarks/sensitivity.py --dataset PATH        # another dataset instead
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_lens.analysis.format import METRIC_LABELS, format_delta, format_estimate, format_p, format_table
from pytest_lens.analysis.run import analyze_run, clusters_for, pair_results, paired_tests
from pytest_lens.analysis.sensitivity import sensitivity
from pytest_lens.records.results import QuestionResult, RunArtifact
from pytest_lens.reports.render import sensitivity_lines
from pytest_lens.runs.storage import load_run
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
from pytest_lens.scoring.headline import retrieval_headline
from shared_data import SHARED

SCOPE_01 = SHARED / "datasets" / "lens" / "scope_01_with_distractors.json"
MEASURED = ["bm25", "sqlite-hybrid"]
ORDER = ["null", "random", "bm25", "embedding", "sqlite-hybrid"]


def run(args: list[str], workdir: Path, name: str) -> RunArtifact:
    """One ``pytest -m lens`` run in ``workdir``; its artifact."""
    artifact = workdir / f"{name}.json"
    cmd = [sys.executable, "-m", "pytest", "-m", "lens", "-q", "-p", "no:cacheprovider", *args, f"--lens-json={artifact}"]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or not artifact.exists():
        raise SystemExit(f"run {name} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    print(f"  ({name}: {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return load_run(artifact)  # the run document and its rows file


def measure(label: str, datasets: list[str], workdir: Path) -> list[QuestionResult]:
    """Run the controls and the embedding adapter on ``datasets``; print the sensitivity tables; the results."""
    data = [f"--lens-dataset={Path(d).resolve()}" for d in datasets]
    controlled = run([*(f"--lens-adapter={a}" for a in MEASURED), "--lens-controls", *data], workdir, f"{label}-controls")
    plain = run(["--lens-adapter=embedding", *data], workdir, f"{label}-embedding")
    n = sum(1 for r in controlled.results if r.adapter == "bm25")
    print(f"\n== {label}: {n} questions, offline agent, budget 16k ==")
    if controlled.sensitivity is not None:
        print("\n".join(sensitivity_lines(controlled.sensitivity)))
    # The same controls judged by the paper's composite (tier-1 only without a judge): what it can and cannot see.
    lens = [r for r in controlled.results if r.control is None]
    clusters = clusters_for(lens)  # the run's own units (--lens-bootstrap=auto), as the run's table has them
    composite = sensitivity(controlled.results, DEFAULT_WEIGHTS, DEFAULT_GATES, metric="composite (tier-1 only)", clusters=clusters)
    if composite is not None:
        print("\n".join(sensitivity_lines(composite)))
    return [r for r in [*controlled.results, *plain.results] if r.control is None or r.control.kind != "mutant"]


def means(label: str, results: list[QuestionResult]) -> None:
    """Headline and composite with CIs and metric means per adapter, then each adapter against the random memory."""
    # Compared like any adapter here: the controls' marks would keep them out of the statistics' pairs.
    kept = [r.model_copy(update={"control": None}) for r in results if r.adapter in ORDER and r.skipped is None]
    headline = retrieval_headline()
    clusters = clusters_for(kept)  # the run's own units: scopes with 5 or more of them
    scored = analyze_run(kept, headline.weights, headline.gates, seed=42, score=headline.name, clusters=clusters)
    paper = analyze_run(kept, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=42, clusters=clusters)
    adapters = [a for a in ORDER if a in scored.adapters]
    print(f"\n{label}: {headline.description}")
    rows = [
        [adapter, str(found.n), format_estimate(found), format_estimate(paper.adapters[adapter].composite)]
        for adapter in adapters
        if (found := scored.adapters[adapter].composite)
    ]
    headers = ["adapter", "n", "retrieval score [95% CI]", "composite (tier-1 only) [95% CI]"]
    print("\n".join(format_table(headers, rows, [False, True, True, True])))
    present = sorted(
        {m for a in adapters for m in scored.adapters[a].metrics},
        key=lambda m: (list(METRIC_LABELS).index(m) if m in METRIC_LABELS else 99, m),
    )
    metric_rows = [
        [METRIC_LABELS.get(m, m), *(f"{mean.value:.3f}" if (mean := scored.adapters[a].metrics.get(m)) else "-" for a in adapters)]
        for m in present
    ]
    print("\n".join(format_table(["metric mean", *adapters], metric_rows, [False, *([True] * len(adapters))])))
    groups = {a: [r for r in kept if r.adapter == a] for a in ORDER}
    tests = []
    for adapter in ORDER[2:]:
        pairs = pair_results(groups["random"], groups[adapter])
        if not pairs:
            continue
        for name, weights, gates in (("retrieval score", headline.weights, headline.gates), ("composite", DEFAULT_WEIGHTS, DEFAULT_GATES)):
            test, _ = paired_tests(pairs, weights, gates, alternative="greater", seed=42, clusters=clusters)
            tests.append(
                [
                    f"random vs {adapter}",
                    name,
                    str(test.n_pairs),
                    f"{test.first:.3f}",
                    f"{test.second:.3f}",
                    format_delta(test.delta),
                    format_p(test.p_value),
                    f"{test.n_up}\u25b2 {test.n_down}\u25bc",
                    f"{test.first / test.second:.2f}" if test.second > 0 else "-",
                ]
            )
    headers = ["pair (one-sided: adapter above random)", "score", "n", "random", "adapter", "delta [CI]", "p", "changed", "random/adapter"]
    print("\n".join(format_table(headers, tests, [False, False, True, True, True, True, True, True, True])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--dataset", action="append", default=[], help="dataset file or directory instead of scope 01 and the bundled scopes"
    )
    args = parser.parse_args()
    if args.dataset:
        plans = [("dataset", args.dataset)]
    else:
        from pytest_lens.datasets.bundled import bundled_dataset_paths

        plans = [("bundled scopes", [str(p) for p in bundled_dataset_paths()])]
        if SCOPE_01.exists():
            plans.insert(0, ("scope 01", [str(SCOPE_01)]))
        else:
            print(f"(scope 01 not found at {SCOPE_01}: bundled scopes only)", file=sys.stderr)
    everything: list[QuestionResult] = []
    with tempfile.TemporaryDirectory() as scratch:
        for label, datasets in plans:
            results = measure(label, datasets, Path(scratch))
            means(label, results)
            everything.extend(results)
    if len(plans) > 1:
        means(" + ".join(label for label, _ in plans), everything)


if __name__ == "__main__":
    main()
