"""``lens merge SHARD.json... --out RUN.json [--html PATH]``: join a run's shards and gate the whole run.

The fan-in step of a sharded run (``--lens-shard=I/N`` in N jobs): refuses shards that do not make one run
(naming the shard or field), recomputes everything from the per-question rows, prints the summary a single run
prints, and exits with that run's status (0 passed, 1 failed), or 2 when the shards cannot be merged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_merge", "run_merge"]


def add_merge(sub: Any) -> argparse.ArgumentParser:
    """Register the ``merge`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "merge",
        help="join the shards of a --lens-shard=I/N run into one artifact and gate it as one run",
        description="Join every shard's artifact (--lens-json of each --lens-shard=I/N job) into the run they split: "
        "every summary, statistic and gate is computed again from the per-question rows, with the settings the shards "
        "ran with (gates, --lens-baseline, --lens-compare-fail included). Exits 0 when the run passes, 1 when it fails "
        "(as the single run's pytest would), 2 when the shards cannot be merged.",
    )
    parser.add_argument("shards", nargs="+", type=Path, metavar="SHARD", help="a shard's run artifact (.json)")
    parser.add_argument("--out", type=Path, required=True, metavar="RUN.json", help="where to write the merged run's artifact")
    parser.add_argument("--html", type=Path, default=None, metavar="PATH", help="also write the HTML report (needs pytest-lens[html])")
    parser.add_argument("--save", metavar="NAME", default=None, help="also save the merged run under NAME (as --lens-save does)")
    parser.add_argument(
        "--rootdir", type=Path, default=Path.cwd(), help="the checkout the shards ran in (datasets, adapters; default: here)"
    )
    return parser


def run_merge(args: argparse.Namespace) -> int:
    """Merge, print the run's summary, and return its exit status."""
    from pytest_lens.extras import missing_extra
    from pytest_lens.records.rows import RowError
    from pytest_lens.runs.fanin import ShardError, merge_shards
    from pytest_lens.runs.storage import SavedRunError, load_run

    missing = missing_extra("html", "lens merge --html") if args.html is not None else None
    if missing is not None:  # before the merge, not after it: nothing else of the run is lost
        print(missing, file=sys.stderr)
        return 2
    try:
        shards = [(str(path), load_run(path)) for path in args.shards]
        merged = merge_shards(
            shards, rootdir=args.rootdir.resolve(), out=args.out, html=args.html, save=args.save, encoding=sys.stdout.encoding
        )
    except (ShardError, SavedRunError, RowError) as exc:
        print(f"lens merge: {exc}", file=sys.stderr)
        return 2
    print(f"merged {len(shards)} shards: {len(merged.session.ledger.results)} results")
    for line in merged.outcome.lines:
        print(line.text)
    for reason in merged.outcome.reasons:
        print(f"FAILED: {reason}")
    print(f"lens merge: exit status {merged.exit_code}")
    return merged.exit_code
