"""What a LENS run can and cannot see: sensitivity tables and the controls' scores, on real and generated data.

For each dataset (the real LENS scope 01 from ``../shared`` and the six bundled scopes) it runs
``pytest -m lens`` with the offline agent, exactly as a user would:

1. ``--lens-adapter=bm25 --lens-adapter=sqlite-hybrid --lens-controls``: both adapters, the
   ``null`` and ``random`` controls and every mutant of each, and prints the sensitivity table
   (per mutant: headline delta with its CI, one-sided paired p, detected or not);
2. ``--lens-adapter=embedding`` beside them (no mutants of its own);

then prints the headline and metric means of null, random, bm25, embedding and sqlite-hybrid,
and one-sided paired tests of every adapter against the random memory (per dataset and on
both together). Embeddings come from the shared embedding cache, so a rerun is much faster.

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

from pytest_lens.analysis.render import format_estimate, format_p, sensitivity_lines
from pytest_lens.analysis.run import analyze_run, pair_results, paired_tests
from pytest_lens.report import METRIC_LABELS, format_table
from pytest_lens.results import QuestionResult, RunArtifact
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS
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
    return RunArtifact.model_validate_json(artifact.read_text())


def measure(label: str, datasets: list[str], workdir: Path) -> list[QuestionResult]:
    """Run the controls and the embedding adapter on ``datasets``; print the sensitivity table; the results."""
    data = [f"--lens-dataset={Path(d).resolve()}" for d in datasets]
    controlled = run([*(f"--lens-adapter={a}" for a in MEASURED), "--lens-controls", *data], workdir, f"{label}-controls")
    plain = run(["--lens-adapter=embedding", *data], workdir, f"{label}-embedding")
    n = sum(1 for r in controlled.results if r.adapter == "bm25")
    print(f"\n== {label}: {n} questions, offline agent, budget 16k ==")
    if controlled.sensitivity is not None:
        print("\n".join(sensitivity_lines(controlled.sensitivity)))
    return [r for r in controlled.results + plain.results if r.control is None or r.control.kind != "mutant"]


def means(label: str, results: list[QuestionResult]) -> None:
    """Headline with CI and metric means per adapter, then each adapter against the random memory."""
    # Compared like any adapter here: the controls' marks would keep them out of the statistics' pairs.
    kept = [r.model_copy(update={"control": None}) for r in results if r.adapter in ORDER and r.skipped is None]
    stats = analyze_run(kept, DEFAULT_WEIGHTS, DEFAULT_GATES, seed=42)
    present = sorted(
        {m for s in stats.adapters.values() for m in s.metrics},
        key=lambda m: (list(METRIC_LABELS).index(m) if m in METRIC_LABELS else 99, m),
    )
    rows = []
    for adapter in ORDER:
        found = stats.adapters.get(adapter)
        if found is None:
            continue
        rows.append(
            [
                adapter,
                str(found.composite.n),
                format_estimate(found.composite),
                *(f"{found.metrics[m].value:.3f}" if m in found.metrics else "-" for m in present),
            ]
        )
    print(f"\n{label}: headline (composite) and metric means")
    print(
        "\n".join(
            format_table(
                ["adapter", "n", "composite [95% CI]", *(METRIC_LABELS.get(m, m) for m in present)],
                rows,
                [False, True, True, *([True] * len(present))],
            )
        )
    )
    groups = {a: [r for r in kept if r.adapter == a] for a in ORDER}
    tests = []
    for adapter in ORDER[2:]:
        pairs = pair_results(groups["random"], groups[adapter])
        if pairs:
            test, _ = paired_tests(pairs, DEFAULT_WEIGHTS, DEFAULT_GATES, alternative="greater", seed=42)
            tests.append(
                [
                    f"random vs {adapter}",
                    str(test.n_pairs),
                    f"{test.first:.3f}",
                    f"{test.second:.3f}",
                    f"{test.delta.value:+.3f}",
                    format_p(test.p_value),
                    f"{test.first / test.second:.2f}" if test.second else "-",
                ]
            )
    print(
        "\n".join(
            format_table(
                ["pair (one-sided: adapter above random)", "n", "random", "adapter", "delta", "p", "random/adapter"],
                tests,
                [False, True, True, True, True, True, True],
            )
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--dataset", action="append", default=[], help="dataset file or directory instead of scope 01 and the bundled scopes"
    )
    args = parser.parse_args()
    if args.dataset:
        plans = [("dataset", args.dataset)]
    else:
        from lens_fixtures.datasets import bundled_dataset_paths

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
