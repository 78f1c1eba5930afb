"""How sqlite-hybrid's chunk defaults were chosen, without ever looking at a real LENS scope.

Tuning data (never the real LENS scopes, never the bundled scopes a run reports on):

- six scopes of pytest-lens's generator at seed 7 (one per domain; the bundled scopes are seed 1);
- LoCoMo (``../shared/datasets/locomo/locomo10.json``): its first four conversations (99 sessions of
  ~600 words, 757 questions whose evidence names the sessions that answer them; ``--locomo N``
  for more; four keep a grid affordable on a shared CPU).

For each ``(max_chunk_words, min_chunk_words)`` of the grid, a fresh ``SQLiteHybridAdapter`` (with the rank fusion,
``fusion="rrf"``, the sizes were chosen under; the score fusion's weight is ``hybrid_weight.py``'s) is fed
every scope in stream order; at each checkpoint every question of that checkpoint is searched
with its own prompt (``limit=10``, as the offline agent's first search) and the ranking is scored
against the question's required evidence available at the checkpoint with the same trec_eval
measures the LENS scores use (first-search nDCG@10, recall@10, MRR). The objective is the mean
nDCG@10 of the two sources (each source's mean over its questions, so LoCoMo's questions do not
drown the generated 144). The default is the best; configurations within 0.005 of it count as
ties and the one with the largest chunks (fewest vectors) wins. Its choice, 150/60 (objective
0.6187; 100/20 and 100/60 within 0.005), is ``SQLiteHybridAdapter``'s default.

    python benchmarks/chunk_defaults.py            # prints the grid and the choice
    python benchmarks/chunk_defaults.py --quick    # two configurations, generated scopes only (a smoke run)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from first_search import first_searches, generated_scopes, locomo_scopes, means
from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter
from pytest_lens.analysis.format import format_table
from pytest_lens.datasets.loader import LoadedScope

TUNING_SEED = 7
GRID: list[tuple[int, int]] = [(100, 20), (100, 60), (150, 60), (200, 60), (300, 60)]
METRICS = ("ndcg@10", "recall@10", "mrr")
TIE = 0.005


def score(scopes: Sequence[LoadedScope], max_words: int, min_words: int) -> dict[str, float]:
    """Mean first-search metrics of every question with available evidence, for one chunk configuration.

    The fusion is the one the chunks were chosen under (reciprocal rank, k=60).
    """
    searched = first_searches(lambda: SQLiteHybridAdapter(max_chunk_words=max_words, min_chunk_words=min_words, fusion="rrf"), scopes)
    found = means(searched)["all"]
    return {name: found[name] for name in METRICS} | {"questions": found["n"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two configurations on the generated scopes only")
    parser.add_argument("--locomo", type=int, default=4, metavar="N", help="LoCoMo conversations to use (default 4 of 10)")
    args = parser.parse_args()
    grid = GRID[1:3] if args.quick else GRID
    with tempfile.TemporaryDirectory() as scratch:
        sources = {"generated (seed 7)": generated_scopes(TUNING_SEED, Path(scratch))}
        if not args.quick:
            sources["LoCoMo"] = locomo_scopes(slice(0, args.locomo))
        rows, objective, questions = [], {}, {}
        for max_words, min_words in grid:
            started = time.perf_counter()
            found = {name: score(scopes, max_words, min_words) for name, scopes in sources.items()}
            questions = {name: int(f["questions"]) for name, f in found.items()}
            objective[(max_words, min_words)] = sum(f["ndcg@10"] for f in found.values()) / len(found)
            cells = [f"{f[m]:.3f}" for f in found.values() for m in METRICS]
            rows.append(
                [f"{max_words}/{min_words}", *cells, f"{objective[(max_words, min_words)]:.4f}", f"{time.perf_counter() - started:.0f}"]
            )
            print(f"  {max_words}/{min_words} done", file=sys.stderr)
    headers = [
        "max/min words",
        *(f"{source[:9]} {m}" for source in sources for m in METRICS),
        "objective",
        "s",
    ]
    counts = ", ".join(f"{name}: {n} questions" for name, n in questions.items())
    print(f"sqlite-hybrid chunk grid: first search (the question, limit 10), mean over questions ({counts})")
    print("\n".join(format_table(headers, rows, [False, *([True] * (len(headers) - 1))])))
    best = max(objective.values())
    tied = [config for config, value in objective.items() if value >= best - TIE]
    choice = max(tied, key=lambda config: config)
    ties = ", ".join(f"{a}/{b}" for a, b in tied)
    print(f"best objective {best:.4f}; within {TIE}: {ties}; chosen (largest chunks): {choice[0]}/{choice[1]}")


if __name__ == "__main__":
    main()
