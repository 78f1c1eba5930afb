"""``lens show RUN [QUESTION | -k EXPR] [--worst N]``: question transcripts of a saved run, in the terminal.

RUN is a run artifact (``--lens-json``) or the name of a run saved with ``--lens-save``. The
transcript is the HTML report's, as text: prompt, every tool call with the refs it returned,
the answer, which evidence was required, cited and returned, the scores and any problems.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_lens.text import terminal_safe

if TYPE_CHECKING:
    from pytest_lens.records.results import RunArtifact
    from pytest_lens.reports.views.transcript import Transcript

__all__ = ["add_show", "run_show"]

#: More matches than this are listed rather than printed in full (``--all`` prints them anyway).
MAX_TRANSCRIPTS = 10


def add_show(sub: Any) -> argparse.ArgumentParser:
    """Register the ``show`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "show",
        help="print question transcripts of a saved run (prompt, tool calls, answer, evidence, scores)",
        description="Print the transcript of the questions of RUN that match QUESTION (a question id or test id) and/or -k EXPR, "
        "or its worst questions. Without a selection, list the run's questions.",
    )
    parser.add_argument("artifact", metavar="RUN", help="run artifact (.json) or saved-run name (NAME, NNNN, NNNN_NAME)")
    parser.add_argument("question", metavar="QUESTION", nargs="?", help="question id, test id, or pytest node id of one question")
    parser.add_argument(
        "-k", dest="keyword", metavar="EXPR", help="pytest-style keyword expression over test ids, types, budgets and outcomes"
    )
    parser.add_argument("--worst", type=int, metavar="N", help="the N worst questions per adapter (failed first, then lowest headline)")
    parser.add_argument("--episodes", action="store_true", help="also print the full text of every cited or required episode")
    parser.add_argument("--all", action="store_true", help=f"print every matching transcript, even more than {MAX_TRANSCRIPTS}")
    parser.add_argument("--storage", type=Path, default=Path(".lens"), help="directory of saved runs (default: .lens)")
    return parser


def run_show(args: argparse.Namespace) -> int:
    """Print transcripts; 0, 1 (nothing matched) or 2 (unusable input)."""
    from pytest_lens.records.rows import RowError
    from pytest_lens.reports.views.select import KeywordError, select
    from pytest_lens.reports.views.terminal import transcript_lines
    from pytest_lens.reports.views.worst import worst
    from pytest_lens.runs.storage import RunStore, SavedRunError, open_baseline

    if args.worst is not None and args.worst < 1:
        print(f"lens show: --worst must be at least 1, got {args.worst}", file=sys.stderr)
        return 2
    try:
        run = open_baseline(args.artifact, RunStore(args.storage), (Path.cwd(),))
        # Choosing reads every row without its transcript; only the transcripts printed are read whole.
        items = _transcripts(run.artifact)
    except (SavedRunError, RowError) as exc:
        print(f"lens show: {exc}", file=sys.stderr)
        return 2
    try:
        chosen = select(items, args.question, args.keyword)
    except KeywordError as exc:
        print(f"lens show: -k {args.keyword!r}: {exc}", file=sys.stderr)
        return 2
    if args.worst is not None:
        groups = worst(chosen, args.worst)
        for key, group in groups.items():
            if not group:
                print(f"{key}: every question scored 1.000")
        chosen = [item for group in groups.values() for item in group]
        if groups and not chosen:
            return 0
    if not chosen:
        wanted = " and ".join(part for part in (args.question and repr(args.question), args.keyword and f"-k {args.keyword!r}") if part)
        print(f"lens show: no question of {run.info.name} matches {wanted or 'the selection'} ({len(items)} questions in the run)")
        return 1
    selected = args.question is not None or args.keyword is not None or args.worst is not None
    if not selected or (len(chosen) > MAX_TRANSCRIPTS and not args.all):
        print(f"{run.info.name}: {len(chosen)} of {len(items)} questions" + (" match" if selected else ""))
        for item in chosen:
            print(terminal_safe(f"  {item.headline:.3f} {item.outcome:<7} {item.test_id}"))
        print("show one with: lens show RUN QUESTION (a question id or test id), or narrow with -k EXPR; --all prints every transcript")
        return 0
    width = min(140, shutil.get_terminal_size((100, 24)).columns)
    try:
        chosen = _whole(run.artifact, items, chosen)
    except RowError as exc:
        print(f"lens show: {exc}", file=sys.stderr)
        return 2
    for index, item in enumerate(chosen):
        if index:
            print()
        for line in transcript_lines(item, width=width, episode_texts=args.episodes):
            print(terminal_safe(line))  # episodes, answers and tool results are the dataset's and the model's text
    return 0


def _transcripts(artifact: RunArtifact) -> list[Transcript]:
    """Every question's transcript for choosing: its result read without the transcript itself (:func:`_whole` reads it)."""
    from pytest_lens.records.results import scored_results
    from pytest_lens.reports.views.transcript import build_transcripts
    from pytest_lens.scoring.headline import QuestionHeadlines, gates_of

    results = list(scored_results(artifact.results))
    return build_transcripts(results, artifact.evidence, gates_of(artifact.run), QuestionHeadlines.of_run(artifact.run))


def _whole(artifact: RunArtifact, items: list[Transcript], chosen: list[Transcript]) -> list[Transcript]:
    """``chosen`` (some of ``items``) with their results read whole from the run's rows."""
    position = {id(item): index for index, item in enumerate(items)}
    found = artifact.results.pick([position[id(item)] for item in chosen])
    return [replace(item, result=found[position[id(item)]]) for item in chosen]
