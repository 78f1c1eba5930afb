"""Our reference adapters' LoCoMo retrieval, measured the way the LoCoMo retrieval literature measures it.

Every LoCoMo question whose evidence names a stored session is searched with its own text on a fresh adapter
holding the whole conversation (the offline agent's first search; ``benchmarks/first_search.py``), and the ranked
sessions are scored against the evidence sessions: Hit@1, NDCG@5, recall@5 and @10, MRR, and the run's retrieval
score, over all questions and per category (LoCoMo's categories as the importer names them: 1 multi_hop,
2 temporal_reasoning, 3 open_domain, 4 single_hop, 5 adversarial). The docs' validity section
(``docs/reference-adapters.md``) sets these beside published figures for the same retrievers on the same data.
The first four conversations helped choose sqlite-hybrid's chunk sizes (``chunk_defaults.py``), so the table
also gives conversations 5-10 alone, data no choice of ours has seen.

    python benchmarks/locomo_retrieval.py                       # bm25, embedding (mean, max), sqlite-hybrid (score, rrf)
    python benchmarks/locomo_retrieval.py --adapters bm25 --conversations 2   # a smoke run
    python benchmarks/locomo_retrieval.py --data bundled --adapters bm25 sqlite-hybrid sqlite-hybrid-rrf

``--data`` measures LENS scopes instead (``bundled``: the six bundled scopes; or dataset files and scope
directories), every question whose required evidence is stored at its checkpoint, all categories together.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from first_search import MEASURES, Searched, first_searches, locomo_scopes, means
from pytest_lens.analysis.format import format_table
from pytest_lens.datasets.bundled import bundled_dataset_paths
from pytest_lens.datasets.loader import load_datasets

#: Conversations that helped choose sqlite-hybrid's chunk sizes (``chunk_defaults.py``).
TUNED_ON = 4


def _adapters() -> dict[str, Callable[[], Any]]:
    from lens_fixtures.adapters.bm25 import BM25Adapter
    from lens_fixtures.adapters.embedding import EmbeddingAdapter
    from lens_fixtures.adapters.sqlite_hybrid import SQLiteHybridAdapter

    return {
        "bm25": BM25Adapter,
        "embedding": EmbeddingAdapter,  # one vector per session: the mean of its chunks' (early interaction)
        "embedding-max": lambda: EmbeddingAdapter(pooling="max", max_chunk_words=150),  # its best chunk (late interaction)
        "sqlite-hybrid": SQLiteHybridAdapter,
        "sqlite-hybrid-rrf": lambda: SQLiteHybridAdapter(fusion="rrf"),
    }


def table(found: dict[str, list[Searched]], *, by_category: bool) -> list[str]:
    """One row per adapter (and category): n and every measure."""
    rows = []
    for name, searched in found.items():
        for group, values in means(searched, by_category=by_category).items():
            if by_category or group == "all":
                rows.append([name, group, str(int(values["n"])), *(f"{values[m]:.3f}" for m in MEASURES)])
    return format_table(["adapter", "questions", "n", *MEASURES], rows, [False, False, True, *([True] * len(MEASURES))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    known = _adapters()
    parser.add_argument("--adapters", nargs="+", choices=sorted(known), default=list(known), help="adapters to measure")
    parser.add_argument("--conversations", type=int, default=10, metavar="N", help="the first N conversations (default all 10)")
    parser.add_argument("--data", nargs="+", metavar="PATH", help="LENS scopes instead of LoCoMo (bundled: the six bundled scopes)")
    args = parser.parse_args()
    for item in args.data or []:  # one table per data set
        paths = bundled_dataset_paths() if item == "bundled" else [Path(item)]
        lens = [scope for dataset in load_datasets(paths) for scope in dataset.scopes]
        found = {name: first_searches(known[name], lens, limit=20, progress=False) for name in args.adapters}
        print(f"{item}: first-search retrieval, {len(next(iter(found.values())))} questions of {len(lens)} scope(s), 20 results")
        print("\n".join(table(found, by_category=False)))
    if args.data:
        return
    scopes = locomo_scopes(slice(0, args.conversations))
    found = {name: first_searches(known[name], scopes, limit=20) for name in args.adapters}
    total = len(next(iter(found.values())))
    print(f"LoCoMo first-search retrieval: {total} questions of {len(scopes)} conversations, sessions as documents, 20 results")
    print("\n".join(table(found, by_category=True)))
    unseen = {scope.scope_id for scope in scopes[TUNED_ON:]}
    held_out = {name: [s for s in searched if s.scope_id in unseen] for name, searched in found.items()}
    if any(held_out.values()):
        print("\nconversations 5-10 only (never used to choose a default):")
        print("\n".join(table(held_out, by_category=False)))


if __name__ == "__main__":
    main()
