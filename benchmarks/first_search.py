"""What a memory ranks for each question as first asked: the offline agent's first search, without the agent.

Shared by the benchmarks that choose or check a reference adapter's retrieval (``chunk_defaults.py``,
``hybrid_weight.py``, ``locomo_retrieval.py``): a fresh adapter takes each scope in stream order; at each
checkpoint every question of that checkpoint whose required evidence is stored is searched with its own prompt,
and the ranking is kept with the evidence and the question's category. Measures:

- ``ndcg@10``, ``recall@5``, ``recall@10``, ``mrr``: trec_eval's, through the scorer's own
  :func:`~pytest_lens.scoring.retrieval.retrieval_metrics` (what a run reports);
- ``retrieval``: the run's headline, 0.5 x nDCG@10 + 0.5 x MRR;
- ``hit@1`` (a required episode ranked first) and ``ndcg@5`` (binary gains, the ideal DCG over
  min(required, 5)): as the LoCoMo retrieval literature reports them.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_lens.datasets.loader import LoadedScope, load_datasets
from pytest_lens.scoring.retrieval import RetrievalEvidence, retrieval_metrics
from shared_data import SHARED

__all__ = ["LOCOMO", "MEASURES", "Searched", "first_searches", "generated_scopes", "locomo_scopes", "means", "measures"]

LOCOMO = SHARED / "datasets" / "locomo" / "locomo10.json"
#: Every measure :func:`measures` gives, in table order.
MEASURES = ("hit@1", "ndcg@5", "ndcg@10", "recall@5", "recall@10", "mrr", "retrieval")


@dataclass(frozen=True)
class Searched:
    """One question's first search: what the memory ranked and what was required."""

    scope_id: str
    question_id: str
    category: str
    ranked: list[str]
    required: list[str]
    stored: frozenset[str]


def generated_scopes(seed: int, workdir: Path) -> list[LoadedScope]:
    """The generator's six domains at ``seed``, written by ``lens generate`` (the bundled scopes are seed 1)."""
    from pytest_lens.cli.main import main as lens

    out = workdir / f"generated-{seed}"
    if lens(["generate", "--domain", "all", "--seed", str(seed), "--out", f"{out}/"]) != 0:
        raise SystemExit("lens generate failed")
    return [scope for dataset in load_datasets([out]) for scope in dataset.scopes]


def locomo_scopes(conversations: slice = slice(None)) -> list[LoadedScope]:
    """LoCoMo's conversations (sessions as episodes), those of ``conversations`` (all by default)."""
    if not LOCOMO.exists():
        raise SystemExit(f"LoCoMo not found at {LOCOMO}")
    return [scope for dataset in load_datasets([Path(f"locomo:{LOCOMO}")]) for scope in dataset.scopes][conversations]


def first_searches(make: Callable[[], Any], scopes: Iterable[LoadedScope], *, limit: int = 10, progress: bool = True) -> list[Searched]:
    """Every question's first search (its prompt, ``limit`` results) on a fresh ``make()`` streamed through ``scopes``."""
    found: list[Searched] = []
    adapter = make()
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
                    ranked = [hit.ref_id for hit in adapter.search(question.prompt, None, limit)]
                    found.append(Searched(scope.scope_id, question.question_id, question.question_type, ranked, required, available))
            if progress:
                print(f"  {scope.scope_id}: {len(found)} questions searched", file=sys.stderr, flush=True)
    finally:
        close = getattr(adapter, "close", None)
        if close is not None:
            close()
    return found


def measures(searched: Searched) -> dict[str, float]:
    """The measures of one first search (see the module docstring)."""
    trec = retrieval_metrics(RetrievalEvidence([searched.ranked], searched.required, searched.stored, cited=[], grounded=[]))
    required = set(searched.required)
    ranked = list(dict.fromkeys(searched.ranked))
    gains = [1.0 / math.log2(rank + 1) for rank, ref in enumerate(ranked[:5], start=1) if ref in required]
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(required), 5) + 1))
    return {
        "hit@1": float(bool(ranked) and ranked[0] in required),
        "ndcg@5": sum(gains) / ideal,
        "ndcg@10": trec["first_search_ndcg@10"],
        "recall@5": trec["first_search_recall@5"],
        "recall@10": trec["first_search_recall@10"],
        "mrr": trec["first_search_mrr"],
        "retrieval": 0.5 * trec["first_search_ndcg@10"] + 0.5 * trec["first_search_mrr"],
    }


def means(searches: Sequence[Searched], by_category: bool = False) -> dict[str, dict[str, float]]:
    """Mean measures over ``searches`` (key ``all``), and per category with ``by_category``; ``n`` counts the questions."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for searched in searches:
        found = measures(searched)
        groups["all"].append(found)
        if by_category:
            groups[searched.category].append(found)
    return {name: {m: sum(f[m] for f in rows) / len(rows) for m in MEASURES} | {"n": float(len(rows))} for name, rows in groups.items()}
