"""``--lens-repeat``: every question answered M times, each its own test; statistics on per-question means."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from lens_fixtures.openai_server import LensPolicy, OpenAITestServer, StochasticAgentPolicy
from pytest_lens.llm.repetition import repetition_seed
from pytest_lens.records.rows import read_artifact_json
from pytest_lens.scoring.composite import DEFAULT_GATES, DEFAULT_WEIGHTS, composite
from tests.support import COLD_CHAIN_DEMO, assert_answered

QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", f"--lens-dataset={COLD_CHAIN_DEMO}")


@pytest.fixture
def sampling_server() -> Iterator[OpenAITestServer]:
    """A model that retrieves and cites 2 of its search hits drawn by the request's seed."""
    with OpenAITestServer(LensPolicy(agent=StochasticAgentPolicy(top_k=2))) as running:
        yield running


def mean_metrics(records: list[dict[str, Any]]) -> dict[str, float]:
    """Each metric's mean over the records that have it."""
    names = {name for r in records for name in r["metrics"]}
    return {
        name: sum(r["metrics"][name] for r in records if name in r["metrics"]) / sum(name in r["metrics"] for r in records)
        for name in names
    }


def llm_run(server: OpenAITestServer, *extra: str) -> list[str]:
    return [
        "--lens-adapter=bm25",
        "--lens-agent=llm",
        "--lens-agent-model=sampler",
        "--lens-judge=llm",
        f"--lens-llm-base-url={server.base_url}",
        "--lens-json=out.json",
        "-v",
        *QUIET,
        *extra,
    ]


def test_three_repetitions_with_a_stochastic_model(pytester: pytest.Pytester, sampling_server: OpenAITestServer) -> None:
    result = pytester.runpytest(*llm_run(sampling_server, "--lens-repeat=3"))
    assert_answered(result, 24)
    result.stdout.fnmatch_lines(
        [
            "*bm25-cold_chain_demo-cp*-r1? PASSED*",
            "*bm25-cold_chain_demo-cp*-r2? PASSED*",
            "*bm25-cold_chain_demo-cp*-r3? PASSED*",
            "repetitions: each question answered up to 3 times (distinct seeds); scores, CIs and paired tests use per-question means*",
            "adapter*questions*answers*within-question var*between-question var*share from repetition",
            "bm25 * 8 * 24 *%",
        ]
    )
    artifact = read_artifact_json(pytester.path / "out.json")
    by_question: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in artifact["results"]:
        by_question[record["question_id"]].append(record)
    assert len(by_question) == 8
    assert all(sorted(r["repetition"] for r in records) == [0, 1, 2] for records in by_question.values())
    # The model sampled differently per repetition: some questions got different answers and scores.
    assert sum(len({r["answer"] for r in records}) > 1 for records in by_question.values()) >= 4

    def seeds(kind: str) -> set[int]:
        return {r.body["seed"] for r in sampling_server.requests if r.kind == kind}

    assert seeds("agent") == seeds("judge") == {42, repetition_seed(42, 1), repetition_seed(42, 2)}  # judged per answer
    assert seeds("baseline") == {42}  # the naive baseline answers once per question

    # The summary and its CI are of per-question means, computed here from the artifact's per-answer metrics.
    summary = artifact["summary"]["bm25"]
    assert summary["n_questions"] == 8 and summary["repetitions"] == 3
    per_question = {qid: (records[0]["category"], mean_metrics(records)) for qid, records in by_question.items()}
    run_means = mean_metrics([{"metrics": means} for _, means in per_question.values()])
    quality = {
        kind: [m["answer_quality"] for c, m in per_question.values() if c == kind and "answer_quality" in m]
        for kind in ("synthesis", "control")
    }
    if quality["synthesis"] and quality["control"]:
        run_means["longitudinal_advantage"] = sum(quality["synthesis"]) / len(quality["synthesis"]) - sum(quality["control"]) / len(
            quality["control"]
        )
    assert summary["metrics"] == pytest.approx(run_means, abs=1e-6)
    assert summary["composite"] == pytest.approx(composite(run_means, DEFAULT_WEIGHTS, DEFAULT_GATES).value, abs=1e-6)
    estimate = artifact["statistics"]["adapters"]["bm25"]["composite"]
    assert estimate["n"] == 8 and estimate["value"] == pytest.approx(summary["composite"], abs=1e-6)

    (variance,) = artifact["repetitions"]
    assert variance["questions"] == 8 and variance["answers"] == 24 and variance["repetitions"] == 3
    assert 0 < variance["composite"]["share"] < 1

    # Each repetition recorded its own requests: a replay reproduces all 24 answers without the server.
    sampling_server.reset()
    replay = pytester.runpytest(*llm_run(sampling_server, "--lens-repeat=3", "--lens-llm-cache-mode=replay"))
    assert_answered(replay, 24)
    assert sampling_server.count() == 0
    replayed = read_artifact_json(pytester.path / "out.json")
    assert [(r["question_id"], r["repetition"], r["answer"]) for r in replayed["results"]] == [
        (r["question_id"], r["repetition"], r["answer"]) for r in artifact["results"]
    ]


def test_one_repetition_can_be_selected_and_rerun_alone(pytester: pytest.Pytester, sampling_server: OpenAITestServer) -> None:
    full = pytester.runpytest(*llm_run(sampling_server, "--lens-repeat=3"))
    assert_answered(full, 24)
    answers = {(r["question_id"], r["repetition"]): r["answer"] for r in read_artifact_json(pytester.path / "out.json")["results"]}
    alone = pytester.runpytest(*llm_run(sampling_server, "--lens-repeat=3", "-k", "r2", "--lens-llm-cache-mode=replay"))
    assert_answered(alone, 8, deselected=16)
    for record in read_artifact_json(pytester.path / "out.json")["results"]:
        assert record["repetition"] == 1 and record["answer"] == answers[(record["question_id"], 1)]


def test_a_deterministic_agent_repeats_itself_and_the_report_says_so(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-adapter=null", "--lens-repeat=2", "--lens-json=out.json", *QUIET)
    assert_answered(result, 32)
    result.stdout.fnmatch_lines(["bm25 * 8 * 16 * 0.0000 * - (no variance)"])
    artifact = read_artifact_json(pytester.path / "out.json")
    (pair,) = artifact["statistics"]["pairs"]
    assert pair["composite"]["n_pairs"] == 8  # questions, not answers
    parallel = pytester.runpytest(
        "--lens-adapter=bm25", "--lens-adapter=null", "--lens-repeat=2", "--lens-json=par.json", "-n", "2", *QUIET
    )
    assert_answered(parallel, 32)
    assert read_artifact_json(pytester.path / "par.json")["statistics"] == artifact["statistics"]
    single = pytester.runpytest("--lens-adapter=bm25", "--lens-adapter=null", "--lens-json=single.json", *QUIET)
    assert_answered(single, 16)
    once = read_artifact_json(pytester.path / "single.json")
    assert artifact["statistics"]["adapters"] == once["statistics"]["adapters"]  # same information, same CIs


@pytest.mark.parametrize("value", ["0", "-2", "three", "10000000"])
def test_a_bad_repeat_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", f"--lens-repeat={value}", *QUIET) if value != "three" else None
    if result is None:
        pytester.makeini("[pytest]\nlens_repeat = three\n")
        result = pytester.runpytest("--lens-adapter=bm25", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    where = "--lens-repeat (ini lens_repeat in *)" if value == "three" else "--lens-repeat"
    result.stderr.fnmatch_lines([f"*{where}: must be a whole number of answers per question, from 1 to 1,000; got '{value}'*"])


def test_meme_cannot_be_repeated(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-suite=meme", "--lens-repeat=2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--lens-repeat=2: MEME's trivial-pass filter pairs one answer*"])
