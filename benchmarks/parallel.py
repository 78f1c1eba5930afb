"""Wall time of a LENS run with pytest-xdist: ``-n 0`` against ``-n 2`` and ``-n 4``.

Runs ``pytest -m lens --lens-adapter=A -n N`` on the bundled datasets (or ``--dataset``)
in an empty directory, in fresh processes, ``--repeat`` times, and prints the median wall
time per setting and the speedup over ``-n 0``. Adapters that use embeddings are measured
with a warm embedding cache by default (``--cache cold`` gives every run an empty one).

Only pytest-lens and pytest-xdist are loaded (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``): other
installed plugins cost start-up time in every worker that has nothing to do with pytest-lens
(hypothesis's plugin alone imports hypothesis at the end of each session, about 0.6 s here).
``--all-plugins`` measures with whatever is installed.

    python benchmarks/parallel.py                       # bm25 and sqlite-hybrid, -n 0/2/4
    python benchmarks/parallel.py --adapter bm25 --workers 0 2 --repeat 5
    python benchmarks/parallel.py --adapter bm25 --llm-latency-ms 200   # LLM agent, local endpoint with latency

With ``--llm-latency-ms`` the questions are answered by the LLM agent through the local
OpenAI-compatible test server (scripted policy, request cache off), which adds that latency to
every request: the shape of a real run against a remote model, where questions wait on I/O.
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
    from pytest_lens.contract.registry import registered_adapters

    return set(registered_adapters())


def run_once(adapter: str, workers: int, datasets: list[str], cache_dir: Path, all_plugins: bool, llm_url: str | None = None) -> float:
    """Seconds for one complete ``pytest -m lens`` run in a fresh process."""
    cmd = [sys.executable, "-m", "pytest", "-m", "lens", "-q", "-p", "no:cacheprovider", f"--lens-adapter={adapter}", "-n", str(workers)]
    cmd += [f"--lens-dataset={d}" for d in datasets]
    if llm_url is not None:
        cmd += ["--lens-agent=llm", "--lens-agent-model=scripted", f"--lens-llm-base-url={llm_url}", "--lens-llm-cache-mode=off"]
    env = {**os.environ, "LENS_CACHE_DIR": str(cache_dir)}
    if not all_plugins:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        cmd += ["-p", "pytest_lens.plugin", "-p", "xdist.plugin"]
    with tempfile.TemporaryDirectory() as workdir:
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
    parser.add_argument("--all-plugins", action="store_true", help="load every installed pytest plugin, not just pytest-lens and xdist")
    parser.add_argument("--llm-latency-ms", type=float, default=None, help="answer with the LLM agent against the local test server")
    args = parser.parse_args()
    if args.llm_latency_ms is None:
        measure(args, None)
        return
    from lens_fixtures.openai_server import OpenAITestServer

    with OpenAITestServer(latency_s=args.llm_latency_ms / 1000) as server:
        measure(args, server.base_url)


def measure(args: argparse.Namespace, llm_url: str | None) -> None:
    """Print one row per (adapter, worker count)."""
    adapters = args.adapter or [a for a in ("bm25", "sqlite-hybrid") if a in registered()]
    plugins = "all installed" if args.all_plugins else "pytest-lens and xdist only"
    agent = "offline" if llm_url is None else f"llm via local test server, +{args.llm_latency_ms:g} ms per request"
    print(f"cpus: {os.cpu_count()}  repeats: {args.repeat}  cache: {args.cache}  plugins: {plugins}  agent: {agent}")
    print(f"{'adapter':<16} {'-n':>3} {'median s':>9} {'min s':>7} {'speedup':>8}")
    with tempfile.TemporaryDirectory() as shared_cache:
        for adapter in adapters:
            if args.cache == "warm":
                run_once(adapter, 0, args.dataset, Path(shared_cache), args.all_plugins, llm_url)  # fill the embedding cache once
            baseline = None
            for workers in args.workers:
                times = []
                for _ in range(args.repeat):
                    with tempfile.TemporaryDirectory(prefix="lens-cold-") as cold_cache:
                        cache = Path(shared_cache if args.cache == "warm" else cold_cache)
                        times.append(run_once(adapter, workers, args.dataset, cache, args.all_plugins, llm_url))
                median = statistics.median(times)
                baseline = baseline or median
                print(f"{adapter:<16} {workers:>3} {median:>9.2f} {min(times):>7.2f} {baseline / median:>7.2f}x", flush=True)


if __name__ == "__main__":
    main()
