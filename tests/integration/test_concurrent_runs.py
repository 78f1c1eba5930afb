"""Questions answered concurrently (``--lens-concurrency``) give exactly the serial run, through pytest.

Record and replay with the LLM agent and judge against the local server, serially, concurrently
and under ``-n 2``; test selection (``-k``, ``--lf``, ``-x``) and a shuffled test order; and the
endpoint misbehaving in each way the local server can (429 storms, 5xx, timeouts, malformed tool
calls, unusable verdicts, the endpoint down): concurrency must change none of the outcomes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.records.rows import read_artifact_json
from tests.integration.test_llm_runs import llm_args as single_scope_llm_args
from tests.integration.test_xdist import comparable
from tests.support import COLD_CHAIN_DEMO, assert_answered, small_dataset, write_dataset

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


@pytest.fixture
def datasets(tmp_path: Path) -> list[str]:
    """Two scopes (two stream groups, so ``-n 2`` uses both workers): the cold-chain demo and a small one."""
    small = write_dataset(tmp_path / "small.json", small_dataset())
    return [f"--lens-dataset={COLD_CHAIN_DEMO}", f"--lens-dataset={small}"]


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer() as running:
        yield running


def llm_args(server: OpenAITestServer, datasets: list[str], *extra: str) -> list[str]:
    """The LLM agent and judge as in ``test_llm_runs``, over both scopes (it adds the cold-chain demo itself)."""
    return single_scope_llm_args(server, *datasets[1:], *extra)


def artifact(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = comparable(read_artifact_json(path))
    for volatile in ("machine", "commit"):
        loaded.pop(volatile, None)
    loaded["run"].pop("settings")  # the invocation's own settings (concurrency, cache file and mode) differ by design
    return loaded


def without_llm_counts(document: dict[str, Any]) -> dict[str, Any]:
    """The artifact without the request counters, which differ between recording (misses) and replaying (hits)."""
    copy = json.loads(json.dumps(document))
    copy["run"]["llm"].pop("requests")
    copy["run"]["llm"].pop("cache_mode")
    for result in copy["results"]:
        result.pop("llm")
    return copy


def test_record_and_replay_give_the_same_artifact_serially_concurrently_and_under_xdist(
    pytester: pytest.Pytester, server: OpenAITestServer, datasets: list[str]
) -> None:
    def run(name: str, *extra: str) -> dict[str, Any]:
        result = pytester.runpytest(*llm_args(server, datasets, f"--lens-json={name}.json", *extra))
        assert_answered(result, 11)
        return artifact(pytester.path / f"{name}.json")

    serial = run("serial", "--lens-concurrency=1", "--lens-llm-cache=a.sqlite")
    sent = server.count()
    server.reset()
    concurrent = run("concurrent", "--lens-concurrency=8", "--lens-llm-cache=b.sqlite")
    assert server.count() == sent  # the same requests, each once
    assert concurrent == serial  # every answer, score, count and statistic

    server.reset()
    replays = {
        "replay_serial": run("replay_serial", "--lens-concurrency=1", "--lens-llm-cache=a.sqlite", "--lens-llm-cache-mode=replay"),
        "replay_concurrent": run("replay_concurrent", "--lens-concurrency=8", "--lens-llm-cache=a.sqlite", "--lens-llm-cache-mode=replay"),
        "replay_xdist": run("replay_xdist", "-n", "2", "--lens-concurrency=8", "--lens-llm-cache=a.sqlite", "--lens-llm-cache-mode=replay"),
    }
    assert server.count() == 0
    assert replays["replay_concurrent"] == replays["replay_serial"]
    assert replays["replay_xdist"] == replays["replay_serial"]
    assert without_llm_counts(replays["replay_serial"]) == without_llm_counts(serial)
    assert serial["run"]["llm"]["requests"]["requests"] == replays["replay_xdist"]["run"]["llm"]["requests"]["cache_hits"] == sent
    assert all("answer_quality" in r["metrics"] for r in serial["results"] if r["question_id"] != "q1")
    assert serial["statistics"]["adapters"]["bm25"]["composite"]["low"] is not None


SELECTION_CONFTEST = """
import random

from lens_fixtures.adapters.bm25 import BM25Adapter


class BrokenAfterE3(BM25Adapter):
    # Searching fails once episode e3 is stored: the small scope's questions at checkpoints 4 and 6 fail.

    def reset(self, scope_id):
        super().reset(scope_id)
        self.broken = False

    def ingest(self, episode_id, scope_id, timestamp, text, meta=None):
        super().ingest(episode_id, scope_id, timestamp, text, meta)
        if episode_id == "e3":
            self.broken = True

    def search(self, query, filters=None, limit=None):
        if getattr(self, "broken", False):
            raise RuntimeError("index corrupted after e3")
        return super().search(query, filters, limit)


def pytest_addoption(parser):
    parser.addoption("--shuffle", type=int, default=None)


def pytest_collection_modifyitems(config, items):
    seed = config.getoption("--shuffle")
    if seed is not None:
        random.Random(seed).shuffle(items)
"""


@pytest.fixture
def selection(pytester: pytest.Pytester, datasets: list[str]) -> list[str]:
    pytester.makeconftest(SELECTION_CONFTEST)
    pytester.syspathinsert()
    # The broken adapter comes first, so -x stops before bm25 runs at all.
    return [
        "--lens-adapter=broken=conftest:BrokenAfterE3",
        "--lens-adapter=bm25",
        "--lens-judge=offline",
        *datasets,
        "-p",
        "no:hypothesispytest",
    ]


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param(("-k", "ccd_q03 or ccd_q06 or q2 or q3"), id="-k"),
        pytest.param(("--shuffle=3",), id="random order"),
        pytest.param(("--shuffle=5", "-n", "2"), id="random order, -n 2"),
        pytest.param(("-x",), id="-x"),
        pytest.param(("--deselect", "lens::test_lens[broken-s1-cp004-q2]", "-k", "s1"), id="--deselect"),
    ],
)
def test_test_selection_and_order_give_the_serial_results(pytester: pytest.Pytester, selection: list[str], extra: tuple[str, ...]) -> None:
    outcomes = {}
    for concurrency in (1, 8):
        result = pytester.runpytest(
            *selection, *extra, f"--lens-concurrency={concurrency}", f"--lens-json=c{concurrency}.json", "-p", "no:cacheprovider"
        )
        outcomes[concurrency] = result.parseoutcomes()
    assert outcomes[8] == outcomes[1]
    serial, concurrent = artifact(pytester.path / "c1.json"), artifact(pytester.path / "c8.json")
    assert concurrent["results"] == serial["results"]
    assert concurrent == serial


def test_last_failed_reruns_the_failures_with_the_same_results(pytester: pytest.Pytester, selection: list[str]) -> None:
    first = pytester.runpytest(*selection, "--lens-concurrency=8")
    assert_answered(first, 20, failed=2)  # broken's q2 and q3
    outcomes = {}
    for concurrency in (1, 8):
        rerun = pytester.runpytest(*selection, "--lf", f"--lens-concurrency={concurrency}", f"--lens-json=lf{concurrency}.json")
        outcomes[concurrency] = (rerun.parseoutcomes().get("failed"), rerun.parseoutcomes().get("passed"))
    assert outcomes[8] == outcomes[1] == (2, None)
    assert artifact(pytester.path / "lf8.json") == artifact(pytester.path / "lf1.json")


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


FAULT_MODES = {
    "429 storm": [Fault("status", rate=0.3, status=429, retry_after_ms=20)],
    "transient 5xx": [Fault("status", rate=0.25, status=503), Fault("status", rate=0.1, status=500, salt="b")],
    "timeouts": [Fault("slow", rate=0.1, delay_s=5.0, only="agent")],
    "malformed tool calls": [Fault("malformed_tool_arguments", rate=0.3, only="agent", permanent=True)],
    "prose verdicts": [Fault("content", rate=0.3, only="judge", permanent=True, text="As a language model I cannot judge this.")],
}


@pytest.mark.parametrize("faults", FAULT_MODES.values(), ids=FAULT_MODES.keys())
def test_a_misbehaving_endpoint_gives_the_same_outcomes_concurrently(
    pytester: pytest.Pytester, datasets: list[str], faults: list[Fault]
) -> None:
    runs = {}
    with OpenAITestServer(faults=faults) as server:
        for concurrency in (1, 8):
            server.reset()  # transient faults fire again for the second run
            # A short timeout for the slow mode only: on a busy machine a normal request may take a second.
            timeout = "2" if faults[0].kind == "slow" else "60"
            args = llm_args(server, datasets, "--lens-llm-cache-mode=off", f"--lens-llm-timeout={timeout}", "--lens-llm-retries=3")
            result = pytester.runpytest(*args, f"--lens-concurrency={concurrency}", f"--lens-json=f{concurrency}.json")
            # pytest-lens's own counters (requests, HTTP attempts, retries, failures); the server's may still be
            # finishing a timed-out request the client gave up on.
            summary = [line for line in result.outlines if line.startswith(("llm requests", "judge failures", "LENS verdict"))]
            runs[concurrency] = (result.ret, summary, artifact(pytester.path / f"f{concurrency}.json"))
            assert server.count(status=200) > 0
    assert runs[8] == runs[1]
    assert any(" retries 0," not in line for line in runs[8][1] if line.startswith("llm requests")) or faults[0].permanent


def test_an_endpoint_that_is_down_fails_every_question_alike(pytester: pytest.Pytester, datasets: list[str]) -> None:
    url = closed_port_url()
    runs = {}
    for concurrency in (1, 8):
        args = [
            "--lens-adapter=bm25",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={url}",
            "--lens-llm-cache-mode=off",
            "--lens-llm-retries=1",
            "--lens-llm-timeout=2",
            *datasets,
            *QUIET,
        ]
        result = pytester.runpytest(*args, f"--lens-concurrency={concurrency}", f"--lens-json=d{concurrency}.json")
        runs[concurrency] = artifact(pytester.path / f"d{concurrency}.json")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert runs[8] == runs[1]
    reasons = {r["not_measured"] for r in runs[8]["results"]}
    assert len(reasons) == 1  # not measured, every question for the same reason, never blamed on the memory
    assert "APIConnectionError" in next(iter(reasons))
    assert all(r["agent_error"] is None and r["metrics"] == {} for r in runs[8]["results"])


class PeakProbe:
    """The default policy, taking 50 ms per completion and noting the most completions in progress at once."""

    def __init__(self) -> None:
        from lens_fixtures.openai_server import LensPolicy

        self.policy = LensPolicy()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def __call__(self, request: Any) -> Any:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(0.05)
            return self.policy(request)
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.mark.parametrize(
    ("options", "ini", "peak"),
    [
        pytest.param((), "", lambda p: 4 < p <= 8, id="default 8 for the llm agent"),
        pytest.param(("--lens-concurrency=1",), "", lambda p: p == 1, id="1 is serial"),
        pytest.param((), "lens_concurrency = 2", lambda p: p == 2, id="ini"),
        pytest.param(("--lens-max-connections=3",), "", lambda p: 1 < p <= 3, id="max connections bound the requests"),
    ],
)
def test_concurrency_and_connection_options(
    pytester: pytest.Pytester, datasets: list[str], options: tuple[str, ...], ini: str, peak: Any
) -> None:
    probe = PeakProbe()
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    with OpenAITestServer(probe) as server:
        args = llm_args(server, datasets, "--lens-llm-cache-mode=off", *options)
        args.remove("--lens-judge=llm")  # agent requests only: the judge's own threads would blur the count
        assert_answered(pytester.runpytest(*args), 11)
    assert peak(probe.peak), probe.peak


@pytest.mark.parametrize("option", ["--lens-concurrency=0", "--lens-max-connections=-2", "--lens-concurrency=many"])
def test_bad_concurrency_options_are_usage_errors(pytester: pytest.Pytester, option: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", option, *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    name = option.split("=")[0]
    result.stderr.fnmatch_lines([f"*{name}*"])
