"""Issue 32: an endpoint's gzip bomb fails the one question it answered, with bounded memory; the run goes on.

A real pytest run (in its own process, so its peak memory is its own) with the LLM agent against the project's
OpenAI-compatible server on 127.0.0.1. The agent's requests for one question get a 0.5 MB gzip body inflating to
512 MiB; every other request is answered normally.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lens_fixtures.openai_server import Fault, OpenAITestServer
from pytest_lens.records.rows import read_artifact_json
from tests.support import COLD_CHAIN_DEMO

# VmHWM, the peak resident size of this process's memory since its exec: ru_maxrss would carry over the peak of the
# test process it was forked from.
PEAK_HOOK = """
from pathlib import Path


def pytest_unconfigure(config):
    status = Path("/proc/self/status").read_text()
    peak = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    Path("peak_rss_kb").write_text(peak)
"""


def test_a_gzip_bomb_fails_its_question_only_and_memory_stays_bounded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LENS_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makeconftest(PEAK_HOOK)
    bomb = Fault("gzip_bomb", permanent=True, only="agent", contains="defrost cycle duration", inflated_bytes=2**29)
    with OpenAITestServer(faults=[bomb]) as server:
        result = pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            f"--lens-dataset={COLD_CHAIN_DEMO}",
            "-k",
            "q01 or q02",
            "--lens-adapter=bm25",
            "--lens-agent=llm",
            "--lens-agent-model=scripted",
            f"--lens-llm-base-url={server.base_url}",
            "--lens-json=out.json",
            timeout=300,
        )
        bombed = [r for r in server.requests if r.fault == "gzip_bomb"]
        base = server.base_url
    assert len(bombed) == 1  # refused at once, not retried
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1 and outcomes.get("passed") == 1, outcomes
    results = read_artifact_json(pytester.path / "out.json")["results"]
    failed = next(result for result in results if "q01" in result["question_id"])
    answered = next(result for result in results if "q02" in result["question_id"])
    said = json.dumps(failed)
    assert "is larger than 16 MiB" in said and "MAX_RESPONSE_BYTES in pytest_lens.llm.bounded" in said
    assert f"POST {base}/chat/completions" in said
    assert "not measured" not in json.dumps(answered) and answered["answer"]  # the other question kept its result
    # Before the cap the process inflated the whole 512 MiB body and held it as bytes, text and JSON (about three
    # times over); now it reads 16 MiB at most.
    peak_mb = int((pytester.path / "peak_rss_kb").read_text()) / 1024
    assert peak_mb < 400, peak_mb
