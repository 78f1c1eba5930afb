"""``lens compare BASELINE CURRENT``: the baseline comparison of a pytest run, outside pytest.

Both arguments are run artifacts (``--lens-json`` files) or names of runs saved with
``--lens-save`` (looked up in ``--storage``, default ``.lens``). The output is the same
table the pytest summary prints; ``--fail`` makes a regression exit with status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_lens.records.card import parse_accepted, refusing
from pytest_lens.records.options import DEFAULTS, parse_alpha, parse_fraction, parse_seed
from pytest_lens.scoring.headline import recorded_headline

if TYPE_CHECKING:
    from pytest_lens.records.results import RunArtifact
    from pytest_lens.records.statistics import BaselineComparison
    from pytest_lens.runs.storage import Baseline

__all__ = ["accepted_unlike", "add_accept_unlike", "add_compare", "compare_runs", "run_compare", "unlike_refusal"]

T = TypeVar("T")


def add_compare(sub: Any) -> argparse.ArgumentParser:
    """Register the ``compare`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "compare",
        help="compare a run with a baseline run, paired by question (as --lens-baseline does)",
        description="Compare CURRENT with BASELINE: one-sided paired t-test of the mean drop (scopes as units with 5 or more), "
        "mean delta with its t interval, "
        "flipped questions. Both runs are rescored with CURRENT's headline (retrieval score or composite), weights and gates.",
    )
    parser.add_argument("baseline", metavar="BASELINE", help="run artifact (.json) or saved-run name (NAME, NNNN, NNNN_NAME)")
    parser.add_argument("current", metavar="CURRENT", help="run artifact (.json) or saved-run name")
    parser.add_argument("--storage", type=Path, default=Path(".lens"), help="directory of saved runs (default: .lens)")
    # Read as text and checked by the parsers of --lens-alpha, --lens-max-drop and --lens-seed: the same messages.
    parser.add_argument("--alpha", default=None, help=f"significance level after Holm correction (default {DEFAULTS.alpha:g})")
    parser.add_argument("--max-drop", default=None, help="also count a headline drop larger than this as a regression")
    parser.add_argument(
        "--margin", default=None, help="non-inferiority: count it a regression when the upper bound of the drop exceeds this"
    )
    parser.add_argument(
        "--bootstrap",
        choices=("auto", "clustered", "two-stage", "plain"),
        default="auto",
        help="independent units: scopes (clustered), scopes with a two-stage bootstrap standard error (two-stage), "
        "questions (plain), or auto (clustered with 5 or more scopes)",
    )
    parser.add_argument("--seed", default=None, help="bootstrap seed (default: CURRENT's --lens-seed)")
    parser.add_argument("--fail", action="store_true", help="exit 1 on a regression (like --lens-compare-fail)")
    parser.add_argument(
        "--partial", action="store_true", help="with --fail: gate on the questions both runs have, even if either has others"
    )
    add_accept_unlike(parser)
    return parser


def compare_runs(
    current: RunArtifact,
    baseline: Baseline,
    *,
    alpha: float,
    max_drop: float | None,
    seed: int | None = None,
    margin: float | None = None,
    bootstrap: str = "auto",
    accepted: tuple[str, ...] = (),
) -> tuple[BaselineComparison | None, dict[str, BaselineComparison]]:
    """``current`` against ``baseline``: the LENS comparison (``None`` for a run of sibling suites only), and each suite's.

    Both runs are rescored with ``current``'s headline (its weights and gates; the composite for runs saved
    before there was a headline); ``seed`` defaults to ``current``'s ``--lens-seed``.
    """
    from pytest_lens.analysis.baseline import compare_with_baseline
    from pytest_lens.analysis.run import clusters_for
    from pytest_lens.records.results import LENS, scored_results
    from pytest_lens.suites.selection import SuiteRun

    run = current.run
    score, weights, gates = recorded_headline(run)  # CURRENT's headline
    seed = seed if seed is not None else run.seed if run.seed is not None else 42
    results = list(scored_results(current.results))
    suite_names = list(dict.fromkeys(r.suite for r in results if r.suite != LENS))
    lens = None
    if any(r.suite == LENS for r in results) or not suite_names:
        clusters = clusters_for([r for r in results if r.suite == LENS and r.control is None], bootstrap)
        lens = compare_with_baseline(
            results,
            run,
            baseline.artifact,
            baseline.info,
            weights,
            gates,
            alpha=alpha,
            max_drop=max_drop,
            seed=seed,
            score=score,
            clusters=clusters,
            margin=margin,
            accepted=accepted,
        )
    suites = SuiteRun.recorded(suite_names, run)
    found = suites.comparisons(results, run, baseline.artifact, baseline.info, alpha=alpha, max_drop=max_drop, seed=seed, accepted=accepted)
    return lens, found


def run_compare(args: argparse.Namespace) -> int:
    """Print the comparison; 0, 1 (regression with ``--fail``) or 2 (unusable input)."""
    from pytest_lens.analysis.gates import GatePolicy, compare_gate
    from pytest_lens.reports.render import arrows_for, comparison_lines
    from pytest_lens.runs.storage import RunStore, SavedRunError, open_baseline
    from pytest_lens.suites.selection import SuiteRun

    try:
        alpha, max_drop, seed = _checked(args)
        margin = None if args.margin is None else _margin(args.margin)
        accepted = accepted_unlike(args.accept_unlike)
    except ValueError as exc:
        print(f"lens compare: {exc}", file=sys.stderr)
        return 2
    store = RunStore(args.storage)
    try:
        baseline = open_baseline(args.baseline, store, (Path.cwd(),), scored=True)
        current = open_baseline(args.current, store, (Path.cwd(),), scored=True)
    except (SavedRunError, ValueError) as exc:
        print(f"lens compare: {exc}", file=sys.stderr)
        return 2
    if (refused := unlike_refusal(current, baseline, accepted)) is not None:
        print(f"lens compare: {refused}", file=sys.stderr)
        return 2
    lens, found = compare_runs(
        current.artifact, baseline, alpha=alpha, max_drop=max_drop, seed=seed, margin=margin, bootstrap=args.bootstrap, accepted=accepted
    )
    suites = SuiteRun.recorded(found, current.artifact.run)
    comparisons: list[tuple[str, BaselineComparison]] = [("", lens)] if lens is not None else []
    comparisons.extend((name, comparison) for name, comparison in found.items())
    print(f"{current.info.name} ({current.info.path}) against {baseline.info.name}")
    unlike = list(dict.fromkeys(line for _, comparison in comparisons for line in comparison.accepted_unlike))
    if unlike:
        print(f"unlike runs compared, accepted by --accept-unlike={','.join(accepted)}: {'; '.join(unlike)}")
    arrows = arrows_for(sys.stdout.encoding)
    for suite, comparison in comparisons:
        if suite:
            print(f"\nsuite {suite} ({suites.describe(suite)}):")
        for line in comparison_lines(comparison, gating=args.fail, arrows=arrows, gate_option="--fail"):
            print(line)
    if not args.fail:
        return 0
    policy = GatePolicy(
        compare_fail=True,
        alpha=alpha,
        max_drop=max_drop,
        margin=margin,
        compare_partial=args.partial,
        partial_option="--partial",
        accept_option="--accept-unlike",
    )
    checks = [
        compare_gate(
            comparison, policy, name=f"--fail [suite {suite}]" if suite else "--fail", subject="score" if suite else comparison.score
        )
        for suite, comparison in comparisons
    ]
    for check in checks:
        print(check.line)
    return 0 if all(check.passed for check in checks) else 1


def add_accept_unlike(parser: argparse.ArgumentParser) -> None:
    """``--accept-unlike FIELD,...`` (``lens compare``, ``lens report --baseline``)."""
    parser.add_argument(
        "--accept-unlike",
        action="append",
        default=[],
        metavar="FIELD,...",
        help="compare although the runs' comparability cards differ in these fields (data, budget, agent, judge, scoring); "
        "without it such runs are refused with status 2. The output and the gate line say which were accepted",
    )


def unlike_refusal(current: Baseline, baseline: Baseline, accepted: tuple[str, ...]) -> str | None:
    """Why ``current`` and ``baseline`` cannot be compared (their cards differ in a field not ``accepted``), or ``None``."""
    refused = refusing(current.artifact.card, baseline.artifact.card, accepted)
    if not refused:
        return None
    fields = ",".join(d.field for d in refused)
    return (
        f"refused, {current.info.name} and {baseline.info.name} are unlike runs: "
        + "; ".join(d.line() for d in refused)
        + f". Their scores measure different things; compare runs measured alike, or pass --accept-unlike={fields} to compare "
        "anyway (the output will say so)"
    )


def accepted_unlike(entries: list[str]) -> tuple[str, ...]:
    """``--accept-unlike``'s names (each entry a comma list), checked as ``--lens-accept-unlike``'s are."""
    try:
        return tuple(dict.fromkeys(name for entry in entries for name in parse_accepted(entry)))
    except ValueError as exc:
        raise ValueError(f"--accept-unlike: {exc}") from None


def _checked(args: argparse.Namespace) -> tuple[float, float | None, int | None]:
    """``--alpha``, ``--max-drop`` and ``--seed``, parsed as their ``--lens-*`` twins are; ValueError names the flag."""

    def read(flag: str, text: str | None, parse: Callable[[str], T]) -> T | None:
        if text is None:
            return None
        try:
            return parse(text)
        except ValueError as exc:
            raise ValueError(f"{flag}: {exc}") from None

    alpha = read("--alpha", args.alpha, parse_alpha)
    return (
        (DEFAULTS.alpha if alpha is None else alpha),
        read("--max-drop", args.max_drop, parse_fraction),
        read("--seed", args.seed, parse_seed),
    )


def _margin(text: str) -> float:
    """``--margin``, parsed as ``--lens-margin`` is; ValueError names the flag."""
    try:
        return parse_fraction(text)
    except ValueError as exc:
        raise ValueError(f"--margin: {exc}") from None
