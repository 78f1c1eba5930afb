"""How sqlite-hybrid's chunk defaults were chosen, without ever looking at a real LENS scope.

Tuning data (never the real LENS scopes, never the bundled scopes a run reports on):

- six scopes of pytest-lens's generator at seed 7 (one per domain; the bundled scopes are seed 1);
- LoCoMo (``../shared/datasets/locomo/locomo10.json``): its first four conversations (99 sessions of
  ~600 words, 757 questions whose evidence names the sessions that answer them; ``--locomo N``
  for more; four keep a grid affordable on a shared CPU).

For each ``(max_chunk_words, min_chunk_words)`` of the grid, a fresh ``SQLiteHybridAdapter`` is fed
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

from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter
from pytest_lens.analysis.format import format_table
from pytest_lens.datasets.loader import LoadedScope, load_datasets
from pytest_lens.scoring.retrieval import RetrievalEvidence, retrieval_metrics
from shared_data import SHARED

LOCOMO = SHARED / "datasets" / "locomo" / "locomo10.json"
TUNING_SEED = 7
GRID: list[tuple[int, int]] = [(100, 20), (100, 60), (150, 60), (200, 60), (300, 60)]
METRICS = ("first_search_ndcg@10", "first_search_recall@10", "first_search_mrr")
TIE = 0.005


def generated_scopes(workdir: Path) -> list[LoadedScope]:
    """The generator's six domains at :data:`TUNING_SEED`, written by ``lens generate``."""
    from pytest_lens.cli.main import main as lens

    out = workdir / "generated"
    if lens(["generate", "--domain", "all", "--seed", str(TUNING_SEED), "--out", f"{out}/"]) != 0:
        raise SystemExit("lens generate failed")
    return [scope for dataset in load_datasets([out]) for scope in dataset.scopes]


def locomo_scopes(conversations: int) -> list[LoadedScope]:
    """LoCoMo's first ``conversations`` conversations (sessions as episodes)."""
    return [scope for dataset in load_datasets([Path(f"locomo:{LOCOMO}")]) for scope in dataset.scopes][:conversations]


def score(scopes: Sequence[LoadedScope], max_words: int, min_words: int) -> dict[str, float]:
    """Mean first-search metrics of every question with available evidence, for one chunk configuration."""
    totals: dict[str, float] = dict.fromkeys(METRICS, 0.0)
    count = 0
    adapter = SQLiteHybridAdapter(max_chunk_words=max_words, min_chunk_words=min_words)
    try:
        for scope in scopes:
            adapter.reset(scope.scope_id)
            ingested = 0
            for checkpoint in scope.checkpoints:
                for episode in scope.stream[ingested:checkpoint]:
                    adapter.ingest(episode.episode_id, scope.scope_id, episode.iso_timestamp, episode.text, {})
                ingested = checkpoint
                adapter.prepare(scope.scope_id, checkpoint)
                available = scope.available_refs(checkpoint)
                for question in scope.questions:
                    required = [ref for ref in question.ground_truth.required_evidence_refs if ref in available]
                    if question.checkpoint_after != checkpoint or not required:
                        continue
                    ranked = [hit.ref_id for hit in adapter.search(question.prompt, None, 10)]
                    found = retrieval_metrics(
                        RetrievalEvidence(searches=[ranked], required=required, stored=available, cited=[], grounded=[])
                    )
                    for name in METRICS:
                        totals[name] += found[name]
                    count += 1
    finally:
        adapter.close()
    return {name: value / count for name, value in totals.items()} | {"questions": float(count)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two configurations on the generated scopes only")
    parser.add_argument("--locomo", type=int, default=4, metavar="N", help="LoCoMo conversations to use (default 4 of 10)")
    args = parser.parse_args()
    grid = GRID[1:3] if args.quick else GRID
    with tempfile.TemporaryDirectory() as scratch:
        sources = {"generated (seed 7)": generated_scopes(Path(scratch))}
        if not args.quick:
            if not LOCOMO.exists():
                raise SystemExit(f"LoCoMo not found at {LOCOMO}")
            sources["LoCoMo"] = locomo_scopes(args.locomo)
        rows, objective, questions = [], {}, {}
        for max_words, min_words in grid:
            started = time.perf_counter()
            found = {name: score(scopes, max_words, min_words) for name, scopes in sources.items()}
            questions = {name: int(f["questions"]) for name, f in found.items()}
            objective[(max_words, min_words)] = sum(f["first_search_ndcg@10"] for f in found.values()) / len(found)
            cells = [f"{f[m]:.3f}" for f in found.values() for m in METRICS]
            rows.append(
                [f"{max_words}/{min_words}", *cells, f"{objective[(max_words, min_words)]:.4f}", f"{time.perf_counter() - started:.0f}"]
            )
            print(f"  {max_words}/{min_words} done", file=sys.stderr)
    headers = [
        "max/min words",
        *(f"{source[:9]} {m.removeprefix('first_search_')}" for source in sources for m in METRICS),
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
