"""Parallel runs with pytest-xdist give exactly the serial answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_lens.records.rows import read_artifact_json
from tests.support import assert_answered, small_dataset, write_dataset

NO_CACHE = ("-p", "no:cacheprovider")
TIMING_FIELDS = ("duration_s", "duration_ms", "queued_s", "created")


def comparable(artifact: dict[str, Any]) -> dict[str, Any]:
    """The artifact without wall-clock fields, which differ between any two runs."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMING_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    found: dict[str, Any] = strip(artifact)
    if isinstance(found.get("rows"), dict):  # the rows file's name follows the document's; its digest covers timings
        found["rows"] = {k: v for k, v in found["rows"].items() if k not in ("file", "sha256")}
    return found


@pytest.fixture(params=[(), ("-n", "0"), ("-n", "2")], ids=["no_xdist", "xdist_zero", "xdist_two"])
def plugin_args(request: pytest.FixtureRequest) -> tuple[str, ...]:
    args: tuple[str, ...] = request.param
    return args or ("-p", "no:xdist")


@pytest.fixture(scope="module")
def two_scopes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("two-scopes")
    write_dataset(directory / "a.json", small_dataset())
    write_dataset(directory / "b.json", json.loads(json.dumps(small_dataset()).replace('"s1"', '"s2"')))
    return directory


@pytest.fixture(scope="module")
def bundled_two() -> list[str]:
    """Two of the bundled generated scopes, as --lens-dataset arguments."""
    from pytest_lens.datasets.bundled import bundled_dataset_paths

    return [f"--lens-dataset={path}" for path in bundled_dataset_paths()[:2]]


@pytest.fixture(scope="module")
def serial_artifact(tmp_path_factory: pytest.TempPathFactory, bundled_two: list[str]) -> dict[str, Any]:
    """Reference: a serial run without xdist (computed once, in a subprocess of its own)."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("serial") / "serial.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:xdist",
        *NO_CACHE,
        "-q",
        "--lens-adapter=bm25",
        "--lens-adapter=null",
        *bundled_two,
        f"--lens-json={out}",
    ]
    subprocess.run(cmd, cwd=out.parent, capture_output=True, check=False)
    loaded: dict[str, Any] = read_artifact_json(out)
    return loaded


def test_parallel_artifacts_equal_the_serial_one(
    pytester: pytest.Pytester, plugin_args: tuple[str, ...], bundled_two: list[str], serial_artifact: dict[str, Any]
) -> None:
    result = pytester.runpytest(*plugin_args, *NO_CACHE, "--lens-adapter=bm25", "--lens-adapter=null", *bundled_two, "--lens-json=run.json")
    assert_answered(result, 2 * (24 + 24))
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # null is gated, in every mode
    artifact = read_artifact_json(pytester.path / "run.json")
    assert comparable(artifact) == comparable(serial_artifact)
    assert "@" not in result.stdout.str().split("LENS summary")[0]


def test_each_stream_group_runs_on_one_worker_without_group_suffixes(pytester: pytest.Pytester, two_scopes: Path) -> None:
    result = pytester.runpytest("-n", "2", "-v", *NO_CACHE, "--lens-adapter=bm25", "--lens-adapter=kw=bm25", f"--lens-dataset={two_scopes}")
    assert_answered(result, 12)
    result.stdout.fnmatch_lines(["*scheduling tests via LensGroupScheduling*"])
    workers: dict[str, set[str]] = {}
    for line in result.stdout.lines:
        if line.startswith("[gw") and "lens::test_lens[" in line:
            worker = line.split("]")[0][1:]
            test_id = line.split("lens::test_lens[")[1]
            case_id = test_id.split("]")[0]
            adapter, scope = case_id.split("-")[:2]
            workers.setdefault(f"{adapter}:{scope}", set()).add(worker)
            assert "@" not in test_id  # no xdist group suffix (the scores before it name first_search_ndcg@10)
    assert len(workers) == 4 and all(len(w) == 1 for w in workers.values())


def test_an_explicit_loadgroup_still_groups(pytester: pytest.Pytester, two_scopes: Path) -> None:
    result = pytester.runpytest("-n", "2", "--dist", "loadgroup", *NO_CACHE, "--lens-adapter=bm25", f"--lens-dataset={two_scopes}")
    assert_answered(result, 6)
    result.stdout.fnmatch_lines(["LENS verdict: PASS"])


CRASHING_MEMORY = """
import os
import signal

from lens_fixtures.adapters.bm25 import BM25Adapter


class CrashesOnE3(BM25Adapter):
    # Kills its own process while ingesting e3, like a segfaulting native extension would.

    def ingest(self, episode_id, scope_id, timestamp, text, meta=None):
        if episode_id == "e3":
            os.kill(os.getpid(), signal.SIGKILL)  # os._exit inside an adapter call is a fault now, not a crash
        super().ingest(episode_id, scope_id, timestamp, text, meta)
"""


def test_a_killed_worker_is_reported_as_missing_results(pytester: pytest.Pytester) -> None:
    # Workers import the adapter from the run's rootdir (their conftest.py puts it on sys.path), not from our tests package:
    # xdist gives them the sys.path the interpreter started with, which lacks this repository under `.venv/bin/pytest`.
    pytester.makeconftest("")
    pytester.makepyfile(crashing_memory=CRASHING_MEMORY)
    pytester.syspathinsert()
    dataset = write_dataset(pytester.path / "small.json", small_dataset())
    result = pytester.runpytest(
        "-n",
        "2",
        "--max-worker-restart=1",
        *NO_CACHE,
        "--lens-adapter=crasher=crashing_memory:CrashesOnE3",
        "--lens-adapter=bm25",
        f"--lens-dataset={dataset}",
        "--lens-json=run.json",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running*"])
    # Each question after e3 crashes the worker that replays the stream for it: each is reported, once, as a crash.
    missing = "incomplete: 2 questions missing from groups crasher:s1:16k (2); 2 of them crashed their xdist worker: "
    crashes = "crasher-s1-cp004-q2 (gw*), crasher-s1-cp006-q3 (gw*)"
    result.stdout.fnmatch_lines(["crasher * 1 (2 missing) *", f"LENS verdict: FAIL - {missing}{crashes}"])
    artifact = read_artifact_json(pytester.path / "run.json")
    assert [line.startswith(missing) for line in artifact["incomplete"]] == [True]
    assert (artifact["summary"]["crasher"]["n_questions"], artifact["summary"]["crasher"]["missing"]) == (1, 2)
    assert artifact["summary"]["bm25"]["n_questions"] == 3  # the other adapter's results survive


CRASHES_IN_SEARCH = """
import os
import signal

from lens_fixtures.adapters.bm25 import BM25Adapter


class CrashesOnOneQuestion(BM25Adapter):
    # Kills its own process whenever one question (crs01_q03) is asked, like a segfault in a native index would.

    def search(self, query, filters=None, limit=None):
        if "overnight minimum" in query:
            os.kill(os.getpid(), signal.SIGKILL)  # os._exit inside an adapter call is a fault now, not a crash
        return super().search(query, filters, limit)
"""


def test_one_crashing_question_does_not_take_the_run_down_under_xdist(pytester: pytest.Pytester) -> None:
    # Issue 15, defect 2: under our group scheduling, xdist requeued the crashing test with its group, so it killed
    # worker after worker ("maximum crashed workers reached: 8") and 22 of the 24 questions were lost.
    from pytest_lens.datasets.bundled import bundled_dataset_paths

    pytester.makeconftest("")
    pytester.makepyfile(crashing_memory=CRASHES_IN_SEARCH)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "-n",
        "2",
        *NO_CACHE,
        "--lens-adapter=crasher=crashing_memory:CrashesOnOneQuestion",
        f"--lens-dataset={bundled_dataset_paths()[0]}",
        "--lens-json=run.json",
        "--junitxml=junit.xml",
    )
    crashed = "crasher-capacity_regime_s01-cp017-crs01_q03_null_hypothesis"
    assert_answered(result, 23, failed=1)
    assert result.stdout.str().count(f"FAILED lens::test_lens[{crashed}]") == 1
    assert "maximum crashed workers" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "crasher * 23 (1 missing) *",
            f"LENS verdict: FAIL - incomplete: 1 questions missing from groups * (1); "
            f"1 of them crashed their xdist worker: {crashed} (gw?)",
        ]
    )
    artifact = read_artifact_json(pytester.path / "run.json")
    assert len(artifact["results"]) == 23 and "crs01_q03_null_hypothesis" not in {r["question_id"] for r in artifact["results"]}
    assert (artifact["summary"]["crasher"]["n_questions"], artifact["summary"]["crasher"]["missing"]) == (23, 1)
    # JUnit XML counts the question once, as the test's failure (xdist's own report was an error "on setup").
    suite = ElementTree.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert {key: suite.get(key) for key in ("tests", "failures", "errors")} == {"tests": "24", "failures": "1", "errors": "0"}
    (failure,) = suite.iter("failure")
    assert "crashed while running" in (failure.get("message") or "")


def test_grouping_also_works_when_xdist_is_loaded_explicitly(
    pytester: pytest.Pytester, two_scopes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With plugin autoloading off, xdist is registered as "xdist.plugin", not "xdist".
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest(
        "-p", "pytest_lens.plugin", "-p", "xdist.plugin", "-n", "2", "-v", *NO_CACHE, "--lens-adapter=bm25", f"--lens-dataset={two_scopes}"
    )
    assert_answered(result, 6)
    result.stdout.fnmatch_lines(["*scheduling tests via LensGroupScheduling*"])
