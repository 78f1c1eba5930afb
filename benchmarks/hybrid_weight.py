"""How sqlite-hybrid's BM25 weight was chosen, without looking at a question a run reports on.

sqlite-hybrid fuses its two legs by score: each leg's scores over every stored episode are z-scored and
summed with weights ``w`` (BM25) and ``1 - w`` (the episode's best chunk's cosine similarity), each leg also
weighted by its confidence for the query (``leg_confidence``: 1 + the gap between its two best z-scores) or not.
``w`` and the form are chosen here on tuning data only: the generator's six domains at seeds 7, 11 and 13 (432
questions; the bundled scopes a run reports on are seed 1; seed 7 also chose the chunk sizes). Never a real LENS
scope, never LoCoMo.

For each configuration of the grid a fresh adapter takes every tuning scope in stream order and each question's
prompt is searched as the offline agent's first search (``benchmarks/first_search.py``). The objective is the run's
headline, the retrieval score (0.5 x nDCG@10 + 0.5 x MRR), averaged over the questions. Configurations within 0.005
of the best tie, and the one whose ``w`` is nearest 0.5 (equal weights, the fewest assumptions) wins, the better
objective among those. The grid's ``rrf`` row is the fusion the adapter had before (reciprocal rank, k=60), and
``bm25`` is its keyword leg alone, for reference.

    python benchmarks/hybrid_weight.py            # the grid and the choice (all three seeds)
    python benchmarks/hybrid_weight.py --quick    # seed 7 only, three weights (a smoke run)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from first_search import MEASURES, first_searches, generated_scopes, means
from lens_fixtures.adapters.bm25 import BM25Adapter
from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter
from pytest_lens.analysis.format import format_table

TUNING_SEEDS = (7, 11, 13)
GRID = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
TIE = 0.005


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="seed 7 and three weights only")
    args = parser.parse_args()
    seeds, grid = (TUNING_SEEDS[:1], (0.4, 0.5, 0.6)) if args.quick else (TUNING_SEEDS, GRID)
    with tempfile.TemporaryDirectory() as scratch:
        scopes = [scope for seed in seeds for scope in generated_scopes(seed, Path(scratch))]
        configurations: dict[str, Any] = {"bm25": BM25Adapter, "rrf": lambda: SQLiteHybridAdapter(fusion="rrf")}
        for sure in (False, True):
            form = "z x confidence" if sure else "z"
            configurations |= {
                f"{form} w={w:g}": (lambda w=w, sure=sure: SQLiteHybridAdapter(bm25_weight=w, leg_confidence=sure)) for w in grid
            }
        found = {name: means(first_searches(make, scopes, progress=False))["all"] for name, make in configurations.items()}
    questions = int(found["bm25"]["n"])
    rows = [[name, *(f"{values[m]:.4f}" for m in MEASURES)] for name, values in found.items()]
    print(f"sqlite-hybrid fusion: first search of {questions} questions on generated scopes (seeds {', '.join(map(str, seeds))})")
    print("\n".join(format_table(["fusion", *MEASURES], rows, [False, *([True] * len(MEASURES))])))
    objective = {name: values["retrieval"] for name, values in found.items() if " w=" in name}
    best = max(objective.values())
    tied = [name for name, value in objective.items() if value >= best - TIE]
    choice = min(tied, key=lambda name: (abs(float(name.rsplit("=", 1)[1]) - 0.5), -objective[name]))
    print(f"best retrieval score {best:.4f}; within {TIE}: {', '.join(tied)}; chosen (w nearest 0.5, then the better): {choice}")


if __name__ == "__main__":
    main()
