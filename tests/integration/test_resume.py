"""Resumable runs (``--lens-resume=DIR``) and reruns of what failed (``--lens-rerun``), end to end.

A run killed with SIGKILL keeps every stream group it finished; run again, it reuses them and its artifact is the
uninterrupted run's. A dataset file changed by one byte reruns exactly its scope's groups. Questions an endpoint
failed are asked again, alone, against a working endpoint, and the artifact becomes a clean run's; so are questions
whose adapter faulted, once the adapter works again.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.records.rows import read_artifact_json
from pytest_lens.runs.artifact import INTERRUPTED
from tests.integration.test_shards import comparable
from tests.support import COLD_CHAIN_DEMO

RUN = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "--lens-adapter=bm25", "--lens-adapter=null")


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *RUN, *args]


def kept_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json")) if directory.exists() else []


@pytest.fixture
def two_scopes(tmp_path: Path) -> list[str]:
    """Copies of two bundled scopes (and their labels), as --lens-dataset arguments: four stream groups with bm25 and null."""
    from pytest_lens.datasets.bundled import bundled_dataset_paths

    data = tmp_path / "data"
    data.mkdir()
    for path in bundled_dataset_paths()[:2]:
        shutil.copy(path, data / path.name)
        shutil.copy(path.with_name(path.stem + ".labels.json"), data / f"{path.stem}.labels.json")
    return [f"--lens-dataset={data / path.name}" for path in bundled_dataset_paths()[:2]]


def test_a_run_killed_with_sigkill_resumes_to_the_uninterrupted_run(tmp_path: Path, two_scopes: list[str]) -> None:
    subprocess.run(pytest_command("-q", *two_scopes, "--lens-json=reference.json"), cwd=tmp_path, capture_output=True, check=False)
    reference = read_artifact_json(tmp_path / "reference.json")

    kept = tmp_path / "kept"
    args = ("-q", *two_scopes, f"--lens-resume={kept}", "--lens-json=run.json")
    process = subprocess.Popen(pytest_command(*args), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not kept_files(kept) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)  # the first stream group is kept; the run dies in the middle of the next
    assert process.wait() == -signal.SIGKILL
    finished = len(kept_files(kept))
    assert 1 <= finished < 4
    # The killed run's artifact is the document written at its first result, and every row it recorded (issue 43).
    killed = read_artifact_json(tmp_path / "run.json")
    assert killed["pending"] == INTERRUPTED and killed["rows"]["count"] is None
    assert len(killed["results"]) >= 24 * finished

    resumed = subprocess.run(pytest_command(*args[1:]), cwd=tmp_path, capture_output=True, text=True, check=False)
    assert f"lens: resume {kept}: {finished} of 4 stream groups reused, {4 - finished} to run" in resumed.stdout
    assert f"{24 * finished} deselected" in resumed.stdout  # the kept questions were not asked again
    artifact = read_artifact_json(tmp_path / "run.json")
    assert artifact["run"]["resumed"]["units_reused"] == finished
    assert comparable(artifact) == comparable(reference)
    assert len(kept_files(kept)) == 4

    again = subprocess.run(pytest_command(*args[1:]), cwd=tmp_path, capture_output=True, text=True, check=False)
    assert "4 of 4 stream groups reused, 0 to run" in again.stdout and "96 deselected" in again.stdout
    assert comparable(read_artifact_json(tmp_path / "run.json")) == comparable(reference)
    assert again.returncode == resumed.returncode == 1  # null fails its hard gate: reused results gate as run ones


def test_a_one_byte_dataset_change_reruns_exactly_its_scope(tmp_path: Path, two_scopes: list[str]) -> None:
    kept = tmp_path / "kept"
    args = (*two_scopes, f"--lens-resume={kept}")
    first = subprocess.run(pytest_command(*args), cwd=tmp_path, capture_output=True, text=True, check=False)
    assert "0 of 4 stream groups reused, 4 to run" in first.stdout and len(kept_files(kept)) == 4

    changed = Path(two_scopes[1].split("=", 1)[1])
    text = changed.read_bytes()
    at = text.index(b'"text": "') + len(b'"text": "') + 1
    changed.write_bytes(text[:at] + (b"X" if text[at : at + 1] != b"X" else b"Y") + text[at + 1 :])  # one byte of one episode
    scope = json.loads(text)["scopes"][0]["scope_id"]

    second = subprocess.run(pytest_command(*args, "-v"), cwd=tmp_path, capture_output=True, text=True, check=False)
    assert f"2 of 4 stream groups reused, 2 to run (2 changed: bm25:{scope}:16k, null:{scope}:16k)" in second.stdout
    ran = {line.split("[", 1)[1].split("]", 1)[0] for line in second.stdout.splitlines() if line.startswith("lens::test_lens[")}
    assert len(ran) == 48 and all(f"-{scope}-" in case for case in ran)
    assert "48 deselected" in second.stdout


NOT_MEASURED_PROMPTS = ("defrost cycle duration", "root cause of the FR-3")


def llm_args(server: OpenAITestServer, *extra: str) -> list[str]:
    return [
        "-p",
        "no:cacheprovider",
        "-p",
        "no:hypothesispytest",
        "-p",
        "no:xdist",
        "--lens-adapter=bm25",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        f"--lens-llm-base-url={server.base_url}",
        "--lens-llm-retries=0",
        "--lens-llm-cache-mode=off",
        "--lens-max-not-measured=100%",
        f"--lens-dataset={COLD_CHAIN_DEMO}",
        *extra,
    ]


def chat_prompts(server: OpenAITestServer) -> list[str]:
    """Which question each chat request was about (by the prompts above), ``other`` for the rest."""
    found = []
    for request in server.requests:
        if request.path != "/v1/chat/completions":
            continue
        body = request.body.decode() if isinstance(request.body, bytes) else json.dumps(request.body)
        found.append(next((prompt for prompt in NOT_MEASURED_PROMPTS if prompt in body), "other"))
    return found


def test_rerun_not_measured_asks_only_the_failed_questions_again(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    failing = [Fault("status", status=500, permanent=True, only="agent", contains=prompt) for prompt in NOT_MEASURED_PROMPTS]
    with OpenAITestServer(faults=failing) as broken:
        first = pytester.runpytest(*llm_args(broken, "--lens-resume=kept", "--lens-json=run.json"))
    failed = read_artifact_json(pytester.path / "run.json")
    assert sorted(r["question_id"] for r in failed["results"] if r["not_measured"]) == [
        "ccd_q01_null_hypothesis",
        "ccd_q07_longitudinal",
    ], first.stdout.str()[-3000:]

    with OpenAITestServer() as working:
        rerun = pytester.runpytest(*llm_args(working, "--lens-resume=kept", "--lens-rerun=not-measured", "--lens-json=run.json"))
        asked = chat_prompts(working)
    rerun.stdout.fnmatch_lines(["*0 of 1 stream groups reused, 1 to run, 2 questions asked again (--lens-rerun=not-measured)*"])
    rerun.assert_outcomes(passed=2, deselected=6)
    assert asked and "other" not in asked  # every request was about one of the two failed questions

    clean_dir = pytester.mkdir("clean")
    with OpenAITestServer() as clean:
        monkeypatch.chdir(clean_dir)  # a run of its own: its own rootdir, nothing kept
        pytester.runpytest(*llm_args(clean, "--lens-json=clean.json", f"--rootdir={clean_dir}"))
        monkeypatch.chdir(pytester.path)
        clean_asked = chat_prompts(clean)
    assert sorted(asked) == sorted(prompt for prompt in clean_asked if prompt != "other")  # the same requests for those two

    final, reference = read_artifact_json(pytester.path / "run.json"), read_artifact_json(clean_dir / "clean.json")
    assert final["run"]["resumed"]["questions_rerun"] == [
        "bm25-cold_chain_demo-cp007-ccd_q01_null_hypothesis",
        "bm25-cold_chain_demo-cp016-ccd_q07_longitudinal",
    ]
    for artifact in (final, reference):  # the two endpoints' addresses differ, and are all that differs
        artifact["run"]["llm"].pop("base_url")
        artifact["run"]["settings"]["llm"].pop("base_url")
        for result in artifact["results"]:  # a request's cache key holds the endpoint's address
            assert result.pop("llm_requests")
        artifact["run"]["agent"]["description"] = artifact["run"]["agent"]["description"].split(" at ")[0]
    assert comparable(final) == comparable(reference)
    assert not any(r["not_measured"] for r in final["results"])


FLAKY_MEMORY = """
import os

from lens_fixtures.adapters.bm25 import BM25Adapter

#: Words of the two questions whose searches fail while ``flaky.on`` exists in the working directory.
FAILING = ("defrost", "forklift")


class Flaky(BM25Adapter):
    def search(self, query, filters=None, limit=None):
        with open("searches.log", "a", encoding="utf-8") as log:
            log.write(query.replace("\\n", " ") + "\\n")
        if os.path.exists("flaky.on") and any(word in query for word in FAILING):
            raise RuntimeError("index shard offline")
        return super().search(query, filters, limit)
"""


def test_rerun_faults_asks_only_the_faulted_questions_again(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(flaky_memory=FLAKY_MEMORY)
    pytester.syspathinsert()
    args = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist", "--lens-adapter=flaky=flaky_memory:Flaky")
    data = f"--lens-dataset={COLD_CHAIN_DEMO}"
    (pytester.path / "flaky.on").touch()
    pytester.runpytest(*args, data, "--lens-resume=kept", "--lens-json=run.json")
    failed = read_artifact_json(pytester.path / "run.json")
    faulted = sorted(r["question_id"] for r in failed["results"] if r["faults"])
    assert faulted == ["ccd_q01_null_hypothesis", "ccd_q02_distractor_resistance"]
    assert all("index shard offline" in r["faults"][0]["message"] for r in failed["results"] if r["faults"])

    (pytester.path / "flaky.on").unlink()
    (pytester.path / "searches.log").unlink()
    rerun = pytester.runpytest(*args, data, "--lens-resume=kept", "--lens-rerun=faults", "--lens-json=run.json")
    rerun.stdout.fnmatch_lines([f"*0 of 1 stream groups reused, 1 to run, {len(faulted)} questions asked again (--lens-rerun=faults)*"])
    rerun.assert_outcomes(passed=len(faulted), deselected=len(failed["results"]) - len(faulted))
    asked = (pytester.path / "searches.log").read_text().splitlines()
    assert asked and all(any(word in query for word in ("defrost", "forklift")) for query in asked)  # only those two searched

    clean_dir = pytester.mkdir("clean")
    monkeypatch.chdir(clean_dir)  # a run of its own: its own rootdir, nothing kept, no flaky.on
    pytester.runpytest(*args, data, "--lens-json=clean.json", f"--rootdir={clean_dir}")
    monkeypatch.chdir(pytester.path)
    final, reference = read_artifact_json(pytester.path / "run.json"), read_artifact_json(clean_dir / "clean.json")
    assert final["run"]["resumed"]["questions_rerun"] == [
        "flaky-cold_chain_demo-cp007-ccd_q01_null_hypothesis",
        "flaky-cold_chain_demo-cp010-ccd_q02_distractor_resistance",
    ]
    assert final["run"]["resumed"]["rerun"] == "faults"
    assert not any(r["faults"] for r in final["results"])
    assert comparable(final) == comparable(reference)


def test_a_run_selecting_part_of_a_stream_group_keeps_that_part_and_the_next_run_asks_only_the_rest(tmp_path: Path) -> None:
    # Every real-model recipe selects a few questions with -k: the groups they touch used to be kept only when whole,
    # so a -k run kept nothing (silently). It keeps what it answered now; the next run reuses it and asks the rest.
    kept = tmp_path / "kept"
    args = (f"--lens-dataset={COLD_CHAIN_DEMO}", f"--lens-resume={kept}", "--lens-json=run.json")
    first = subprocess.run(pytest_command("-k", "q01 or q03", *args), cwd=tmp_path, capture_output=True, text=True, check=False)
    assert "lens: resume" in first.stdout and len(kept_files(kept)) == 2  # bm25's group and null's, each in part
    assert [len(json.loads(path.read_text())["results"]) for path in kept_files(kept)] == [2, 2]
    rest = subprocess.run(pytest_command(*args), cwd=tmp_path, capture_output=True, text=True, check=False)
    assert f"lens: resume {kept}: 0 of 2 stream groups reused, 2 to run, 2 of them kept in part (4 questions reused)" in rest.stdout
    assert "4 deselected" in rest.stdout  # q01 and q03 of both adapters were not asked again
    artifact = read_artifact_json(tmp_path / "run.json")
    assert len(artifact["results"]) == 16 and artifact["run"]["resumed"]["questions_reused"] == 4
    assert sorted(artifact["run"]["resumed"]["units_reused_in_part"]) == sorted(json.loads(p.read_text())["unit"] for p in kept_files(kept))
    whole = subprocess.run(pytest_command(*args), cwd=tmp_path, capture_output=True, text=True, check=False)
    assert "2 of 2 stream groups reused, 0 to run" in whole.stdout  # the rest was added to the kept part
