"""Runs ended from outside or by their adapters: calls holding the GIL, SIGTERM, adapters that end or keep the process.

Each runs pytest in a subprocess of its own: these runs are killed, signalled or ended.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from pytest_lens.plugin import options
from pytest_lens.records.rows import read_artifact_json
from tests.integration.test_baseline_gating import needle_dataset

NO_CACHE = ("-p", "no:cacheprovider")

SLOW_MEMORY = """
import os
import time

from lens_fixtures.adapters.bm25 import BM25Adapter


class Slow(BM25Adapter):
    def search(self, query, filters=None, limit=None):
        time.sleep(0.3)
        return super().search(query, filters, limit)


class SlowThreadSafe(Slow):
    lens_thread_safe = True


class HoldsOneThreadSafe(SlowThreadSafe):
    # The lagoon question's search waits until the test has signalled the run (or 60 s), so a run that is signalled
    # once a question passed can never have finished every question first, however fast or loaded the machine.
    def search(self, query, filters=None, limit=None):
        deadline = time.monotonic() + 60
        while "lagoon" in query and not os.path.exists("release") and time.monotonic() < deadline:
            time.sleep(0.05)
        return super().search(query, filters, limit)
"""

ENDING_MEMORY = """
import os
import threading
import time

from lens_fixtures.adapters.bm25 import BM25Adapter


class Exits(BM25Adapter):
    def search(self, query, filters=None, limit=None):
        if "ember" in query:
            os._exit(0)
        return super().search(query, filters, limit)


class Interrupts(BM25Adapter):
    def search(self, query, filters=None, limit=None):
        if "ember" in query:
            raise KeyboardInterrupt
        return super().search(query, filters, limit)


class Killed(BM25Adapter):
    # The machine is lost mid-run (an OOM kill, a cancelled CI job): nothing of the run's own shutdown happens.
    def search(self, query, filters=None, limit=None):
        if "ember" in query:
            os.kill(os.getpid(), 9)
        return super().search(query, filters, limit)


class Lingers(BM25Adapter):
    def __init__(self):
        super().__init__()
        threading.Thread(target=time.sleep, args=(600,), name="lingering-flusher", daemon=False).start()
"""

REGEX_MEMORY = """
import re

from lens_fixtures.adapters.bm25 import BM25Adapter


class RegexHang(BM25Adapter):
    # A catastrophic regular expression for the ember question: re holds the GIL until it ends (centuries).

    def search(self, query, filters=None, limit=None):
        if "ember" in query:
            re.match(r"(a+)+$", "a" * 64 + "b")
        return super().search(query, filters, limit)
"""


@pytest.fixture
def few_needles(pytester: pytest.Pytester) -> str:
    return f"{options.DATASET}={needle_dataset(pytester.path / 'few.json', count=6)}"


def artifact(pytester: pytest.Pytester, name: str = "out.json") -> dict[str, Any]:
    return read_artifact_json(pytester.path / name)


def faults_by_question(document: dict[str, Any]) -> dict[str, list[str]]:
    return {r["question_id"]: [f["kind"] for f in r["faults"]] for r in document["results"]}


def test_a_call_holding_the_gil_ends_the_run_with_what_it_had(pytester: pytest.Pytester, few_needles: str) -> None:
    # Issue 32, defect 2: the regex froze the run until it was killed at 240 s, with no artifact.
    pytester.makepyfile(regex_memory=REGEX_MEMORY)
    started = time.monotonic()
    result = pytester.runpytest_subprocess(
        "--lens-adapter=rx=regex_memory:RegexHang",
        few_needles,
        "--lens-call-timeout=1",
        "--lens-json=out.json",
        f"{options.SAVE}=main",
        *NO_CACHE,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    assert result.ret != 0
    assert elapsed < 60  # the silence limit is 1 + 1 + 5 s; the rest is the run and its rescue
    document = artifact(pytester)
    assert faults_by_question(document) == {
        "needle_amber": [],
        "needle_basalt": [],
        "needle_cobalt": [],
        "needle_dune": [],
        "needle_ember": ["abandoned"],
    }
    assert document["incomplete"] == ["incomplete: 1 questions missing from groups rx:needles:16k (1)"]
    result.stderr.fnmatch_lines(["pytest-lens: adapter 'rx' search() held Python's interpreter lock*"])
    result.stdout.fnmatch_lines(["*LENS summary (written by the watchdog)*", "LENS verdict: FAIL*"])
    assert not list((pytester.path / ".lens").glob("*/*.json"))  # an incomplete run is never a baseline


def signalled_run(pytester: pytest.Pytester, args: list[str], signals: list[signal.Signals], *, gap_s: float = 0.0) -> int:
    """Run pytest in a session of its own, signal its process group once a question passed; its exit status.

    After the signals, a file named ``release`` lets go of any call an adapter holds until then.
    """
    log = pytester.path / "log.txt"
    with log.open("wb") as out:
        process = pytester.popen(
            [sys.executable, "-m", "pytest", "-v", *args, *NO_CACHE], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 240
        while b"PASSED" not in log.read_bytes() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process.poll() is None, log.read_text()
        for index, number in enumerate(signals):
            if index:
                time.sleep(gap_s)
            os.killpg(process.pid, number)
        (pytester.path / "release").touch()
        try:
            return process.wait(timeout=240)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)


def assert_kept_not_saved(pytester: pytest.Pytester) -> None:
    document = artifact(pytester)
    assert document["results"]  # what ran is kept
    assert document["incomplete"]  # and the rest is missing, said so
    assert not list((pytester.path / ".lens").glob("*/*.json"))  # nothing saved as a baseline


def test_sigterm_to_a_concurrent_run_keeps_the_artifact(pytester: pytest.Pytester) -> None:
    # Issue 32: SIGTERM with --lens-concurrency=8 lost everything (no artifact).
    pytester.makepyfile(slow_memory=SLOW_MEMORY)
    # Questions are answered 8 at once ahead of their test items, so all 12 could be done by the time a loaded machine
    # printed the first PASSED and signalled. A checkpoint's results are handed out once all its questions are
    # answered: the first six questions pass at checkpoint 6, and a search held at checkpoint 12 keeps the run
    # unfinished until the signal.
    path = needle_dataset(pytester.path / "n12.json", count=12)
    document = json.loads(path.read_text())
    for question in document["questions"][:6]:
        question["checkpoint_after"] = 6
    path.write_text(json.dumps(document))
    dataset = f"{options.DATASET}={path}"
    args = ["--lens-adapter=slow=slow_memory:HoldsOneThreadSafe", dataset, "--lens-concurrency=8", "--lens-json=out.json"]
    assert signalled_run(pytester, [*args, f"{options.SAVE}=main"], [signal.SIGTERM]) == pytest.ExitCode.INTERRUPTED
    assert_kept_not_saved(pytester)


def test_sigterm_to_an_xdist_save_run_keeps_the_artifact(pytester: pytest.Pytester) -> None:
    # Issue 32: SIGTERM to `-n 2 --lens-save` lost everything; the process group is signalled, as a CI cancel does.
    pytester.makepyfile(slow_memory=SLOW_MEMORY)
    dataset = f"{options.DATASET}={needle_dataset(pytester.path / 'n12.json', count=12)}"
    args = ["--lens-adapter=a=slow_memory:Slow", "--lens-adapter=b=slow_memory:Slow", dataset, "-n", "2", "--lens-json=out.json"]
    assert signalled_run(pytester, [*args, f"{options.SAVE}=main"], [signal.SIGTERM]) == pytest.ExitCode.INTERRUPTED
    assert_kept_not_saved(pytester)


def test_a_full_disk_leaves_no_partial_outputs_and_the_rest_of_the_run_survives(pytester: pytest.Pytester, few_needles: str) -> None:
    # Issue 32, defect 6: --lens-json on a full disk was INTERNALERROR (exit 3) with a 0-byte .partial left; the HTML
    # report left a truncated file and the summary still said "open ...out.html". /dev/full fails every write (ENOSPC).
    # Every file the artifact (its document and its rows, streamed or written whole) and the report write goes to it.
    for name in ("out.json.partial", "out.rows.jsonl", "out.rows.jsonl.partial", "out.html.partial"):
        (pytester.path / name).symlink_to("/dev/full")
    result = pytester.runpytest(
        "--lens-adapter=bm25",
        few_needles,
        "--lens-json=out.json",
        "--lens-html=out.html",
        f"{options.SAVE}=main",
        "--junitxml=junit.xml",
        *NO_CACHE,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "could not write the run artifact out.json: No space left on device",
            "saved run: *0001_main.json",
            "could not write the HTML report out.html: *No space left on device",
        ]
    )
    result.stdout.no_fnmatch_line("*open out.html*")
    result.stdout.no_fnmatch_line("*lens show out.json*")
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    assert sorted(path.name for path in pytester.path.iterdir() if path.name.startswith("out")) == []
    assert (pytester.path / "junit.xml").stat().st_size > 0  # the rest of the run's output survives
    assert len(read_artifact_json(next((pytester.path / ".lens").glob("*/0001_main.json")))["results"]) == 6


@pytest.mark.parametrize("timeout", ["0", "30"], ids=["on-the-main-thread", "on-the-adapter-thread"])
@pytest.mark.parametrize(("adapter", "message"), [("Exits", "os._exit(0)"), ("Interrupts", "KeyboardInterrupt")])
def test_an_adapter_ending_the_process_or_interrupting_is_a_fault(
    pytester: pytest.Pytester, few_needles: str, timeout: str, adapter: str, message: str
) -> None:
    # Issue 32: os._exit(0) in an adapter ended the run with exit 0, no artifact, no summary (a CI gate passed);
    # a KeyboardInterrupt raised by an adapter stopped the whole run like Ctrl-C.
    pytester.makepyfile(ending_memory=ENDING_MEMORY)
    result = pytester.runpytest_subprocess(
        f"--lens-adapter=end=ending_memory:{adapter}", few_needles, f"--lens-call-timeout={timeout}", "--lens-json=out.json", *NO_CACHE
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    document = artifact(pytester)
    assert {question: kinds for question, kinds in faults_by_question(document).items() if kinds} == {"needle_ember": ["exception"]}
    assert len(document["results"]) == 6  # the questions after it ran too
    result.stdout.fnmatch_lines([f"*adapter 'end' raised in search(): {message}*"])


def test_a_killed_run_keeps_every_row_it_recorded(pytester: pytest.Pytester, few_needles: str) -> None:
    # Issue 43: the artifact was written whole at the end, so a run killed (SIGKILL) before it had none. The rows
    # stream to out.rows.jsonl as questions finish, beside a document written at the first one that says so.
    from pytest_lens.cli.main import main as lens_main
    from pytest_lens.runs.artifact import INTERRUPTED

    pytester.makepyfile(ending_memory=ENDING_MEMORY)
    result = pytester.runpytest_subprocess("--lens-adapter=end=ending_memory:Killed", few_needles, "--lens-json=out.json", "-v", *NO_CACHE)
    assert result.ret == -signal.SIGKILL
    passed = [found.group(1) for line in result.stdout.lines if (found := re.search(r"-(needle_\w+)\] PASSED", line))]
    assert passed  # questions before the ember one ran, and were recorded
    document = artifact(pytester)
    assert document["pending"] == INTERRUPTED
    assert document["rows"] == {"file": "out.rows.jsonl", "format": "jsonl", "count": None, "sha256": None}
    assert [r["question_id"] for r in document["results"]] == passed
    assert lens_main(["show", str(pytester.path / "out.json")]) == 0


def test_an_adapter_thread_left_running_fails_the_run_and_does_not_keep_the_process(pytester: pytest.Pytester, few_needles: str) -> None:
    # Issue 32: a non-daemon thread started by an adapter kept the process alive after the verdict (killed at 120 s).
    pytester.makepyfile(ending_memory=ENDING_MEMORY)
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--lens-adapter=end=ending_memory:Lingers", few_needles, *NO_CACHE, timeout=120)
    assert time.monotonic() - started < 100
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["LENS verdict: FAIL - 1 non-daemon thread(s) started during the run still ran 2 s after it ('lingering-flusher')*"]
    )


def test_a_summary_that_cannot_import_its_statistics_says_so_and_keeps_the_artifact(pytester: pytest.Pytester, few_needles: str) -> None:
    # Issue 32: under an address-space limit the summary died with a raw ImportError traceback from a statistics
    # module first imported while printing. Two adapters make the summary test their difference (scipy.stats, imported
    # by nothing before it); an import that fails the same way stands in for the limit.
    pytester.makeconftest('import sys\nsys.modules["scipy.stats"] = None\n')
    result = pytester.runpytest_subprocess(
        "--lens-adapter=bm25", "--lens-adapter=random", few_needles, "--lens-json=out.json", *NO_CACHE
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "could not compute the LENS summary: ModuleNotFoundError: import of scipy.stats halted*"
            "(the run artifact out.json holds every result)",
            "run artifact: out.json",
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert len(artifact(pytester)["results"]) == 12


def test_under_xdist_a_call_holding_the_gil_ends_only_its_worker(pytester: pytest.Pytester, few_needles: str) -> None:
    # The watcher of a worker kills that worker; the controller records the crash and keeps every other result.
    pytester.makepyfile(regex_memory=REGEX_MEMORY)
    result = pytester.runpytest_subprocess(
        "--lens-adapter=rx=regex_memory:RegexHang",
        few_needles,
        "--lens-call-timeout=1",
        "--lens-json=out.json",
        "-n",
        "2",
        *NO_CACHE,
        timeout=200,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert sorted(faults_by_question(artifact(pytester))) == [
        "needle_amber",
        "needle_basalt",
        "needle_cobalt",
        "needle_dune",
        "needle_fjord",
    ]
    result.stdout.fnmatch_lines(
        ["LENS verdict: FAIL - incomplete: 1 questions missing * crashed their xdist worker: rx-needles-cp006-needle_ember*"]
    )


def test_a_ci_cancel_of_an_xdist_run_keeps_the_artifact(pytester: pytest.Pytester) -> None:
    # Issue 32: a CI cancel (SIGINT, then SIGTERM 7.5 s later on GitHub Actions) of a `-n 2` run lost the artifact:
    # xdist took 7.6-10.6 s to stop, and the SIGTERM ended the controller while it wrote. Here the SIGTERM comes 1 s
    # after the SIGINT, well inside that shutdown: it is noted, and the artifact is written all the same.
    pytester.makepyfile(slow_memory=SLOW_MEMORY)
    dataset = f"{options.DATASET}={needle_dataset(pytester.path / 'n12.json', count=12)}"
    args = ["--lens-adapter=a=slow_memory:Slow", "--lens-adapter=b=slow_memory:Slow", dataset, "-n", "2", "--lens-json=out.json"]
    status = signalled_run(pytester, [*args, f"{options.SAVE}=main"], [signal.SIGINT, signal.SIGTERM], gap_s=1.0)
    log = (pytester.path / "log.txt").read_text()
    # A SIGTERM while the interrupted run writes is noted (exit 2). On a quiet machine the run can be written and its
    # handlers restored within the second: the SIGTERM then lands in the interpreter's shutdown and ends it (-15),
    # once the summary is printed and the artifact written.
    assert status == pytest.ExitCode.INTERRUPTED or (status == -signal.SIGTERM and "LENS verdict: FAIL - incomplete" in log), log[-3000:]
    assert_kept_not_saved(pytester)
