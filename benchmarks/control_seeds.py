"""How much a sensitivity row owes to its control's seed: bm25 against the random memory and its shuffled mutant.

The random memory draws from ``(seed, query)`` and the ``shuffled`` mutant permutes from ``(seed,
query, ...)``, so one run's row (``--lens-seed``, 42 by default) is one draw. For seeds 0..N-1 this
computes what ``--lens-controls`` would (the offline agent's first search, ``limit=10``, scored as the
headline: ``0.5 x first-search nDCG@10 + 0.5 x first-search MRR`` per question; the gate's one-sided paired
t-test of the mean drop, control - bm25, paired by question, one scope: the questions are the units) and prints, per control, the mean score
over seeds, how many seeds give p < 0.05, the median p, and seed 42's draw. bm25's own ranking is the
same for every seed.

    python benchmarks/control_seeds.py                  # real LENS scope 01 from ../shared, 100 seeds
    python benchmarks/control_seeds.py --dataset PATH --seeds 50
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lens_fixtures.adapters.bm25 import BM25Adapter
from lens_fixtures.adapters.random_memory import RandomAdapter
from pytest_lens.analysis.format import format_table
from pytest_lens.analysis.inference import Mean, jackknife
from pytest_lens.controls.mutants import Shuffled
from pytest_lens.datasets.loader import load_datasets
from pytest_lens.scoring.headline import RETRIEVAL_SCORE_WEIGHTS
from pytest_lens.scoring.retrieval import RetrievalEvidence, retrieval_metrics
from shared_data import SHARED

SCOPE_01 = SHARED / "datasets" / "lens" / "scope_01_with_distractors.json"
RUN_SEED = 42


def headline(ranked: list[str], required: list[str], stored: set[str]) -> float:
    """The retrieval score of one first search."""
    found = retrieval_metrics(RetrievalEvidence(searches=[ranked], required=required, stored=stored, cited=[], grounded=[]))
    return sum(weight * found[name] for name, weight in RETRIEVAL_SCORE_WEIGHTS.items())


def drop_p(differences: list[float]) -> float:
    """The gate's one-sided p-value for a drop: the paired t-test of the mean difference (questions as units)."""
    mean = Mean(differences)
    found = jackknife(len(differences), mean, without=mean.without)
    return 1.0 if found is None else found.p_value("less")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default=str(SCOPE_01), help="dataset file or directory (default: real LENS scope 01)")
    parser.add_argument("--seeds", type=int, default=100, help="seeds 0..N-1 (default 100)")
    args = parser.parse_args()
    scopes = [scope for dataset in load_datasets([Path(args.dataset)]) for scope in dataset.scopes]
    seeds = range(args.seeds)
    rows = []
    bm25_scores: list[float] = []
    controls: dict[str, list[list[float]]] = {"random": [[] for _ in seeds], "bm25/shuffled": [[] for _ in seeds]}
    for scope in scopes:
        bm25 = BM25Adapter()
        randoms = [RandomAdapter(seed=seed) for seed in seeds]
        shuffled = [Shuffled(BM25Adapter(), seed=seed) for seed in seeds]
        memories = [bm25, *randoms, *shuffled]
        for memory in memories:
            memory.reset(scope.scope_id)
        ingested = 0
        for checkpoint in scope.checkpoints:
            for episode in scope.stream[ingested:checkpoint]:
                for memory in memories:
                    memory.ingest(episode.episode_id, scope.scope_id, episode.iso_timestamp, episode.text, {})
            ingested = checkpoint
            stored = scope.available_refs(checkpoint)
            for question in scope.questions:
                required = [ref for ref in question.ground_truth.required_evidence_refs if ref in stored]
                if question.checkpoint_after != checkpoint or not required:
                    continue
                query = question.prompt  # the offline agent's first search: the question as asked
                bm25_scores.append(headline([hit.ref_id for hit in bm25.search(query, None, 10)], required, stored))
                for seed in seeds:
                    for name, memory in (("random", randoms[seed]), ("bm25/shuffled", shuffled[seed])):
                        ranked = [hit.ref_id for hit in memory.search(query, None, 10)]
                        controls[name][seed].append(headline(ranked, required, stored))
        for memory in memories:
            memory.close()
    bm25_mean = sum(bm25_scores) / len(bm25_scores)
    for name, per_seed in controls.items():
        means = [sum(scores) / len(scores) for scores in per_seed]
        p_values = [drop_p([c - b for c, b in zip(scores, bm25_scores, strict=True)]) for scores in per_seed]
        run_seed = f"{means[RUN_SEED]:.3f}, p {p_values[RUN_SEED]:.3f}" if len(means) > RUN_SEED else "-"
        rows.append(
            [
                name,
                str(len(bm25_scores)),
                f"{bm25_mean:.3f}",
                f"{sum(means) / len(means):.3f}",
                f"{sum(p < 0.05 for p in p_values)} / {len(p_values)}",
                f"{sorted(p_values)[len(p_values) // 2]:.3f}",
                run_seed,
            ]
        )
    headers = ["control", "n", "bm25", "control (mean over seeds)", "p < 0.05", "median p", f"seed {RUN_SEED}"]
    print(f"bm25 against its controls on {args.dataset}, seeds 0..{args.seeds - 1}: retrieval score of the first search")
    print("\n".join(format_table(headers, rows, [False, True, True, True, True, True, True])))


if __name__ == "__main__":
    main()
