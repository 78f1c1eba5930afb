"""``lens bundle RUN --out NAME.lens.tar.gz`` and ``lens reproduce NAME.lens.tar.gz``: a number anyone can check.

``lens bundle`` packs a run with everything needed to re-derive it offline (:mod:`pytest_lens.runs.bundle`), signed
with ``--sign KEY`` when asked (:mod:`pytest_lens.runs.signing`). ``lens reproduce`` checks every member, runs the
same questions again offline and compares (:mod:`pytest_lens.runs.reproduce`): exit 0 when every question, summary,
statistic and the verdict came out bit for bit the same, 1 when they did not (the first differences are printed),
2 when the bundle cannot be used (a member changed since it was bundled, a bad signature, an adapter not installed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["add_bundle", "add_reproduce", "run_bundle", "run_reproduce"]


def add_bundle(sub: Any) -> argparse.ArgumentParser:
    """Register the ``bundle`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "bundle",
        help="pack a run with its data, the LLM replies it used and its settings, for lens reproduce",
        description="Write RUN as one .lens.tar.gz: the artifact, the dataset files, the cached LLM requests and replies the "
        "run used (only those), its baseline, the adapter spec and options, the versions and models, and a manifest of "
        "SHA-256 digests of every member. Secrets are never bundled: a member holding one is refused.",
    )
    parser.add_argument("artifact", metavar="RUN", help="run artifact (--lens-json) or saved-run name")
    parser.add_argument("--out", type=Path, required=True, metavar="NAME.lens.tar.gz", help="where to write the bundle")
    parser.add_argument("--cache", type=Path, default=None, help="the run's LLM request cache (default: the path its settings name)")
    parser.add_argument("--baseline", type=Path, default=None, help="its --lens-baseline artifact (default: where the run found it)")
    parser.add_argument("--sign", type=Path, default=None, metavar="KEY", help="sign the manifest with this SSH key (ssh-keygen -Y sign)")
    parser.add_argument("--storage", type=Path, default=Path(".lens"), help="directory of saved runs (default: .lens)")
    parser.add_argument("--rootdir", type=Path, default=Path.cwd(), help="the directory the run ran in (default: here)")
    return parser


def run_bundle(args: argparse.Namespace) -> int:
    """Write the bundle; 0, or 2 when it cannot be made."""
    from pytest_lens.runs.bundle import BundleError, bundle_run, member_digest
    from pytest_lens.runs.signing import SigningError, sign
    from pytest_lens.runs.storage import RunStore, SavedRunError, resolve_run, write_whole

    try:
        path, _ = resolve_run(args.artifact, RunStore(args.storage), (Path.cwd(),))
        bundle = bundle_run(path, cache_path=args.cache, baseline_path=args.baseline, rootdir=args.rootdir)
        signature = sign(bundle.manifest_bytes(), args.sign) if args.sign is not None else None
        data = bundle.tar_bytes(signature)
        write_whole(args.out, data)
    except (BundleError, SigningError, SavedRunError, OSError) as exc:
        print(f"lens bundle: {exc}", file=sys.stderr)
        return 2
    names = list(bundle.members)
    data_files = sum(1 for name in names if name.startswith("data/"))
    replies = sum(1 for name in names if name.startswith("llm/"))
    print(
        f"wrote {args.out} ({len(data) / 1e6:.1f} MB, {len(names)} members: the run's {bundle.manifest['run']['results']} results, "
        f"{data_files} dataset file(s), {replies} LLM request(s) with their replies, settings, environment)"
    )
    digest = member_digest(bundle.manifest_bytes())
    print(f"MANIFEST.json sha256 {digest}" + (f"; signed with {args.sign}" if signature else ""))
    for note in bundle.notes:
        print(f"note: {note}")
    print(f"reproduce it: lens reproduce {args.out.name}")
    return 0


def add_reproduce(sub: Any) -> argparse.ArgumentParser:
    """Register the ``reproduce`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "reproduce",
        help="check a bundle, run its questions again offline, and compare every score with the bundled run",
        description="Check every member of BUNDLE against its manifest (and the signature, with --signer), run the same "
        "questions again offline with the named adapter (installed here), answering every LLM request from the bundle "
        "only, and compare every per-question score, the summaries, the statistics and the verdict. Exit 0: reproduced "
        "bit for bit; 1: differences (the first are printed); 2: the bundle cannot be used.",
    )
    parser.add_argument("bundle", type=Path, metavar="BUNDLE", help="a .lens.tar.gz written by lens bundle")
    parser.add_argument("--signer", default=None, metavar="KEY.pub", help="require the bundle signed by this SSH public key")
    parser.add_argument(
        "--rootdir", type=Path, default=Path.cwd(), help="where module:Class adapters are looked for (default: here)"
    )
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR", help="keep the bundle's files and the new artifact in DIR")
    parser.add_argument("--check-only", action="store_true", help="check the digests (and signature) only; run nothing")
    return parser


def run_reproduce(args: argparse.Namespace) -> int:
    """Check, run again and compare; 0, 1 or 2."""
    from pytest_lens.runs.bundle import BundleError

    if args.keep is not None:  # absolute: the run set up again resolves its paths against --rootdir, not here
        args.keep.mkdir(parents=True, exist_ok=True)
        return _reproduce(args, args.keep.resolve())
    try:
        with tempfile.TemporaryDirectory(prefix="lens-reproduce-") as tmp:
            return _reproduce(args, Path(tmp))
    except BundleError as exc:  # pragma: no cover - _reproduce reports its own
        print(f"lens reproduce: {exc}", file=sys.stderr)
        return 2


def _reproduce(args: argparse.Namespace, workdir: Path) -> int:
    from pytest_lens.runs.bundle import BundleError
    from pytest_lens.runs.reproduce import compare_runs, open_bundle, run_again

    try:
        opened = open_bundle(args.bundle, workdir / "bundle", signer=args.signer)
    except BundleError as exc:
        print(f"lens reproduce: {exc}", file=sys.stderr)
        return 2
    members = len(opened.manifest["members"])
    print(f"{args.bundle}: {members} members, each matching its SHA-256 in MANIFEST.json")
    if opened.signature is not None:
        print(f"signature: {opened.signature}")
    bundled = opened.artifact
    for line in _environment_notes(opened.root):
        print(line)
    if args.check_only:
        return 0
    print(f"running {len(bundled.results)} questions again, offline, with {_adapters(bundled)} (LLM replies from the bundle only) ...")
    try:
        reproduced, replies = run_again(opened, workdir, rootdir=args.rootdir.resolve(), progress=_progress())
    except BundleError as exc:
        print(f"lens reproduce: {exc}", file=sys.stderr)
        return 2
    differences, differing = compare_runs(bundled, reproduced)
    total = len(bundled.results)
    if not differences:
        print(f"reproduced {total} of {total} questions bit for bit; summaries, statistics and verdict identical")
        print(
            "  (compared: every field of every result but wall-clock times, LLM request counts by cache outcome and adapter "
            f"counters; {replies} LLM replies served from the bundle)"
        )
        return 0
    print(f"NOT reproduced: {total - differing} of {total} questions bit for bit; first differences:")
    for line in differences:
        print(f"  {line}")
    if args.keep is not None:
        print(f"  (the run made again: {workdir / 'reproduced.json'})")
    return 1


def _progress() -> Any:
    """Ingestion progress lines on stderr (a scope's first line, then one every 10 s while it goes on)."""
    from pytest_lens.progress import Progress

    return Progress(lambda line: print(line, file=sys.stderr, flush=True), interval_s=10.0)


def _adapters(artifact: Any) -> str:
    adapters = [f"{a.get('label')} ({a.get('target')})" for a in artifact.run.adapters or [] if "control" not in a]
    return ", ".join(adapters) or "its adapters"


def _environment_notes(root: Path) -> list[str]:
    """Where this environment differs from the one that ran the bundled run (what to install to match it)."""
    import json
    from importlib.metadata import PackageNotFoundError, version

    try:
        environment = json.loads((root / "environment.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    notes = []
    for name, wanted in sorted((environment.get("distributions") or {}).items()):
        if name.lower() not in {"pytest-lens", "pytest", "numpy", "scipy", "torch", "sentence-transformers", "transformers", "openai"}:
            continue
        try:
            here = version(name)
        except PackageNotFoundError:
            here = "not installed"
        if here != wanted:
            notes.append(f"environment: {name} {here} here, {wanted} in the bundled run")
    return notes
