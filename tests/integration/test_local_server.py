"""A local server that generates one completion at a time, at pytest-lens's default settings (issue 33's must-show).

The project's test server with one slot, a per-token delay and llama.cpp's ``/props`` and ``/slots``: the default
concurrency (8 questions at once) must measure every question, send no request twice, keep the server's queue
empty (every request starts generating as it arrives) and take no longer than one question at a time.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO, assert_answered, fast_progress_lines

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", f"--lens-dataset={COLD_CHAIN_DEMO}")
#: A quarter of the agent's requests run to max_tokens, each token taking 1 ms in the slot.
RAMBLE = Fault("ramble", rate=0.25, only="agent", permanent=True)


def run(pytester: pytest.Pytester, server: OpenAITestServer, name: str, *extra: str) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    result = pytester.runpytest(
        "--lens-adapter=bm25",
        "--lens-agent=llm",
        "--lens-agent-model=scripted",
        f"--lens-llm-base-url={server.base_url}",
        "--lens-llm-cache-mode=off",
        f"--lens-json={name}.json",
        *QUIET,
        *extra,
    )
    wall = time.perf_counter() - started
    assert_answered(result, 8)
    result.stdout.fnmatch_lines(["llm server: server serves 1 request(s) at once (llama.cpp /props and /slots*"])
    return wall, read_artifact_json(pytester.path / f"{name}.json")


def chat_requests(server: OpenAITestServer) -> list[float]:
    return [r.queued_s for r in server.requests if r.path == "/v1/chat/completions"]


def test_defaults_against_one_slot_measure_every_question_without_duplicates_and_no_slower(pytester: pytest.Pytester) -> None:
    # The slot caches prompts as llama.cpp's do: a question's next turn reads only its new messages, unless another
    # question's turn came in between and evicted it.
    with OpenAITestServer(slots=1, seconds_per_token=0.001, seconds_per_prompt_token=0.0002, faults=[RAMBLE]) as server:
        serial_s, _ = run(pytester, server, "serial", "--lens-concurrency=1")
        serial_sent = len(chat_requests(server))
        serial_read = server.prompt_tokens_read
        server.reset()
        default_s, default = run(pytester, server, "default")  # no option: 8 questions at once
        queued_at_server = chat_requests(server)
        duplicates = server.duplicates()
        default_read = server.prompt_tokens_read
    assert len(queued_at_server) == serial_sent  # the same requests, each once
    assert duplicates == 0
    # One question at a time on the slot: its turns follow each other, and the server reads no more than serially.
    assert default_read == serial_read, f"default read {default_read} prompt tokens, one at a time {serial_read}"
    assert max(queued_at_server) < 0.25  # none waited at the server: no more in flight than its one slot
    results = default["results"]
    assert isinstance(results, list) and all(r["not_measured"] is None for r in results)
    # The questions queued here instead, and their duration leaves that wait out.
    assert sum(r["queued_s"] for r in results) > 0
    assert all(r["duration_s"] >= 0 for r in results)
    # No slower with concurrency than without (on a shared machine: within a margin for start-up noise).
    assert default_s < serial_s * 1.25 + 2, f"default {default_s:.1f} s, one at a time {serial_s:.1f} s"


def test_the_limit_follows_the_slots_the_server_says(pytester: pytest.Pytester) -> None:
    with OpenAITestServer(slots=3, seconds_per_token=0.001, faults=[RAMBLE]) as server:
        run_result = pytester.runpytest(
            "--lens-adapter=bm25",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={server.base_url}",
            "--lens-llm-cache-mode=off",
            *QUIET,
        )
        assert server.probes[:1] == ["/props"]
        assert server.duplicates() == 0
    assert_answered(run_result, 8)
    run_result.stdout.fnmatch_lines(["llm server: server serves 3 request(s) at once*"])


def test_xdist_workers_share_the_servers_one_slot(pytester: pytest.Pytester) -> None:
    """Two workers, one slot: together they keep one request in flight, not one each (which would queue at the server)."""
    with OpenAITestServer(slots=1, seconds_per_token=0.001, faults=[RAMBLE]) as server:
        result = pytester.runpytest(
            "-n",
            "2",
            "--lens-adapter=bm25",
            "--lens-adapter=kw=bm25",  # two stream groups: one per worker, answering at the same time
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={server.base_url}",
            "--lens-llm-cache-mode=off",
            "--lens-json=run.json",
            *QUIET,
        )
        peak = server.peak_in_flight
        bodies = Counter(json.dumps(r.body, sort_keys=True) for r in server.requests if r.path == "/v1/chat/completions")
        queued_at_server = chat_requests(server)
    assert_answered(result, 16)
    assert peak == 1, f"the server had {peak} requests in flight at once: the workers did not share its one slot"
    # No request sent twice: the two adapters are the same retriever, so each body comes once from each worker.
    assert set(bodies.values()) == {2}
    result.stdout.fnmatch_lines([f"llm requests: {len(queued_at_server)} (cache off*); http requests {len(queued_at_server)}, retries 0,*"])
    assert max(queued_at_server) < 0.25  # none waited at the server
    results = read_artifact_json(pytester.path / "run.json")["results"]
    assert len(results) == 16 and all(r["not_measured"] is None for r in results)
    assert {r["adapter"] for r in results} == {"bm25", "kw"}
    assert sum(r["queued_s"] for r in results) > 0  # they waited here instead, outside their durations


def answering_lines(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, latency_s: float) -> list[str]:
    """The answering lines of two questions at ``--lens-concurrency=1`` against a server taking ``latency_s`` a request."""
    fast_progress_lines(monkeypatch)
    with OpenAITestServer(slots=1, latency_s=latency_s) as server:
        result = pytester.runpytest(
            "--lens-adapter=bm25",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={server.base_url}",
            "--lens-llm-cache-mode=off",
            "--lens-concurrency=1",
            "-k",
            "q01 or q02",
            *QUIET,
        )
    result.assert_outcomes(passed=2)
    return [line for line in result.outlines if "answering" in line]


def test_one_question_at_a_time_says_how_far_it_is_while_the_model_works(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --lens-concurrency=1 answers on pytest's own thread, which waits in the model request: the request goes to a
    # helper thread and this one prints a line every interval meanwhile (0.5 s here instead of a log's 10 s).
    lines = answering_lines(pytester, monkeypatch, latency_s=1.5)
    assert lines, "no answering line"
    first, last = lines[0], lines[-1]
    assert first.startswith(
        "lens: bm25 | cold_chain_demo: answering 0/2 questions done, 1 in flight, 1 queued, model: 1 requests being served"
    )
    assert "estimate after the first answers" in first
    assert last.startswith("lens: bm25 | cold_chain_demo: answering 2/2 questions done, 0 in flight, 0 queued")
    assert last.endswith("done")


def test_one_question_at_a_time_prints_nothing_when_the_model_is_quick(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert answering_lines(pytester, monkeypatch, latency_s=0.0) == []
