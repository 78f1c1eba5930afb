"""``lens import FORMAT PATH --out FILE`` and ``lens generate-suite SUITE --out FILE``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_lens.datasets.importers import FORMATS

if TYPE_CHECKING:
    from pytest_lens.datasets.models import Dataset

__all__ = ["LENS_DIR", "add_generate_suite", "add_import", "run_generate_suite", "run_import"]

#: ``lens import lens-dir PATH``: LENS scope directories (the reference's V2 layout), read by :mod:`pytest_lens.datasets.scope_dir`.
LENS_DIR = "lens-dir"


def add_import(sub: Any) -> argparse.ArgumentParser:
    """Register ``lens import``."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "import",
        help="convert a LoCoMo, LongMemEval, MEME or MemoryAgentBench file, or LENS scope directories, into a LENS-format dataset",
    )
    parser.add_argument("format", choices=sorted([*FORMATS, LENS_DIR]), help="the source format")
    parser.add_argument(
        "path",
        type=Path,
        metavar="PATH",
        help="the file to import (.json; .jsonl or .parquet for MemoryAgentBench rows); lens-dir: a scope directory or a directory of them",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="where to write the LENS-format JSON")
    parser.add_argument("--chunk-tokens", type=int, default=None, metavar="N", help="mab: chunk size in tokens (default per source)")
    return parser


def run_import(args: argparse.Namespace) -> int:
    """Import, validate, report and write."""
    from pytest_lens.datasets.importers import ImportFormatError, import_document, parse_document
    from pytest_lens.datasets.importers.mab import import_mab
    from pytest_lens.datasets.json_document import read_input
    from pytest_lens.datasets.validator import Severity, validate_dataset
    from pytest_lens.suites.dump import dump_dataset

    dataset: Dataset | None
    if args.format == LENS_DIR:
        dataset = _scope_directories(args.path)
        if dataset is None:
            return 2
    else:
        try:
            document = parse_document(read_input(args.path), args.path)
        except (OSError, ValueError) as exc:
            print(f"{args.path}: cannot read: {exc}")
            return 2
        try:
            if args.format == "mab" and args.chunk_tokens:
                dataset = import_mab(document, str(args.path), chunk_tokens=args.chunk_tokens)
            else:
                dataset = import_document(args.format, document, str(args.path))
        except (ImportFormatError, ValueError) as exc:
            print(f"{args.path}: not a valid {args.format} file: {exc}")
            return 2
    issues = validate_dataset(dataset, str(args.out))
    errors = [issue for issue in issues if issue.severity is Severity.ERROR]
    episodes = sum(len(scope.episodes) for scope in dataset.scopes)
    print(f"{args.path}: {len(dataset.scopes)} scopes, {episodes} episodes, {len(dataset.questions)} questions (suite {dataset.suite})")
    for issue in issues:
        print(f"  {issue.severity.value:<7} {issue.field}: {issue.message} [{issue.code}]")
    if errors:
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump_dataset(dataset), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


def _scope_directories(path: Path) -> Dataset | None:
    """Every scope directory at ``path`` as one dataset (their defects printed), or ``None`` after saying why not."""
    from pytest_lens.datasets.models import Dataset, Question, Scope
    from pytest_lens.datasets.scope_dir import ScopeDirectoryError, find_scope_dirs, read_scope_dir

    found = find_scope_dirs(path) if path.is_dir() else []
    if not found:
        print(f"{path}: not a LENS scope directory (spec.yaml + generated/) and holds none")
        return None
    scopes: list[Scope] = []
    questions: list[Question] = []
    failed = False
    for directory in found:
        try:
            read = read_scope_dir(directory)
        except ScopeDirectoryError as exc:
            failed = True
            print(f"{directory}: INVALID")
            for issue in exc.issues:
                print(f"  error   {issue.path}: {issue.field}: {issue.message} [{issue.code}]")
            continue
        for issue in read.issues:
            print(f"  warning {issue.path}: {issue.field}: {issue.message} [{issue.code}]")
        scopes.extend(read.dataset.scopes)
        questions.extend(read.dataset.questions)
    return None if failed else Dataset(scopes=tuple(scopes), questions=tuple(questions))


def add_generate_suite(sub: Any) -> argparse.ArgumentParser:
    """Register ``lens generate-suite``."""
    parser: argparse.ArgumentParser = sub.add_parser("generate-suite", help="write seeded MEME or MemoryAgentBench scopes")
    parser.add_argument("suite", choices=("meme", "mab"))
    parser.add_argument("--seed", type=int, default=None, help="generator seed (default: the bundled data's)")
    parser.add_argument("--scale", type=int, default=None, metavar="N", help="meme: episodes per domain; mab: questions per competency")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE")
    return parser


def run_generate_suite(args: argparse.Namespace) -> int:
    """Generate and write."""
    from pytest_lens.suites.dump import dump_dataset

    dataset: Dataset
    if args.suite == "meme":
        from pytest_lens.suites.meme.generator import MemeConfig, generate_meme

        meme = MemeConfig()
        dataset = generate_meme(
            MemeConfig(seed=meme.seed if args.seed is None else args.seed, episodes_per_domain=args.scale or meme.episodes_per_domain)
        )
    else:
        from pytest_lens.suites.mab.generator import MabConfig, generate_mab

        mab = MabConfig()
        dataset = generate_mab(
            MabConfig(
                seed=mab.seed if args.seed is None else args.seed, questions_per_competency=args.scale or mab.questions_per_competency
            )
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump_dataset(dataset), encoding="utf-8")
    print(f"wrote {args.out}: {len(dataset.scopes)} scopes, {len(dataset.questions)} questions (suite {dataset.suite})")
    return 0
