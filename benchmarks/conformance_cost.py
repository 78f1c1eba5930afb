"""What the conformance suite costs an adapter that embeds, and what it announces before it starts (prints a table).

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/conformance_cost.py                 # the Qdrant-style adapter, cold cache, profile ci
    PYTHONPATH=. python benchmarks/conformance_cost.py --calls                           # calls per example (estimate.CALLS_PER_EXAMPLE)
    PYTHONPATH=. python benchmarks/conformance_cost.py --texts                           # texts an embedding adapter would embed

Runs every clause through the core API (as ``pytest --lens-conformance`` does) against
benchmarks/qdrant_memory.py:QdrantMemory (one MiniLM vector per episode, qdrant-client local mode) with an empty
embedding cache, after printing the expected duration from the adapter's first calls. Reports the wall time, the
examples and instances, and the embedding cache: texts embedded (misses) and found again (hits).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from examples.my_memory import DictMemory

from pytest_lens import CapabilityManifest, SearchResult
from pytest_lens.analysis.format import format_table
from pytest_lens.conformance.catalog import CLAUSES
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.conformance.verify import ConformanceConfig, verify_clause
from pytest_lens.records.settings import AdapterSpec


def calls_per_example(profile: str) -> int:
    spec = AdapterSpec("DictMemory", "examples.my_memory:DictMemory", {})
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = [verify_clause(clause, SubjectFactory(spec, Path(tmp)), ConformanceConfig(profile)) for clause in CLAUSES]
    examples = sum(o.examples for o in outcomes)
    calls: dict[str, int] = {}
    for outcome in outcomes:
        for method, seconds in outcome.latencies.items():
            calls[method] = calls.get(method, 0) + len(seconds)
    rows = [["instances", f"{sum(o.instances for o in outcomes) / examples:.2f}"]]
    rows += [[method, f"{count / examples:.2f}"] for method, count in sorted(calls.items())]
    print(f"calls per example, DictMemory, profile {profile}, {examples} examples\n")
    print("\n".join(format_table(["method", "calls / example"], rows, [False, True])))
    return 0


class RecordingMemory(DictMemory):
    """The in-memory example adapter with QdrantMemory's manifest, recording every text it would embed."""

    texts: ClassVar[list[str]] = []
    queries: ClassVar[list[str]] = []

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        RecordingMemory.texts.append(text)
        super().ingest(episode_id, scope_id, timestamp, text, meta)

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        RecordingMemory.queries.append(query)
        return super().search(query, filters, limit)

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(search_modes=["semantic"], max_results_per_search=10)


def texts_embedded(profile: str) -> int:
    spec = AdapterSpec("RecordingMemory", f"{__name__}:RecordingMemory", {})
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = [verify_clause(clause, SubjectFactory(spec, Path(tmp)), ConformanceConfig(profile)) for clause in CLAUSES]
    texts, queries = RecordingMemory.texts, RecordingMemory.queries
    rows = [
        ["episode texts", f"{len(texts):,}", f"{len(set(texts)):,}", f"{sum(map(len, texts)):,}", f"{sum(map(len, set(texts))):,}"],
        ["queries", f"{len(queries):,}", f"{len(set(queries)):,}", f"{sum(map(len, queries)):,}", f"{sum(map(len, set(queries))):,}"],
    ]
    print(f"what an adapter embedding every text and query is given, profile {profile}, {sum(o.examples for o in outcomes)} examples\n")
    headers = ["", "given", "distinct (embedded with a cache)", "characters given", "characters distinct"]
    print("\n".join(format_table(headers, rows, [False, True, True, True, True])))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default="benchmarks.qdrant_memory:QdrantMemory")
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--calls", action="store_true", help="count calls per example on the in-memory example adapter")
    parser.add_argument("--texts", action="store_true", help="count the texts and queries an embedding adapter is given")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parents[1]))
    if args.calls:
        return calls_per_example(args.profile)
    if args.texts:
        return texts_embedded(args.profile)
    try:
        from pytest_lens.conformance.estimate import estimate_suite
    except ImportError:  # a tree from before the announcement (PYTHONPATH=OLD/src, to measure the change)
        estimate_suite = None

    with tempfile.TemporaryDirectory(prefix="lens-conformance-cost-") as tmp:
        cache = Path(tmp) / "cache"
        spec = AdapterSpec(args.adapter.rpartition(":")[2], args.adapter, {"cache_dir": str(cache)})
        started = time.perf_counter()
        expected, announced = "-", "-"
        if estimate_suite is not None:
            factory = SubjectFactory(spec, Path(tmp) / "storage")
            manifest, _ = factory.manifest()
            estimate = estimate_suite(factory, CLAUSES, args.profile, manifest)
            expected, announced = f"{estimate.seconds:.0f}", f"{time.perf_counter() - started:.1f}"
            print(estimate.line(), f"(after {announced} s)", file=sys.stderr, flush=True)
        outcomes = []
        for clause in CLAUSES:
            try:
                config = ConformanceConfig(args.profile, progress=print, progress_interval_s=9.0)
            except TypeError:  # the older tree's config has no progress
                config = ConformanceConfig(args.profile)
            outcome = verify_clause(clause, SubjectFactory(spec, Path(tmp) / "storage"), config)
            outcomes.append(outcome)
            print(f"{clause.id}: {outcome.status}, {outcome.examples} examples, {outcome.duration_s:.1f} s", file=sys.stderr, flush=True)
        wall = time.perf_counter() - started
        with sqlite3.connect(next(cache.rglob("*.sqlite"))) as db:
            embedded = db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    failed = [o for o in outcomes if o.status == "failed"]
    print(f"\nconformance suite, profile {args.profile}, {args.adapter}, cold embedding cache\n")
    headers = ["wall s", "expected s", "announced after s", "clauses passed", "failed", "n/a", "examples", "instances", "texts embedded"]
    row = [
        f"{wall:.1f}",
        expected,
        announced,
        str(sum(o.status == "passed" for o in outcomes)),
        str(len(failed)),
        str(sum(o.status == "not_applicable" for o in outcomes)),
        f"{sum(o.examples for o in outcomes):,}",
        f"{sum(o.instances for o in outcomes):,}",
        f"{embedded:,}",
    ]
    print("\n".join(format_table(headers, [row], [True] * len(headers))))
    for outcome in failed:
        print("\n" + outcome.message)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
