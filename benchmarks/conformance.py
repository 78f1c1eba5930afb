"""Runtime of the conformance suite per adapter (prints a table; not a test).

    python benchmarks/conformance.py                      # every registered adapter, the example and faceted ones
    python benchmarks/conformance.py --adapter bm25 --profile thorough
    python benchmarks/conformance.py --cold               # adapters with an embedding cache start from an empty one

Runs every clause through the core API (no pytest), as ``pytest --lens-adapter=A --lens-conformance``
does, and reports per adapter: clauses passed / failed / not applicable, examples, adapter
instances built, wall time, the slowest clause, and every failure message.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from pytest_lens.analysis.format import format_table
from pytest_lens.conformance.catalog import CLAUSES
from pytest_lens.conformance.subject import SubjectFactory
from pytest_lens.conformance.verify import ConformanceConfig, verify_clause
from pytest_lens.contract.registry import accepts_keyword, load_adapter_class, registered_adapters
from pytest_lens.records.settings import AdapterSpec

EXTRA = ["examples.my_memory:DictMemory", "lens_fixtures.adapters.faceted:FacetedMemory"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", action="append", help="registered name or module:Class (repeatable; default: all)")
    parser.add_argument("--profile", default="ci", help="ci (default), dev, thorough or a registered hypothesis profile")
    parser.add_argument("--cold", action="store_true", help="give adapters taking cache_dir an empty embedding cache")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parents[1]))  # for examples.my_memory
    targets = args.adapter or [*sorted(registered_adapters()), *EXTRA]
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="lens-conformance-bench-") as tmp:
        for target in targets:
            options: dict[str, object] = {}
            if args.cold and accepts_keyword(load_adapter_class(target), "cache_dir", via_kwargs=False):
                options["cache_dir"] = str(Path(tmp) / f"cache-{len(rows)}")
            spec = AdapterSpec(target.rpartition(":")[2] or target, target, options)
            started = time.perf_counter()
            outcomes = [
                verify_clause(clause, SubjectFactory(spec, Path(tmp) / "storage"), ConformanceConfig(args.profile)) for clause in CLAUSES
            ]
            wall = time.perf_counter() - started
            slowest = max(outcomes, key=lambda o: o.duration_s)
            count = {status: sum(o.status == status for o in outcomes) for status in ("passed", "failed", "not_applicable")}
            rows.append(
                [
                    spec.label,
                    str(count["passed"]),
                    str(count["failed"]),
                    str(count["not_applicable"]),
                    f"{sum(o.examples for o in outcomes):,}",
                    f"{sum(o.instances for o in outcomes):,}",
                    f"{wall:.1f}",
                    f"{slowest.clause} {slowest.duration_s:.1f} s",
                ]
            )
            failures.extend(o.message for o in outcomes if o.failed)
            print(f"{spec.label}: {wall:.1f} s", file=sys.stderr, flush=True)
    print(f"conformance suite, hypothesis profile {args.profile}{', cold embedding cache' if args.cold else ''}\n")
    headers = ["adapter", "passed", "failed", "n/a", "examples", "instances", "wall s", "slowest clause"]
    print("\n".join(format_table(headers, rows, [False, True, True, True, True, True, True, False])))
    for message in failures:
        print("\n" + message)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
