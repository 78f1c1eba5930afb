"""``lens report RUN... --html PATH [--baseline BASE]``: the HTML report of saved runs, outside pytest.

Each RUN is a run artifact (``--lens-json``) or a run saved with ``--lens-save``; several are merged
into one report (e.g. one CI job per adapter). With ``--baseline`` the report compares the run with
it, as ``--lens-baseline`` does, and lists every question's change, largest drops first.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from pytest_lens.cli.compare import add_accept_unlike

__all__ = ["add_report", "run_report"]


def add_report(sub: Any) -> argparse.ArgumentParser:
    """Register the ``report`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "report",
        help="write the HTML report of saved runs (plots, tables, every question's transcript)",
        description="Write one self-contained HTML file for RUN (several RUNs are merged into one report). "
        "With --baseline, the runs are compared with it question by question.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run artifact (.json) or saved-run name (NAME, NNNN, NNNN_NAME)")
    parser.add_argument("--html", type=Path, required=True, metavar="PATH", help="where to write the report")
    parser.add_argument("--baseline", metavar="BASE", help="run artifact or saved-run name to compare with, paired by question")
    parser.add_argument("--storage", type=Path, default=Path(".lens"), help="directory of saved runs (default: .lens)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level after Holm correction (default 0.05)")
    parser.add_argument("--max-drop", type=float, default=None, help="also count a composite drop larger than this as a regression")
    add_accept_unlike(parser)
    return parser


def run_report(args: argparse.Namespace) -> int:
    """Write the report; 0, or 2 when an input cannot be used."""
    from pytest_lens.extras import missing_extra

    missing = missing_extra("html", "lens report")
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    from pytest_lens.cli.compare import accepted_unlike, compare_runs, unlike_refusal
    from pytest_lens.reports.html.page import render_report
    from pytest_lens.runs.merge import MergeError, merge_runs
    from pytest_lens.runs.storage import Baseline, RunStore, SavedRunError, open_baseline

    started = time.perf_counter()
    store = RunStore(args.storage)
    try:
        runs = [open_baseline(reference, store, (Path.cwd(),)) for reference in args.runs]
        baseline = open_baseline(args.baseline, store, (Path.cwd(),), scored=True) if args.baseline else None
        artifact = merge_runs([(run.info.name, run.artifact) for run in runs])
        if baseline is not None:
            accepted = accepted_unlike(args.accept_unlike)
            merged = Baseline(artifact, runs[0].info.model_copy(update={"name": " + ".join(run.info.name for run in runs)}))
            if (refused := unlike_refusal(merged, baseline, accepted)) is not None:
                raise ValueError(refused)
            lens, suites = compare_runs(artifact, baseline, alpha=args.alpha, max_drop=args.max_drop, accepted=accepted)
            artifact = artifact.model_copy(update={"comparison": lens, "suite_comparisons": suites})
        text = render_report(
            artifact,
            baseline=baseline.artifact if baseline is not None else None,
            baseline_name=baseline.info.name if baseline is not None else None,
            source=", ".join(run.info.name for run in runs),
        )
    except (SavedRunError, MergeError, ValueError) as exc:  # a row at fault (RowError) is a ValueError naming its file and line
        print(f"lens report: {exc}", file=sys.stderr)
        return 2
    data = text.encode("utf-8")
    try:
        args.html.parent.mkdir(parents=True, exist_ok=True)
        args.html.write_bytes(data)
    except OSError as exc:
        print(f"lens report: cannot write {args.html}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.html} ({len(data) / 1e6:.1f} MB, {len(artifact.results)} questions, {time.perf_counter() - started:.1f} s)")
    return 0

