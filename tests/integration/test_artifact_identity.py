"""A run's artifact stays what it was: start-up and statistics work may get faster, never different.

``tests/data/artifact_golden.json`` holds the ``--lens-json`` artifact of one fixed run (bm25 and
null on LENS scope 01, a bundled generated scope, and the bundled MEME and MemoryAgentBench
scopes: per-adapter CIs, paired tests, Kendall's W, the sibling suites' stratified intervals),
written by the code before the fixed-cost work of issue 19 (scipy's bootstrap; hypothesis in
every run). Timing fields, the creation time, the machine, the commit and absolute paths are
left out; every result is kept as a digest of its JSON (the file names the question that
changed), as is each scope's evidence (the episode texts the HTML report shows), everything
else verbatim.

A change that is *meant* to change results (a new metric, a new scorer) rewrites the file::

    python -m tests.integration.test_artifact_identity --update

and says so in its commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_lens.records.rows import read_artifact_json

REPO = Path(__file__).parents[2]
GOLDEN = REPO / "tests" / "data" / "artifact_golden.json"
DATA = REPO / "src" / "pytest_lens" / "datasets" / "data"
#: Fields that measure time or place, not results.
VOLATILE = {"created", "machine", "commit", "python", "platform", "duration_s", "duration_ms", "queued_s"}


def _lens_scope() -> Path:
    if "LENS_SHARED_DIR" in os.environ:
        return Path(os.environ["LENS_SHARED_DIR"]) / "datasets" / "lens" / "scope_01_with_distractors.json"
    for parent in REPO.parents:
        if (parent / "shared" / "datasets").is_dir():
            return parent / "shared" / "datasets" / "lens" / "scope_01_with_distractors.json"
    return REPO.parent / "shared" / "datasets" / "lens" / "scope_01_with_distractors.json"


def run_arguments(lens_scope: Path) -> list[str]:
    """The fixed run (two adapters, two LENS scopes, MEME and MemoryAgentBench)."""
    datasets = [lens_scope, DATA / "clinical_trial_s01.json", DATA / "meme" / "meme_default.json", DATA / "mab" / "mab_default.json"]
    return [
        "--lens-adapter=bm25",
        "--lens-adapter=null",
        *(f"--lens-dataset={path}" for path in datasets),
        "--lens-budget=16k",
        "--lens-json=artifact.json",
        "-q",
        "-p",
        "no:cacheprovider",
    ]


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _strip(item) for key, item in value.items() if key not in VOLATILE}
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return value


def normalise(artifact: dict[str, Any]) -> dict[str, Any]:
    """The artifact without timing and place; results as digests keyed by adapter/scope/question/budget."""
    document = _strip(artifact)
    for dataset in document["run"]["datasets"]:
        dataset["path"] = Path(dataset["path"]).name
    settings = document["run"].get("settings") or {}
    settings["datasets"] = [Path(path).name for path in settings.get("datasets", [])]
    document["dataset_warnings"] = [_relative_warning(line) for line in document["dataset_warnings"]]
    # The scopes' evidence (episode texts the report shows) is large and comes from the dataset files: one digest per scope.
    document["evidence"] = {scope: _digest(evidence) for scope, evidence in (document.get("evidence") or {}).items()}
    document["rows"].pop("sha256")  # a digest of the rows file, whose rows hold timing fields
    results = document.pop("results")
    document["results"] = {
        f"{r['adapter']}/{r['scope_id']}/{r['question_id']}/{r['budget']}": hashlib.sha256(
            json.dumps(r, sort_keys=True).encode()
        ).hexdigest()[:16]
        for r in results
    }
    return document


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _relative_warning(line: str) -> str:
    """A dataset defect line names its file; keep the file name, not where the checkout is."""
    path, sep, rest = line.partition(": ")
    return f"{Path(path).name}{sep}{rest}" if sep else line


def produce(workdir: Path, lens_scope: Path) -> dict[str, Any]:
    """Run the fixed run in ``workdir`` in a fresh process; its normalised artifact."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *run_arguments(lens_scope)], cwd=workdir, capture_output=True, text=True, check=False
    )
    # Exit 1: null fails the hard gate, as it should; anything else is a broken run.
    if proc.returncode != 1 or not (workdir / "artifact.json").exists():
        raise AssertionError(f"the fixed run failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return normalise(read_artifact_json(workdir / "artifact.json"))


def _differences(expected: Any, found: Any, where: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(found, dict):
        out = []
        for key in sorted(expected.keys() | found.keys()):
            if key not in found:
                out.append(f"{where}/{key}: missing")
            elif key not in expected:
                out.append(f"{where}/{key}: new")
            else:
                out.extend(_differences(expected[key], found[key], f"{where}/{key}"))
        return out
    if expected != found:
        return [f"{where}: {json.dumps(expected)[:200]} -> {json.dumps(found)[:200]}"]
    return []


def test_the_artifact_of_a_fixed_run_is_unchanged(tmp_path: Path, lens_scope_path: Path) -> None:
    found = produce(tmp_path, lens_scope_path)
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    differences = _differences(expected, found)
    assert not differences, (
        f"{len(differences)} difference(s) from {GOLDEN.name} (if intended, run "
        "`python -m tests.integration.test_artifact_identity --update` and say why in the commit):\n" + "\n".join(differences[:40])
    )


def test_the_comparison_sees_a_changed_result() -> None:
    """The check can fail: one changed interval bound, one changed answer."""
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    changed = json.loads(json.dumps(expected))
    changed["statistics"]["adapters"]["bm25"]["composite"]["low"] += 1e-6
    key = next(iter(changed["results"]))
    changed["results"][key] = "0" * 16
    assert _differences(expected, changed) == [
        f'/results/{key}: {json.dumps(expected["results"][key])} -> "{"0" * 16}"',
        "/statistics/adapters/bm25/composite/low: "
        f"{json.dumps(expected['statistics']['adapters']['bm25']['composite']['low'])} -> "
        f"{json.dumps(changed['statistics']['adapters']['bm25']['composite']['low'])}",
    ]


def main() -> None:
    if sys.argv[1:] != ["--update"]:
        raise SystemExit("usage: python -m tests.integration.test_artifact_identity --update")
    with tempfile.TemporaryDirectory() as workdir:
        document = produce(Path(workdir), _lens_scope())
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN} ({len(document['results'])} results)")


if __name__ == "__main__":
    main()
