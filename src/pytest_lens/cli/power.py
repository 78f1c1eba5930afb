"""``lens power RUN --delta X``: questions, scopes and repetitions needed to detect a drop of X (see ``analysis.power``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_lens.records.options import DEFAULTS, parse_alpha, parse_fraction

__all__ = ["add_power", "power_lines", "run_power"]


def add_power(sub: Any) -> argparse.ArgumentParser:
    """Register the ``power`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "power",
        help="how many questions, scopes and repetitions a comparison needs to detect a given drop",
        description="From a saved run (and optionally its baseline, for paired differences): the questions, scopes and "
        "answers per question (--lens-repeat) needed to detect a headline drop of DELTA with a one-sided test.",
    )
    parser.add_argument("target", metavar="RUN", help="run artifact (.json) or saved-run name (NAME, NNNN, NNNN_NAME)")
    parser.add_argument("--delta", required=True, help="the drop of the headline to detect (e.g. 0.03)")
    parser.add_argument("--against", default=None, metavar="BASELINE", help="a baseline run: size from the paired differences")
    parser.add_argument("--alpha", default=None, help=f"one-sided significance level (default {DEFAULTS.alpha:g})")
    parser.add_argument("--power", default="0.8", help="probability of detecting the drop (default 0.8)")
    parser.add_argument("--storage", type=Path, default=Path(".lens"), help="directory of saved runs (default: .lens)")
    return parser


def run_power(args: argparse.Namespace) -> int:
    """Print one plan per adapter; 2 on unusable input."""
    from pytest_lens.analysis.power import plan_power
    from pytest_lens.records.results import LENS
    from pytest_lens.runs.storage import RunStore, SavedRunError, open_baseline
    from pytest_lens.scoring.headline import recorded_headline

    try:
        delta = _read("--delta", args.delta, parse_delta)
        alpha = DEFAULTS.alpha if args.alpha is None else _read("--alpha", args.alpha, parse_alpha)
        power = _read("--power", args.power, parse_alpha)
        store = RunStore(args.storage)
        run = open_baseline(args.target, store, (Path.cwd(),), scored=True)
        against = open_baseline(args.against, store, (Path.cwd(),), scored=True) if args.against else None
        score, weights, gates = recorded_headline(run.artifact.run)
        plans = plan_power(
            [r for r in run.artifact.results if r.suite == LENS],
            weights,
            gates,
            delta=delta,
            alpha=alpha,
            power=power,
            baseline=[r for r in against.artifact.results if r.suite == LENS] if against is not None else (),
        )
    except (SavedRunError, ValueError) as exc:
        print(f"lens power: {exc}", file=sys.stderr)
        return 2
    if not plans:
        print(f"lens power: {run.info.path}: no adapter with two or more LENS questions to size from", file=sys.stderr)
        return 2
    for line in power_lines(plans, score, run.info.name, None if against is None else against.info.name):
        print(line)
    return 0


def power_lines(plans: list[Any], score: str, run: str, against: str | None) -> list[str]:
    """The plans as text: what each adapter's comparison detects now, then the table of what a drop of delta needs."""
    from pytest_lens.analysis.format import format_table

    first = plans[0]
    source = f"paired differences against {against}" if against else "this run's per-question variance, as if a second run were independent"
    out = [f"power of a one-sided test of {score} at alpha {first.alpha:g} with {first.power:.0%} power, from {source} ({run}):"]
    for plan in plans:
        rho = (
            "one scope: no clustering"
            if plan.rho is None
            else f"intra-scope correlation {plan.rho:.2f}, design effect {plan.design_effect:.2f}"
        )
        split = (
            f"variance within questions {plan.within:.4f} (shrinks with repetitions), between {plan.between:.4f}"
            if plan.within is not None
            else "one answer per question: the within/between split needs --lens-repeat (all variance counted as between)"
        )
        out += [
            "",
            f"{plan.adapter}: {plan.questions} questions in {plan.scopes} scope(s), {plan.repetitions} answer(s) each; {rho}; {split}",
            f"  as run, it detects a drop of {plan.current_mde:.3f} or more; to detect {plan.delta:g}:",
        ]
        rows = [
            [str(row.repetitions), f"{row.variance:.4f}", str(row.independent), str(row.clustered), str(row.scopes)] for row in plan.rows
        ]
        headers = ["answers/question", "Var(d)", "questions (independent)", "questions (clustered)", f"scopes of {plan.per_scope:.0f}"]
        out += ["  " + line for line in format_table(headers, rows, [True] * 5)]
    return out


#: The smallest drop ``lens power`` sizes for: scores are recorded to six decimals, so a smaller one is not measured
#: (``--delta 1e-200`` divided by zero, ``1e-160`` overflowed).
MIN_DELTA = 1e-6


def parse_delta(text: str) -> float:
    """The drop to detect: a fraction from :data:`MIN_DELTA` to 1."""
    delta = parse_fraction(text)
    if delta < MIN_DELTA:
        raise ValueError(
            f"must be at least {MIN_DELTA:g} (scores are recorded to six decimals: a smaller drop is not measured), got {text!r}"
        )
    return delta


def _read(flag: str, text: str, parse: Any) -> Any:
    try:
        return parse(text)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None
