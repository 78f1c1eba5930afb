"""How hard a LENS dataset is for the reference adapters: composites, evidence coverage, longitudinal coverage.

Runs ``pytest -m lens`` with the offline agent in a scratch directory (bundled scopes by
default, ``--dataset`` for others, e.g. the real LENS scope) and prints one row per
adapter from the run artifact. A useful dataset separates the adapters (null is gated)
without being trivially easy (longitudinal evidence coverage well below 1.0).

    python benchmarks/lens_difficulty.py                                   # null, bm25 (+ embedding adapters if registered)
    python benchmarks/lens_difficulty.py --dataset ../shared/datasets/lens/scope_01_with_distractors.json
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_lens.records.rows import read_artifact_json

DEFAULT_ADAPTERS = ("null", "bm25", "embedding", "sqlite-hybrid")


def registered() -> set[str]:
    from pytest_lens.contract.registry import registered_adapters

    return set(registered_adapters())


def run(adapters: list[str], datasets: list[str], budget: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as workdir:
        artifact = Path(workdir) / "run.json"
        cmd = [sys.executable, "-m", "pytest", "-m", "lens", "-q", "-p", "no:cacheprovider", f"--lens-budget={budget}"]
        cmd += [f"--lens-adapter={a}" for a in adapters] + [f"--lens-dataset={Path(d).resolve()}" for d in datasets]
        cmd += [f"--lens-json={artifact}"]
        proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, check=False)
        if proc.returncode not in (0, 1) or not artifact.exists():  # 1: a gated adapter is still a complete run
            raise SystemExit(f"run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
        loaded: dict[str, Any] = read_artifact_json(artifact)
        return loaded


def mean_of(results: list[dict[str, Any]], metric: str, question_type: str | None = None) -> str:
    values = [r["metrics"][metric] for r in results if metric in r["metrics"] and question_type in (None, r["question_type"])]
    return f"{statistics.mean(values):.3f}" if values else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", action="append", help=f"adapter to run (default: those of {', '.join(DEFAULT_ADAPTERS)} registered)")
    parser.add_argument("--dataset", action="append", default=[], help="dataset file or directory (default: the bundled scopes)")
    parser.add_argument("--budget", default="16k")
    args = parser.parse_args()
    adapters = args.adapter or [name for name in DEFAULT_ADAPTERS if name in registered()]

    artifact = run(adapters, args.dataset, args.budget)
    scopes = sorted({r["scope_id"] for r in artifact["results"]})
    print(f"offline agent, budget {args.budget}, {len(scopes)} scope(s): {', '.join(scopes)}")
    header = (
        f"{'adapter':<14} {'n':>4} {'composite':>9} {'gate':<5} {'grounding':>9} {'ev.coverage':>11} "
        f"{'ev.cov long.':>12} {'fact_recall':>11} {'fact_rec long.':>14} {'fact_rec null':>13}"
    )
    print(header)
    print("-" * len(header))
    for adapter in adapters:
        results = [r for r in artifact["results"] if r["adapter"] == adapter]
        summary = artifact["summary"][adapter]
        print(
            f"{adapter:<14} {len(results):>4} {summary['composite']:>9.3f} {'FAIL' if summary['gated'] else 'pass':<5} "
            f"{mean_of(results, 'evidence_grounding'):>9} {mean_of(results, 'evidence_coverage'):>11} "
            f"{mean_of(results, 'evidence_coverage', 'longitudinal'):>12} {mean_of(results, 'fact_recall'):>11} "
            f"{mean_of(results, 'fact_recall', 'longitudinal'):>14} {mean_of(results, 'fact_recall', 'null_hypothesis'):>13}"
        )


if __name__ == "__main__":
    main()
