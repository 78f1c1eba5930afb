"""``lens reproduce``: check a bundle member by member, run its questions again offline, and compare with what it claims.

1. :func:`open_bundle` reads the ``.tar.gz`` without trusting it: regular files only, no path leaving the directory,
   every member's SHA-256 against ``MANIFEST.json``, and, given ``--signer``, the manifest's signature
   (:mod:`pytest_lens.runs.signing`). A member that does not match is named; nothing runs.
2. :func:`run_again` sets the run up again from the bundle's settings (its data, its adapter by spec, installed
   here: nothing is installed), rebuilds a request cache from the bundle's replies alone and answers from it in
   replay mode (a request it lacks fails, none reaches a network), and runs exactly the bundled run's questions, in
   one process, in case order, through the same core a pytest run uses.
3. :func:`compare_runs` compares every question's result, the summaries, the statistics, the baseline comparison,
   the sensitivity table and the verdict with the bundled artifact, leaving out only :data:`NOT_COMPARED`: what
   measures the clock or how a request was served (cache hit or miss), never what was measured.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_lens.records.results import RunArtifact
from pytest_lens.runs.bundle import ARTIFACT, BUNDLE_FORMAT, CACHE_FILE, MANIFEST, SETTINGS, SIGNATURE, BundleError, member_digest

__all__ = ["NOT_COMPARED", "OpenedBundle", "Reproduction", "compare_runs", "open_bundle", "run_again"]

#: Fields left out of the comparison, wherever they occur: wall-clock times (how long an answer or a call took, when a
#: run was made), LLM request counts by how they were served (a recording's misses are its replay's hits; the requests
#: themselves are compared, by their cache keys in ``llm_requests``), and adapters' own counters (``lens_stats``,
#: e.g. embedding-cache hits, which depend on what a machine's cache already held).
NOT_COMPARED = frozenset({"duration_s", "duration_ms", "queued_s", "created", "llm", "adapter_stats"})
#: The artifact's sections a reproduction must match (beside each question's result).
COMPARED_SECTIONS = (
    "summary",
    "suite_summaries",
    "statistics",
    "suite_statistics",
    "comparison",
    "suite_comparisons",
    "sensitivity",
    "repetitions",
    "judge_agreement",
    "verdict",
    "incomplete",
    "evidence",
)
#: How many differing questions the report names.
SHOWN_DIFFERENCES = 10


@dataclass
class OpenedBundle:
    """A bundle read into ``root``, every member checked against its manifest."""

    root: Path
    manifest: dict[str, Any]
    #: What the signature check said (``None``: the bundle is unsigned).
    signature: str | None

    @property
    def artifact(self) -> RunArtifact:
        """The run the bundle claims."""
        from pytest_lens.runs.storage import load_run

        return load_run(self.root / ARTIFACT)


def _members(tar: tarfile.TarFile) -> Iterator[tuple[str, tarfile.TarInfo]]:
    """Each member's name, refusing what a bundle never holds (links, devices, paths that leave the directory)."""
    seen: set[str] = set()
    for info in tar:
        name = PurePosixPath(info.name)
        if info.name in seen:
            raise BundleError(f"bundle member {info.name} appears twice")
        seen.add(info.name)
        if info.isdir():
            continue
        if not info.isfile() or name.is_absolute() or ".." in name.parts or not name.parts:
            raise BundleError(f"bundle member {info.name!r} is not a plain file inside the bundle: refused")
        yield info.name, info


def open_bundle(path: Path, into: Path, *, signer: str | None = None) -> OpenedBundle:
    """Read ``path`` into ``into``, checking every member's digest (and the signature, given ``signer``).

    :class:`BundleError` names each member that does not match the manifest (changed, missing or extra), and says
    when the signature is missing or not the signer's.
    """
    from pytest_lens.runs.signing import SigningError, signed_by, verify

    found: dict[str, str] = {}
    manifest_bytes = signature_bytes = None
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for name, info in _members(tar):
                source = tar.extractfile(info)
                if source is None:
                    raise BundleError(f"bundle member {name} cannot be read")
                data = source.read()
                if name == MANIFEST:
                    manifest_bytes = data
                elif name == SIGNATURE:
                    signature_bytes = data
                else:
                    target = into / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    found[name] = member_digest(data)
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise BundleError(f"{path}: not a readable .lens.tar.gz bundle ({exc})") from None
    manifest = _manifest(path, manifest_bytes)
    _check_digests(manifest, found, into)
    said = None
    if signer is not None:
        if signature_bytes is None:
            raise BundleError(f"{path} is not signed (no {SIGNATURE}): it cannot be checked against --signer {signer}")
        try:
            said = verify(manifest_bytes or b"", signature_bytes, signer)
        except SigningError as exc:
            raise BundleError(str(exc)) from None
    elif signature_bytes is not None:
        try:
            said = f"signed by {signed_by(manifest_bytes or b'', signature_bytes)}; not checked against a key you trust (--signer KEY.pub)"
        except SigningError as exc:
            raise BundleError(str(exc)) from None
    return OpenedBundle(into, manifest, said)


def _manifest(path: Path, data: bytes | None) -> dict[str, Any]:
    if data is None:
        raise BundleError(f"{path} has no {MANIFEST}: not a pytest-lens bundle")
    try:
        manifest = json.loads(data)
    except ValueError as exc:
        raise BundleError(f"{path}: {MANIFEST} is not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT or not isinstance(manifest.get("members"), dict):
        raise BundleError(f"{path}: {MANIFEST} is not a pytest-lens bundle's manifest")
    return manifest


def _check_digests(manifest: Mapping[str, Any], found: Mapping[str, str], root: Path) -> None:
    """:class:`BundleError` naming every member whose digest is not the manifest's, and every missing or extra one."""
    listed: dict[str, Any] = manifest["members"]
    problems = []
    for name in sorted(listed.keys() | found.keys()):
        expected = (listed.get(name) or {}).get("sha256") if isinstance(listed.get(name), dict) else None
        if name not in found:
            problems.append(f"{name}: listed in {MANIFEST} but not in the bundle")
        elif expected is None:
            problems.append(f"{name}: in the bundle but not listed in {MANIFEST}")
        elif found[name] != expected:
            problems.append(f"{name}{_what(root / name)}: sha256 {found[name][:16]} where {MANIFEST} says {str(expected)[:16]}")
    if problems:
        more = len(problems) - SHOWN_DIFFERENCES
        shown = "; ".join(problems[:SHOWN_DIFFERENCES]) + (f"; and {more} more" if more > 0 else "")
        raise BundleError(f"{len(problems)} bundle member(s) do not match the manifest (changed since it was bundled): {shown}")


def _what(path: Path) -> str:
    """`` (the agent reply to scripted)`` for an LLM reply member whose JSON still reads, else nothing."""
    if path.parent.name != "llm":
        return ""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        return f" (the {entry['purpose']} request to {entry['model']} and its reply)"
    except (ValueError, KeyError, TypeError, OSError):
        return " (an LLM request and its reply)"


def _rebuild_cache(root: Path, workdir: Path) -> int:
    """The bundle's replies as a request cache in ``workdir``; how many."""
    from pytest_lens.llm.cache import RequestCache

    cache = RequestCache(workdir / CACHE_FILE, "record")
    count = 0
    try:
        for member in sorted((root / "llm").glob("*.json")) if (root / "llm").is_dir() else []:
            entry = json.loads(member.read_text(encoding="utf-8"))
            cache.put(entry["key"], entry["request"], entry["response"], purpose=str(entry.get("purpose", "")))
            count += 1
    finally:
        cache.close()
    return count


@dataclass
class Reproduction:
    """The bundled run and the run made again, and where they differ."""

    bundled: RunArtifact
    reproduced: RunArtifact
    replies: int
    differences: list[str] = field(default_factory=list)
    questions_differing: int = 0


def run_again(opened: OpenedBundle, workdir: Path, *, rootdir: Path, progress: Any = None) -> tuple[RunArtifact, int]:
    """Run the bundled questions again offline in ``workdir``; the new artifact and how many replies the cache holds."""
    from pytest_lens.runs.fanin import ShardError, settings_from_record
    from pytest_lens.runs.session import LensConfigError, LensSession

    bundled = opened.artifact
    record = json.loads((opened.root / SETTINGS).read_text(encoding="utf-8"))
    replies = _rebuild_cache(opened.root, workdir)
    record["datasets"] = [_inside(opened.root, entry) for entry in record.get("datasets") or []]
    record["storage"] = str(workdir / ".lens")
    if record.get("baseline"):
        record["baseline"] = _place_baseline(opened.root / record["baseline"], bundled, workdir / ".lens")
    record["llm"] = {**(record.get("llm") or {}), "cache_path": str(workdir / CACHE_FILE), "cache_mode": "replay"}
    try:
        settings = settings_from_record(record, rootdir=rootdir, invocation_dir=rootdir, json_path=workdir / "reproduced.json")
        session = LensSession.open(settings)
    except (ShardError, LensConfigError) as exc:
        raise BundleError(f"the run cannot be set up again here: {exc}") from None
    wanted = {result.item_key for result in bundled.results}
    cases = [case for case in session.cases if case.item_key in wanted]
    if len(cases) != len(wanted):
        raise BundleError(f"{len(wanted) - len(cases)} of the bundled run's questions are not in its bundled data")
    session.expect(cases)
    session.plan(cases)
    with _offline(workdir):
        runtime = session.new_runtime(workdir / "storage")
        runtime.progress = progress
        try:
            for case in cases:
                session.record(session.run(case, runtime))
        finally:
            session.close_runtime(runtime)
        session.finish()
        session.close()
    return session.artifact(), replies


@contextmanager
def _offline(workdir: Path) -> Iterator[None]:
    """No model download (``HF_HUB_OFFLINE``), and an embedding cache of the reproduction's own, empty at the start.

    A vector is bit for bit the same in any process and with any number of threads when it is computed in the same
    batch, but not always in another batch (other texts, other padding): vectors this machine cached for other runs
    would make the reproduction depend on them. Computed afresh, in the run's own batches, they do not.
    """
    import os

    from pytest_lens.embedding.cache import CACHE_DIR_ENV

    wanted = {"HF_HUB_OFFLINE": "1", CACHE_DIR_ENV: str(workdir / "embeddings")}
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _place_baseline(bundled_baseline: Path, bundled: RunArtifact, storage: Path) -> str:
    """The ``--lens-baseline`` reference under which the bundled baseline is found by the name the run found it by.

    A saved run (``0001_main``) goes into the reproduction's run storage, a file (``main.json``) beside it, each with
    its rows: its comparison and gate lines then name it as the bundled run's do.
    """
    from pytest_lens.runs.storage import load_run

    info = bundled.comparison.baseline if bundled.comparison is not None else None
    info = info or next((c.baseline for c in bundled.suite_comparisons.values()), None)
    name = info.name if info is not None else bundled_baseline.name
    saved = not name.endswith(".json")
    target = storage / "bundle" / bundled_baseline.name if saved else storage.parent / "baselines" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bundled_baseline.read_bytes())
    rows = load_run(bundled_baseline).rows
    if rows is not None:
        (target.parent / rows.file).write_bytes((bundled_baseline.parent / rows.file).read_bytes())
    return name if saved else str(target)


def _inside(root: Path, entry: str) -> str:
    """A bundled dataset entry (``data/00/x.json``, ``locomo:data/00/x.json``) as a path under ``root``."""
    fmt, sep, rest = entry.rpartition(":") if not entry.startswith("data/") else ("", "", entry)
    return f"{fmt}{sep}{root / rest}"


def _plain(value: Any) -> Any:
    """``value`` without the :data:`NOT_COMPARED` fields, at any depth."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if key not in NOT_COMPARED}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _leaves(before: Any, after: Any, where: str) -> Iterator[str]:
    """``where.field: before -> after`` for each differing leaf (lists of different lengths, and long texts, whole)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys(), key=str):
            yield from _leaves(before.get(key), after.get(key), f"{where}.{key}" if where else str(key))
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (one, other) in enumerate(zip(before, after, strict=True)):
            yield from _leaves(one, other, f"{where}[{index}]")
    elif before != after:
        shown = [json.dumps(value)[:60] for value in (before, after)]
        yield f"{where}: {shown[0]} -> {shown[1]}"


def compare_runs(bundled: RunArtifact, reproduced: RunArtifact) -> tuple[list[str], int]:
    """The differences (question by question first, then each section), and how many questions differ."""
    again = {result.item_key: result for result in reproduced.results}
    differences: list[str] = []
    differing = 0
    for result in bundled.results:
        other = again.get(result.item_key)
        name = "/".join(map(str, result.item_key[:4])) + (f" (repetition {result.repetition})" if result.repetition else "")
        if other is None:
            found = ["no result when run again"]
        else:
            found = list(_leaves(_plain(result.model_dump(mode="json")), _plain(other.model_dump(mode="json")), ""))
        if found:
            differing += 1
            if differing <= SHOWN_DIFFERENCES:
                differences.append(f"question {name}: {'; '.join(found[:4])}{'; ...' if len(found) > 4 else ''}")
    ours, theirs = _located(bundled.model_dump(mode="json")), _located(reproduced.model_dump(mode="json"))
    for section in COMPARED_SECTIONS:
        found = list(_leaves(_plain(ours.get(section)), _plain(theirs.get(section)), section))
        differences.extend(found[:3])
    card = list(_leaves(ours["run"].get("card"), theirs["run"].get("card"), "run.card"))
    differences.extend(card[:3])
    warnings = [_named(line) for line in bundled.dataset_warnings], [_named(line) for line in reproduced.dataset_warnings]
    if warnings[0] != warnings[1]:
        differences.append("dataset_warnings: the data's defects differ")
    return differences, differing


def _located(artifact: dict[str, Any]) -> dict[str, Any]:
    """The artifact without where its baseline file was (a place on one machine, as dataset paths are)."""
    for comparison in [artifact.get("comparison"), *(artifact.get("suite_comparisons") or {}).values()]:
        if isinstance(comparison, dict) and isinstance(comparison.get("baseline"), dict):
            comparison["baseline"].pop("path", None)
    return artifact


def _named(line: str) -> str:
    """A dataset-defect line with its file's name, not its directory (the bundle's data lives elsewhere)."""
    path, sep, rest = line.partition(": ")
    return f"{PurePosixPath(path).name}{sep}{rest}" if sep else line
