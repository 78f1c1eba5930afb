"""Wall time of a LENS run with pytest-xdist: ``-n 0`` against ``-n 2`` and ``-n 4``.

Runs ``pytest -m lens --lens-adapter=A -n N`` on the bundled datasets (or ``--dataset``)
in an empty directory, in fresh processes, ``--repeat`` times, and prints the median wall
time per setting and the speedup over ``-n 0``. Adapters that use embeddings are measured
with a warm embedding cache by default (``--cache cold`` gives every run an empty one).

    python benchmarks/parallel.py                       # bm25 and sqlite-hybrid, -n 0/2/4
    python benchmarks/parallel.py --adapter bm25 --workers 0 2 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def registered() -> set[str]:
    from pytest_lens.registry import registered_adapters

    return set(registered_adapters())


def run_once(adapter: str, workers: int, datasets: list[str], cache_dir: Path) -> float:
    with tempfile.TemporaryDirectory() as workdir:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "lens",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--lens-adapter={adapter}",
            "-n",
            str(workers),
        ]
        cmd += [f"--lens-dataset={d}" for d in datasets]
        env = {**os.environ, "LENS_CACHE_DIR": str(cache_dir)}
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):  # 1: a gated adapter is still a complete run
        raise SystemExit(f"pytest failed ({proc.returncode}) for {adapter} -n {workers}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", action="append", help="adapter(s) to time (default: bm25 and sqlite-hybrid when installed)")
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2, 4])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dataset", action="append", default=[], help="dataset path(s) (default: the bundled datasets)")
    parser.add_argument("--cache", choices=("warm", "cold"), default="warm", help="embedding cache state for each timed run")
    args = parser.parse_args()

    adapters = args.adapter or [a for a in ("bm25", "sqlite-hybrid") if a in registered()]
    print(f"cpus: {os.cpu_count()}  repeats: {args.repeat}  cache: {args.cache}")
    print(f"{'adapter':<16} {'-n':>3} {'median s':>9} {'min s':>7} {'speedup':>8}")
    with tempfile.TemporaryDirectory() as shared_cache:
        for adapter in adapters:
            if args.cache == "warm":
                run_once(adapter, 0, args.dataset, Path(shared_cache))  # fill the embedding cache once
            baseline = None
            for workers in args.workers:
                times = []
                for _ in range(args.repeat):
                    cache = Path(shared_cache) if args.cache == "warm" else Path(tempfile.mkdtemp(prefix="lens-cold-"))
                    times.append(run_once(adapter, workers, args.dataset, cache))
                median = statistics.median(times)
                baseline = baseline or median
                print(f"{adapter:<16} {workers:>3} {median:>9.2f} {min(times):>7.2f} {baseline / median:>7.2f}x", flush=True)


if __name__ == "__main__":
    main()
