"""``lens bundle``: one run and everything needed to re-derive its numbers offline, in one ``NAME.lens.tar.gz``.

The members, each listed in ``MANIFEST.json`` with its SHA-256 and size (``lens reproduce`` checks every one):

- ``run/artifact.json`` and ``run/NAME.rows.jsonl``: the run document and its per-question rows, byte for byte as the
  run wrote them;
- ``run/baseline/NAME.json`` (and its rows): the ``--lens-baseline`` run it was compared with, if any;
- ``run/settings.json``: the settings the run is set up again with (its datasets pointing into the bundle, its LLM
  requests answered from the bundle's replies only);
- ``data/NN/NAME``: each dataset file (or scope directory) the run loaded, byte for byte, with its labels sidecar;
- ``llm/KEY.json``: each LLM request the run's questions made (``QuestionResult.llm_requests``) with its cached reply,
  and nothing else from the cache;
- ``environment.json``: pytest-lens, Python and the platform, each adapter's spec, options and distribution, the
  models and the endpoint (secrets masked), and every installed distribution's version;
- ``README.txt``: how to reproduce it.

No secret enters a bundle. Settings, options and endpoints were masked when the run recorded them
(:mod:`pytest_lens.llm.api_keys`); before anything is written every member is read again through the same masking,
with the API keys of this process's environment known to it: a member holding a secret is refused, naming the member
and the line (the secret itself masked). Dataset text is carried byte for byte, as the run read it: a public dataset
may hold text that reads like a credential (LoCoMo's image links carry ``?token=``), which is reported, not refused,
and may appear in the other members only where it quotes that data. A key of this environment is refused anywhere.
"""

from __future__ import annotations

import difflib
import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_lens import __version__
from pytest_lens.llm.api_keys import KNOWN_KEY_ENVS, MASK, holds_known_secret, mask_data, mask_secrets, read_api_key
from pytest_lens.records.results import RunArtifact

__all__ = [
    "ARTIFACT",
    "BASELINE_DIR",
    "BUNDLE_FORMAT",
    "BUNDLE_VERSION",
    "MANIFEST",
    "SETTINGS",
    "SIGNATURE",
    "Bundle",
    "BundleError",
    "bundle_run",
    "member_digest",
    "secret_lines",
]

BUNDLE_FORMAT = "pytest-lens run bundle"
BUNDLE_VERSION = 1
MANIFEST = "MANIFEST.json"
SIGNATURE = "MANIFEST.json.sig"
ARTIFACT = "run/artifact.json"
BASELINE_DIR = "run/baseline"
SETTINGS = "run/settings.json"
ENVIRONMENT = "environment.json"
README = "README.txt"
#: Where the rebuilt request cache goes, relative to the directory a bundle is reproduced in.
CACHE_FILE = "llm-cache.sqlite"

_README = """\
A pytest-lens run bundle: a run and everything needed to re-derive its numbers offline.

    pip install pytest-lens   # the version in environment.json, and the adapter's distribution
    lens reproduce {name}

checks the SHA-256 of every member against MANIFEST.json (and its signature, with --signer KEY.pub), then runs the
same questions again with the same adapter, offline: every LLM request is answered from llm/ and only from there.
It compares every per-question score, the summaries, the statistics and the verdict with run/artifact.json.
"""


class BundleError(ValueError):
    """The bundle cannot be made or used; the message names the member, file or option at fault."""


@dataclass
class Bundle:
    """A bundle's members by name, its manifest, and what its author should know (notes)."""

    members: dict[str, bytes]
    manifest: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def manifest_bytes(self) -> bytes:
        """``MANIFEST.json`` as it is written (and signed)."""
        return (json.dumps(self.manifest, indent=1, sort_keys=True) + "\n").encode("utf-8")

    def tar_bytes(self, signature: bytes | None = None) -> bytes:
        """The ``.tar.gz``: members sorted, times fixed to the run's, no owner: the same run bundles to the same bytes."""
        when = _timestamp(str(self.manifest.get("run", {}).get("created", "")))
        files = {MANIFEST: self.manifest_bytes(), **({SIGNATURE: signature} if signature is not None else {}), **self.members}
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(files):
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(files[name]), when, 0o644
                tar.addfile(info, io.BytesIO(files[name]))
        packed = io.BytesIO()
        with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0) as gz:
            gz.write(raw.getvalue())
        return packed.getvalue()


def _timestamp(created: str) -> int:
    try:
        return int(datetime.fromisoformat(created).timestamp())
    except ValueError:
        return 0


def member_digest(data: bytes) -> str:
    """A member's SHA-256 as ``MANIFEST.json`` lists it (hex): what ``lens bundle`` writes and ``lens reproduce`` checks."""
    return hashlib.sha256(data).hexdigest()


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def bundle_run(
    artifact_path: Path, *, cache_path: Path | None = None, baseline_path: Path | None = None, rootdir: Path | None = None
) -> Bundle:
    """Everything ``lens reproduce`` needs to run ``artifact_path``'s questions again, checked and scanned for secrets.

    ``cache_path``: the LLM request cache the run used (default: the one its settings name, under ``rootdir``);
    ``baseline_path``: its ``--lens-baseline`` run (default: where the run found it). :class:`BundleError` says what is
    missing, changed since the run, or would leak a secret.
    """
    from pytest_lens.runs.storage import SavedRunError, load_run

    rootdir = (rootdir or Path.cwd()).resolve()
    try:
        artifact = load_run(artifact_path)
    except SavedRunError as exc:
        raise BundleError(str(exc)) from None
    settings = _bundleable(artifact, artifact_path)
    _remember_keys(artifact)
    members: dict[str, bytes] = {ARTIFACT: artifact_path.read_bytes()}
    if artifact.rows is not None:  # the per-question rows, under the name the document gives them
        members[f"run/{artifact.rows.file}"] = (artifact_path.parent / artifact.rows.file).read_bytes()
    data_members, datasets = _data(artifact, settings, rootdir)
    members.update(data_members)
    replies, without_reply = _replies(artifact, settings, cache_path, rootdir)
    members.update(replies)
    baseline = _baseline(artifact, baseline_path, rootdir)
    members.update(baseline)
    reference = next((name for name in baseline if not name.endswith(".rows.jsonl")), None)
    members[SETTINGS] = _json(_reproduction_settings(settings, datasets, reference))
    members[ENVIRONMENT] = _json(_environment(artifact))
    name = artifact_path.name.removesuffix(".json") + ".lens.tar.gz"
    members[README] = _README.format(name=name).encode("utf-8")
    notes = _scan(members)
    warm = sum(result.adapter_stats.get("embed_cache_hits", 0) for result in artifact.results)
    if warm:
        notes.append(
            f"the run took {warm} embedding(s) from a warm cache; lens reproduce computes every vector afresh, and a vector "
            "computed in another batch may differ in its last bits: for a bundle that reproduces bit for bit, run it with "
            "LENS_CACHE_DIR pointing to an empty directory"
        )
    if without_reply:
        notes.append(
            f"{len(without_reply)} LLM request(s) of the run have no reply in the cache (they failed during the run): a reproduction "
            "fails them again"
        )
    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "pytest_lens": __version__,
        "run": {
            "created": artifact.created,
            "pytest_lens": artifact.pytest_lens_version,
            "results": len(artifact.results),
            "adapters": [a.get("label") for a in artifact.run.adapters or []],
            "card": artifact.card.model_dump(mode="json"),
        },
        "llm_requests": {"bundled": sum(1 for m in members if m.startswith("llm/")), "without_reply": without_reply},
        "members": {name: {"sha256": member_digest(data), "bytes": len(data)} for name, data in sorted(members.items())},
    }
    return Bundle(members, manifest, notes)


def _bundleable(artifact: RunArtifact, path: Path) -> dict[str, Any]:
    """The run's recorded settings; :class:`BundleError` when the run cannot be set up again from its artifact."""
    if artifact.run.settings is None:
        raise BundleError(f"{path}: the run recorded no settings (written by pytest-lens before 0.2): run it again to bundle it")
    if artifact.run.shard is not None:
        raise BundleError(f"{path} is one shard of a run: bundle the merged run (lens merge ... --out RUN.json)")
    if artifact.pending is not None:
        raise BundleError(f"{path} is the copy written before the run's statistics and verdict: the run did not finish")
    if not artifact.results:
        raise BundleError(f"{path}: the run has no result to reproduce")
    if artifact.incomplete:
        raise BundleError(f"{path}: the run is incomplete ({artifact.incomplete[0]}): bundle a run that ran to the end")
    return dict(artifact.run.settings)


def _remember_keys(artifact: RunArtifact) -> None:
    """Make the API keys of this environment known to the masking, so that the scan finds them wherever they are."""
    llm = artifact.run.llm or {}
    names = [str(llm["api_key_env"])] if llm.get("api_key_env") else []
    for name in [*names, *KNOWN_KEY_ENVS]:
        read_api_key(name)


def _data(artifact: RunArtifact, settings: Mapping[str, Any], rootdir: Path) -> tuple[dict[str, bytes], list[str]]:
    """``data/NN/...`` members of every dataset the run loaded (checked unchanged), and the settings' dataset entries."""
    from pytest_lens.datasets.importers import split_format
    from pytest_lens.datasets.labels import labels_path
    from pytest_lens.datasets.loader import DatasetError, load_dataset

    formats = {}
    for entry in settings.get("datasets") or []:
        fmt, path = split_format(str(entry))
        if fmt is not None:
            formats[path if path.is_absolute() else rootdir / path] = fmt
    members: dict[str, bytes] = {}
    entries: list[str] = []
    for index, recorded in enumerate(artifact.run.datasets or []):
        source = Path(str(recorded.get("path", "")))
        if not source.exists():
            raise BundleError(f"dataset {source}, which the run loaded, is not there: bundle the run where it ran, with its data")
        try:
            found = load_dataset(source).sha256
        except DatasetError as exc:
            raise BundleError(f"dataset {source} cannot be read now: {exc.issues[0] if exc.issues else exc}") from None
        if found != recorded.get("sha256"):
            raise BundleError(f"dataset {source} changed since the run (sha256 {found[:12]}, the run's {str(recorded.get('sha256'))[:12]})")
        base = f"data/{index:02d}"
        files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source, labels_path(source)]
        for file in files:
            if file.is_file():
                inside = file.relative_to(source.parent).as_posix()
                members[f"{base}/{inside}"] = file.read_bytes()
        fmt = next((f for p, f in formats.items() if p == source or p in source.parents), None)
        entries.append(f"{fmt}:{base}/{source.name}" if fmt else f"{base}/{source.name}")
    return members, entries


def _replies(
    artifact: RunArtifact, settings: Mapping[str, Any], cache_path: Path | None, rootdir: Path
) -> tuple[dict[str, bytes], list[str]]:
    """``llm/KEY.json`` for every request a result names, and the keys the cache holds no reply for."""
    keys = sorted({key for result in artifact.results for key in result.llm_requests or ()})
    if not keys:
        return {}, []
    from pytest_lens.llm.cache import RequestCache
    from pytest_lens.llm.errors import LLMCacheError

    recorded = Path(str((settings.get("llm") or {}).get("cache_path") or ".lens/llm-cache.sqlite"))
    path = cache_path or (recorded if recorded.is_absolute() else rootdir / recorded)
    if not path.is_file():
        raise BundleError(
            f"the run made {len(keys)} LLM request(s) and its request cache {path} is not there: run lens bundle in the "
            "directory the run ran in (or pass --rootdir DIR), or give the cache with --cache PATH"
        )
    cache = RequestCache(path, "replay")
    try:
        entries = {entry.key: entry for entry in cache.entries(keys)}
    except LLMCacheError as exc:
        raise BundleError(str(exc)) from None
    finally:
        cache.close()
    members = {
        f"llm/{key}.json": _json(
            {"key": key, "purpose": entry.purpose, "model": entry.model, "request": entry.request, "response": entry.response}
        )
        for key, entry in entries.items()
    }
    return members, [key for key in keys if key not in entries]


def _baseline(artifact: RunArtifact, given: Path | None, rootdir: Path) -> dict[str, bytes]:
    """``run/baseline/NAME`` (and its rows): the ``--lens-baseline`` run, checked to be the one the run was compared with."""
    info = artifact.comparison.baseline if artifact.comparison is not None else None
    if info is None:
        info = next((c.baseline for c in artifact.suite_comparisons.values()), None)
    if info is None:
        return {}
    from pytest_lens.runs.storage import SavedRunError, load_run

    recorded = Path(info.path)
    path = given or (recorded if recorded.is_absolute() else rootdir / recorded)
    try:
        baseline = load_run(path)
    except SavedRunError as exc:
        raise BundleError(f"the run was compared with baseline {info.name} ({info.path}): {exc}; give it with --baseline PATH") from None
    if baseline.created != info.created:
        raise BundleError(
            f"{path} is not the baseline the run was compared with ({info.name}, saved {info.created}; this one {baseline.created})"
        )
    found = {f"{BASELINE_DIR}/{path.name}": path.read_bytes()}
    if baseline.rows is not None:
        found[f"{BASELINE_DIR}/{baseline.rows.file}"] = (path.parent / baseline.rows.file).read_bytes()
    return found


def _reproduction_settings(settings: Mapping[str, Any], datasets: list[str], baseline: str | None) -> dict[str, Any]:
    """The run's settings, its files pointing into the bundle and its LLM requests answered from the bundle only."""
    found = dict(settings)
    found["datasets"] = datasets
    found["baseline"] = baseline
    found["storage"] = ".lens"
    llm = dict(found.get("llm") or {})
    llm["cache_path"] = CACHE_FILE
    llm["cache_mode"] = "replay"
    found["llm"] = llm
    return found


def _environment(artifact: RunArtifact) -> dict[str, Any]:
    """What the run ran with: versions, adapters, models and endpoint (masked), and every installed distribution."""
    import platform
    import sys
    from importlib.metadata import distributions

    from pytest_lens.llm.settings import display_url
    from pytest_lens.runs.slicing import adapter_versions

    adapters = [a for a in artifact.run.adapters or [] if "control" not in a]
    versions = adapter_versions({str(a.get("label")): str(a.get("target")) for a in adapters})
    llm = artifact.run.llm or {}
    installed = {dist.metadata["Name"]: dist.version for dist in distributions() if dist.metadata["Name"]}
    found: dict[str, Any] = mask_data(
        {
            "bundled_by": {"pytest_lens": __version__, "python": sys.version.split()[0], "platform": platform.platform()},
            "run": {"pytest_lens": artifact.pytest_lens_version, "python": artifact.run.python, "platform": artifact.run.platform},
            "adapters": [{**a, "distribution": versions.get(str(a.get("label")))} for a in adapters],
            "models": {
                "agent": llm.get("agent_model"),
                "judge": llm.get("judge_model"),
                "endpoint": display_url(llm["base_url"]) if llm.get("base_url") else None,
                "card": {"agent": artifact.card.agent, "judge": artifact.card.judge},
            },
            "distributions": dict(sorted(installed.items(), key=lambda item: item[0].lower())),
        }
    )
    return found


def secret_lines(text: str) -> list[tuple[int, str, list[str]]]:
    """Where ``text`` holds what the masking takes for a secret: ``(line number, the line masked, the secrets)``."""
    masked = mask_secrets(text)
    if masked == text:
        return []
    found = []
    for number, (line, hidden) in enumerate(zip(text.splitlines(), masked.splitlines(), strict=False), start=1):
        if line != hidden:
            removed = [
                line[i1:i2]
                for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, line, hidden, autojunk=False).get_opcodes()
                if tag in ("replace", "delete") and any(character.isalnum() for character in line[i1:i2])
            ]
            if removed:  # masking an already masked value again takes its punctuation along: no secret there
                found.append((number, hidden, removed))
    return found


def _scan(members: Mapping[str, bytes]) -> list[str]:
    """Notes on dataset text that reads like a credential; :class:`BundleError` for a secret anywhere else."""
    data = {name: body.decode("utf-8", errors="replace") for name, body in members.items() if name.startswith("data/")}
    notes = []
    for name, body in sorted(members.items()):
        text = body.decode("utf-8", errors="replace")
        if holds_known_secret(text):  # a key of this process: refused wherever it is
            raise BundleError(f"bundle member {name} holds an API key of this environment: not bundled")
        for number, hidden, secrets in secret_lines(text):
            shown = _excerpt(hidden)
            if name in data:
                notes.append(f"{name} line {number} reads like a credential ({shown}): dataset text, bundled as the run read it")
            elif not all(any(secret in body_text for body_text in data.values()) for secret in secrets):
                raise BundleError(f"bundle member {name} line {number} holds what reads as a secret ({shown}): not bundled")
    return notes


def _excerpt(hidden: str) -> str:
    at = max(hidden.find(MASK), 0)
    start = max(at - 40, 0)
    return ("..." if start else "") + hidden[start : at + 20].strip() + "..."

