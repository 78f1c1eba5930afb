"""How long the LENS generator takes, from the default 120-episode scope to 100,000-episode streams.

For each size: planning and rendering (``generate_scope(verify=False)``), the guarantee
checks the generator runs before handing data out, serialising to JSON, and the total
(what ``lens generate --scale N`` costs). Small sizes are repeated and the median is
shown; the machine's load makes single timings noisy.

    python benchmarks/generate.py                          # 120, 1,000, 10,000, 100,000 episodes
    python benchmarks/generate.py --sizes 1000 100000 --repeat 3 --domain clinical_trial
"""

from __future__ import annotations

import argparse
import statistics
import time

from pytest_lens.generator import DOMAINS, generate_scope, scaled_sizes
from pytest_lens.generator.guarantees import guarantee_problems

LIMIT_100K = 60.0


def measure(domain: str, seed: int, episodes: int) -> dict[str, float]:
    signal, distractors = scaled_sizes(episodes)
    started = time.perf_counter()
    scope = generate_scope(domain, seed, signal=signal, distractors=distractors, verify=False)
    generated = time.perf_counter()
    problems = guarantee_problems(scope.dataset, {ref: label.kind == "signal" for ref, label in scope.labels.items()})
    verified = time.perf_counter()
    text = scope.to_json()
    serialised = time.perf_counter()
    if problems:
        raise SystemExit(f"{domain} seed {seed} at {episodes} episodes breaks its guarantees: {problems[:3]}")
    return {
        "generate": generated - started,
        "verify": verified - generated,
        "json": serialised - verified,
        "total": serialised - started,
        "mb": len(text.encode("utf-8")) / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[120, 1_000, 10_000, 100_000], help="episodes per stream")
    parser.add_argument("--domain", choices=sorted(DOMAINS), default="cascading_failure")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs per size up to 10,000 episodes (larger sizes run once)")
    args = parser.parse_args()

    header = (
        f"{'episodes':>9} {'signal':>7} {'distract.':>9} {'runs':>4} {'generate s':>10} {'verify s':>9} "
        f"{'json s':>7} {'total s':>8} {'MB':>7} {'episodes/s':>11}"
    )
    print(f"lens generate benchmark: domain {args.domain}, seed {args.seed}, medians")
    print(header)
    print("-" * len(header))
    totals: dict[int, float] = {}
    for episodes in args.sizes:
        signal, distractors = scaled_sizes(episodes)
        runs = args.repeat if episodes <= 10_000 else 1
        samples = [measure(args.domain, args.seed, episodes) for _ in range(runs)]
        median = {key: statistics.median(sample[key] for sample in samples) for key in samples[0]}
        totals[episodes] = median["total"]
        print(
            f"{episodes:>9,} {signal:>7,} {distractors:>9,} {runs:>4} {median['generate']:>10.2f} {median['verify']:>9.2f} "
            f"{median['json']:>7.2f} {median['total']:>8.2f} {median['mb']:>7.1f} {episodes / median['total']:>11,.0f}"
        )
    if 100_000 in totals:
        verdict = "under" if totals[100_000] < LIMIT_100K else "OVER"
        print(f"\n100,000 episodes: {totals[100_000]:.1f} s including the guarantee checks ({verdict} the {LIMIT_100K:.0f} s target)")


if __name__ == "__main__":
    main()
