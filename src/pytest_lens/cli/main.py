"""The ``lens`` command: work with datasets and adapters outside pytest.

Each subcommand is a pair of functions (``add_<name>(subparsers)`` and ``run_<name>(args)``),
registered in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_lens.cli.bundle import add_bundle, add_reproduce, run_bundle, run_reproduce
from pytest_lens.cli.compare import add_compare, run_compare
from pytest_lens.cli.generate import add_generate, run_generate
from pytest_lens.cli.importing import add_generate_suite, add_import, run_generate_suite, run_import
from pytest_lens.cli.merge import add_merge, run_merge
from pytest_lens.cli.power import add_power, run_power
from pytest_lens.cli.report import add_report, run_report
from pytest_lens.cli.show import add_show, run_show

if TYPE_CHECKING:
    from pytest_lens.datasets.validator import DatasetIssue

__all__ = ["COMMANDS", "main"]

Subparsers = Any  # argparse._SubParsersAction: private, and not subscriptable at run time


def add_list(sub: Subparsers) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser("list", help="show bundled datasets and registered adapters")
    return parser


def run_list(args: argparse.Namespace) -> int:
    from pytest_lens.contract.registry import registered_adapters, registered_schemes
    from pytest_lens.datasets import DatasetError, load_dataset
    from pytest_lens.datasets.bundled import bundled_dataset_paths, bundled_suite_paths
    from pytest_lens.suites import SELECTABLE

    print("bundled datasets:")
    suite_paths = [path for suite in SELECTABLE if suite != "lens" for path in bundled_suite_paths(suite)]
    for path in [*bundled_dataset_paths(), *suite_paths]:
        try:
            loaded = load_dataset(path)
        except DatasetError as exc:
            print(f"  {path.name}: INVALID ({len(exc.issues)} issues)")
            continue
        for scope in loaded.scopes:
            print(f"  {scope.scope_id:<32} {len(scope.stream):>6} episodes {len(scope.questions):>4} questions  ({path.name})")
    print("registered adapters:")
    for name, target in sorted(registered_adapters().items()):
        print(f"  {name:<20} {target}")
    print("interface adapters (--lens-adapter=SCHEME:...):")
    for name, target in sorted(registered_schemes().items()):
        print(f"  {name + ':':<20} {target}")
    return 0


def add_validate(sub: Subparsers) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "validate", help="check LENS dataset files (and NAME.labels.json label files) and report defects by file and field"
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="dataset file or directory, or a NAME.labels.json labels file")
    parser.add_argument("--strict", action="store_true", help="exit non-zero on warnings too")
    return parser


def run_validate(args: argparse.Namespace) -> int:
    from pytest_lens.datasets import DatasetError, Severity, load_dataset
    from pytest_lens.datasets.labels import LABELS_SUFFIX, is_labels_file
    from pytest_lens.datasets.loader import expand_dataset_paths

    status = 0
    try:
        files = expand_dataset_paths(args.paths)
    except DatasetError as exc:
        print(exc)
        return 2
    for path in files:
        if is_labels_file(path) and path.is_file():
            status = max(status, _validate_labels(path, strict=args.strict))
            continue
        try:
            loaded = load_dataset(path)
        except DatasetError as exc:
            status = 1
            print(f"{path}: INVALID")
            for issue in exc.issues:
                print(f"  error   {_located(issue, path)}: {issue.message} [{issue.code}]")
            if any(issue.code == "not_a_dataset" and "labels file" not in issue.message for issue in exc.issues):
                print(f"  (lens validate also checks labels files, named NAME{LABELS_SUFFIX} beside the dataset NAME.json)")
            continue
        warnings = [issue for issue in loaded.issues if issue.severity is Severity.WARNING]
        scopes = ", ".join(f"{s.scope_id} ({len(s.stream)} episodes, {len(s.questions)} questions)" for s in loaded.scopes)
        print(f"{path}: {'ok' if not warnings else f'{len(warnings)} warning(s)'} - {scopes}")
        for issue in warnings:
            print(f"  warning {_located(issue, path)}: {issue.message} [{issue.code}]")
        if warnings and args.strict:
            status = 1
    return status


def _validate_labels(path: Path, *, strict: bool) -> int:
    """Check a ``NAME.labels.json`` sidecar: its own schema, then its episode ids against ``NAME.json`` beside it."""
    from pytest_lens.datasets import DatasetError, load_dataset
    from pytest_lens.datasets.labels import LabelsError, dataset_path, read_labels

    try:
        labels = read_labels(path)
    except LabelsError as exc:
        print(f"{path}: INVALID labels file")
        print(f"  error   {exc.field}: {exc.detail} [labels]")
        return 1
    signal = sum(labels.values())
    counts = f"{len(labels)} episode(s) labelled ({signal} signal, {len(labels) - signal} distractor)"
    warnings = [("episodes", "labels no episode", "labels_empty")] if not labels else []
    dataset = dataset_path(path)
    if not dataset.is_file():
        checked = f"no {dataset.name} beside it, episode ids not checked"
    else:
        try:
            loaded = load_dataset(dataset)  # reads this sidecar too, and warns about ids its dataset lacks
        except DatasetError:
            checked = "episode ids not checked"
            problem = f"{dataset.name} beside it is not a valid dataset (lens validate {dataset} says why)"
            warnings.append(("-", problem, "labels_dataset_invalid"))
        else:
            known = {episode.episode_id for scope in loaded.dataset.scopes for episode in scope.episodes}
            checked = f"{len(known & set(labels))} of the {len(known)} episodes of {dataset.name}"
            warnings.extend((issue.field, issue.message, issue.code) for issue in loaded.issues if issue.path == str(path))
    print(f"{path}: {'ok' if not warnings else f'{len(warnings)} warning(s)'} - labels file: {counts}; {checked}")
    for field, message, code in warnings:
        print(f"  warning {field}: {message} [{code}]")
    return 1 if warnings and strict else 0


def _located(issue: DatasetIssue, path: Path) -> str:
    """The issue's field, after its file when that is not ``path`` itself (a file inside a scope directory)."""
    if issue.path == str(path):
        return issue.field
    where = Path(issue.path)
    shown = where.relative_to(path) if where.is_relative_to(path) else where
    return f"{shown}: {issue.field}"


Command = tuple[Callable[[Subparsers], argparse.ArgumentParser], Callable[[argparse.Namespace], int]]

#: Subcommands in help order.
COMMANDS: dict[str, Command] = {
    "list": (add_list, run_list),
    "validate": (add_validate, run_validate),
    "import": (add_import, run_import),
    "generate-suite": (add_generate_suite, run_generate_suite),
    "compare": (add_compare, run_compare),
    "power": (add_power, run_power),
    "generate": (add_generate, run_generate),
    "show": (add_show, run_show),
    "report": (add_report, run_report),
    "merge": (add_merge, run_merge),
    "bundle": (add_bundle, run_bundle),
    "reproduce": (add_reproduce, run_reproduce),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lens`` console script."""
    parser = argparse.ArgumentParser(prog="lens", description="pytest-lens: LENS memory benchmark tools")
    sub = parser.add_subparsers(dest="command", required=True)
    for add, run in COMMANDS.values():
        add(sub).set_defaults(run=run)
    args = parser.parse_args(argv)
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
