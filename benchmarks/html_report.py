"""What ``--lens-html`` costs: the same LENS run with and without the HTML report, paired.

Runs ``pytest -m lens --lens-adapter=A --lens-json=run.json`` on the bundled datasets (or ``--dataset``)
in an empty directory, in fresh processes, alternating without and with ``--lens-html``, ``--repeat``
pairs, and prints the median wall and CPU (user + system) time of each, the median per-pair differences and
their share of the run, the report's size and the generation time the summary line reports. On a shared,
busy machine the CPU times are the steadier measure: wall time there mostly measures the neighbours. Embedding adapters run with the
warm embedding cache a CI rerun has (``--cache cold`` gives every run an empty one).

    python benchmarks/html_report.py                           # sqlite-hybrid, 3 pairs
    python benchmarks/html_report.py --adapter bm25 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HTML_LINE = re.compile(r"html report: \S+ \(([\d.]+) MB, ([\d.]+) s\)")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(adapter: str, datasets: list[str], html: bool, cache_dir: Path | None) -> tuple[float, float, str]:
    """Wall seconds and CPU seconds (user + system) of one run in a fresh process, and its output."""
    with tempfile.TemporaryDirectory() as workdir:
        cmd = [sys.executable, "-m", "pytest", "-m", "lens", "-q", "-p", "no:cacheprovider", f"--lens-adapter={adapter}"]
        cmd.append("--lens-json=run.json")
        cmd += [f"--lens-dataset={d}" for d in datasets]
        if html:
            cmd.append("--lens-html=report.html")
        env = dict(os.environ)
        if cache_dir is not None:
            env["LENS_CACHE_DIR"] = str(cache_dir)
        started, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, check=False)
        elapsed, cpu = time.perf_counter() - started, _children_cpu() - cpu
        if done.returncode not in (0, 1):
            raise SystemExit(f"run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        return elapsed, cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", default="sqlite-hybrid")
    parser.add_argument("--dataset", action="append", default=[], help="dataset file or directory (default: the bundled ones)")
    parser.add_argument("--repeat", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--cache", choices=("warm", "cold"), default="warm")
    args = parser.parse_args()

    print(f"warming up ({args.adapter}) ...", file=sys.stderr)
    run_once(args.adapter, args.dataset, False, None)
    without, with_html, differences, generation, sizes = [], [], [], [], []
    cpu_without, cpu_with, cpu_differences = [], [], []
    for index in range(args.repeat):
        cache = Path(tempfile.mkdtemp(prefix="lens-cache-")) if args.cache == "cold" else None
        plain, plain_cpu, _ = run_once(args.adapter, args.dataset, False, cache)
        cache = Path(tempfile.mkdtemp(prefix="lens-cache-")) if args.cache == "cold" else None
        reported, reported_cpu, output = run_once(args.adapter, args.dataset, True, cache)
        found = _HTML_LINE.search(output)
        if found is None:
            raise SystemExit(f"no 'html report:' line in the output:\n{output[-2000:]}")
        sizes.append(float(found.group(1)))
        generation.append(float(found.group(2)))
        without.append(plain)
        with_html.append(reported)
        differences.append(reported - plain)
        cpu_without.append(plain_cpu)
        cpu_with.append(reported_cpu)
        cpu_differences.append(reported_cpu - plain_cpu)
        print(
            f"pair {index + 1}: without {plain:.1f} s ({plain_cpu:.1f} s CPU), with --lens-html {reported:.1f} s"
            f" ({reported_cpu:.1f} s CPU; report {found.group(2)} s)",
            file=sys.stderr,
        )

    base = statistics.median(without)
    difference, made = statistics.median(differences), statistics.median(generation)
    cpu_base, cpu_difference = statistics.median(cpu_without), statistics.median(cpu_differences)
    rows = [
        ("runs (pairs)", str(args.repeat)),
        ("without --lens-html, median", f"{base:.1f} s"),
        ("with --lens-html, median", f"{statistics.median(with_html):.1f} s"),
        ("difference, median of pairs", f"{difference:+.2f} s ({difference / base:+.1%} of the run)"),
        ("CPU (user + system) without, median", f"{cpu_base:.1f} s"),
        ("CPU with --lens-html, median", f"{statistics.median(cpu_with):.1f} s"),
        ("CPU difference, median of pairs", f"{cpu_difference:+.2f} s ({cpu_difference / cpu_base:+.1%} of the run's CPU)"),
        ("report generation (summary line), median", f"{made:.2f} s ({made / base:.1%} of the run)"),
        ("report size", f"{statistics.median(sizes):.1f} MB"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{args.adapter} on {', '.join(args.dataset) or 'the bundled datasets'} ({args.cache} embedding cache)")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


if __name__ == "__main__":
    main()
